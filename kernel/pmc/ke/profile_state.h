// The profile layer's state of each process, in the area core keeps with
// every process for the layer above (core/process.h: process_area).
#pragma once
#include "lib/abi/profile.h"

#include "core/process.h"

struct profile_set;
struct pmc_target;

struct profile_process {
    struct profile_set
        *sets[ProfileSourceCount];  // started profiles on it, by source (ke/profile.c)
    struct pmc_target *pmc_targets; // PMCs attached to it (hwpmc/pmc.c, pmc_lock)
    uint32_t pmc_switch_work;       // of those, ones with work at its switches
    bool pmc_exited;                // its exit released its targets: no new one (pmc_lock)
    uint32_t profiles_charged;      // started profiles charged to it (ke/profile.c, atomic)
};

static inline struct profile_process *profile_of(const struct process *p)
{
    return process_area(p);
}
