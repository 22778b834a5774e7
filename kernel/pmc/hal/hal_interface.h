// The private profile interface (HalpProfileInterface in the Windows HAL): one
// ops structure per interface, struct halp_profile_interface.
//
// The chosen interface is reached through halp_profile_interface by the HAL
// face (hal/hal_profile.c: sources started and stopped), the PMI handler
// (hal/pmi.c), the counts (hal/counts.c: counting loads and saves), the
// counter table and rows (hal/counters.c, hal/rows.c: what each counter can
// do) and the bring-up and shut-down (hal/pmu.c); the interfaces are
// hal/emon.c (Intel architectural perfmon), hal/amd64.c and hal/nopmu.c.
// ProfileTime is not a counter and never reaches these ops
// (hal/profile_time.c handles it).
//
// Every op except Setup runs on the current CPU with interrupts off: the HAL
// calls them on every CPU through smp_call_all, the counts from the context
// switch or a cross-CPU call, the PMI from its handler.
#pragma once
#include "lib/abi/profile.h"
#include "lib/abi/status.h"
#include "lib/types.h"

#include "pmc/hal/counters.h"
#include "pmc/hal/hal.h"
#include "pmc/hal/profile_source.h"
#include "pmc/hal/trace.h"

struct pmc_caps;

// CheckOverflowStatus's answer: the counters that overflowed and their sources.
struct overflow_status {
    uint32_t Number;                          // overflowed counters found
    uint64_t Mask;                            // status bits to acknowledge (0: none kept)
    uint8_t Counter[PMC_MAX_COUNTERS];        // which counters, lowest first
    KPROFILE_SOURCE Source[PMC_MAX_COUNTERS]; // what each counted
};

// QueryInformation's answer for one source (the HAL validates buffers once).
struct pmc_source_query {
    bool supported;
    const char *reason;         // why not, when !supported
    enum pmc_counter_kind kind; // counter the source would use on an idle CPU
    uint64_t max_interval;      // largest interval that counter can load
};

struct halp_profile_interface {
    const char *name; // "emon", "amd64" or "none", as the boot line prints it

    // Boot CPU, once, before the others: describe the counters (pmc_counter_add).
    void (*Setup)(const struct pmc_caps *caps);

    // The HAL's six private operations (HalpProfileInterface in the Windows HAL).
    NTSTATUS (*InitializeProfiling)(void); // every CPU: registers to a known idle state
    // Sample source on this CPU, its counter counting in levels (enum pmc_levels).
    NTSTATUS (*EnableMonitoring)(KPROFILE_SOURCE source, unsigned levels);
    void (*DisableMonitoring)(KPROFILE_SOURCE source);
    NTSTATUS (*SetInterval)(KPROFILE_SOURCE source, uint64_t *interval); // in: wanted, out: actual
    void (*CheckOverflowStatus)(struct overflow_status *status);
    void (*QueryInformation)(KPROFILE_SOURCE source, struct pmc_source_query *q);

    // Steps of the PMI handler (hal/pmi.c). NULL in the no-PMU interface.
    // Stop all counting (global ctrl 0); false when the PMU has no such
    // control (Intel version 1, AMD before PerfMonV2) and counting goes on.
    bool (*FreezeCounters)(void);
    // Re-arm counter i to overflow after `period` more events (its own period,
    // or a multiple of it when the throttle stretches it); *lost gets whole
    // periods that went by unseen. Version-1 Intel leaves the counter disabled
    // until ThawCounters, which runs after the LVTPC is unmasked.
    void (*ReloadCounter)(unsigned i, uint64_t period, uint64_t *lost);
    void (*StopCounter)(unsigned i);            // stuck status: stop, keep ownership
    void (*AcknowledgeOverflow)(uint64_t mask); // write-1-to-clear the status bits
    void (*ThawCounters)(void);                 // restart the owned, unstopped counters

    // Counting (pmc/hal/counts.c), on rows no sampling uses. NULL in the no-PMU
    // interface, whose CountersFor is never asked (it supports no source).
    uint32_t (*CountersFor)(KPROFILE_SOURCE source); // bit i: counter i can count source
    // Count source on counter i from value, in levels (enum pmc_levels), with
    // no interrupt; stop it. pmc_counters_loaded already has bit i set (start) or
    // clear (stop).
    void (*StartCounting)(unsigned i, KPROFILE_SOURCE source, unsigned levels, uint64_t value);
    void (*StopCounting)(unsigned i);
};

extern const struct halp_profile_interface emon_profile_interface;
extern const struct halp_profile_interface amd64_profile_interface;
extern const struct halp_profile_interface nopmu_profile_interface;

// The interface in use; nopmu until pmc_init chooses (defined in hal/nopmu.c).
extern const struct halp_profile_interface *halp_profile_interface;

// DisableMonitoring for the interfaces with counters (hal/counter_disable.c): stop
// source's counter on this CPU, free it, write the global enable without it,
// and acknowledge an overflow that raced with the stop.
void pmc_counter_disable(const struct halp_profile_interface *pi, KPROFILE_SOURCE source);

// hal/hal_profile.c: stop every started source, whatever its count of users
// (pmc_shutdown); forget started sources, users and the callback (pmc_init,
// pmc_shutdown).
void hal_profile_stop_all(void);
void hal_profile_reset(void);
