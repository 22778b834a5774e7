// The sampling kinds of the PMC object (hwpmc/kind_sampling.c): what the
// sample fan-out (ke/sample.c) asks of them in the interrupt.
#pragma once
#include "lib/abi/pmclog.h"

#include "arch/x86/trapframe.h"

#include "pmc/hwpmc/pmc.h"

// A tick counts for s's PMC when its IP is in one of the PMC's levels (a
// hardware counter counts only those, but a PMI may arrive after the CPU
// changed levels) and it is the period-th such tick on this CPU.
static inline bool pmc_sampler_take(struct pmc_sampler *s, bool user)
{
    if (!s->in_level[user])
        return false;
    uint64_t ticks = s->phase + 1;
    if (ticks < s->period) {
        s->phase = ticks;
        return false;
    }
    s->phase = 0;
    (*s->samples)++; // one thread per process: one CPU at a time
    s->slice++;
    return true;
}

// The samplers of the PMCs sampling source on cpu while pr runs there, made
// ready and chained: the first, or NULL when none. In the interrupt.
struct pmc_sampler *pmc_samplers_make(KPROFILE_SOURCE source, const struct process *pr,
                                      unsigned cpu);
