// The sampling kinds of the PMC object (hwpmc/kind_sampling.c): what the sample
// fan-out (ke/sample.c) asks of them in the interrupt.
#pragma once
#include "arch/x86/trapframe.h"

#include "pmc/hwpmc/log.h"
#include "pmc/hwpmc/pmc.h"

// This CPU's PMC plan for one source while one process runs here: the
// running PMCs that sample it, each with what its samples update and the
// fields of its log records. Made at the first sample after a change (any
// start, stop, attach, detach or exit publishes a change, which drops the
// plans: ke/sample.h) and used by every sample until the next one.
#define PMC_PLAN_MAX 2 // PMCs a plan holds; more go the general way
struct pmc_plan {
    unsigned n;
    struct pmc_plan_entry {
        struct sample_origin origin; // what the PMC's records say
        bool in_level[2];        // its levels: [0] kernel-mode samples count, [1] user-mode ones
        uint64_t period;         // ticks of the source per sample
        uint64_t *phase, *slice; // the PMC's counters for this CPU
        uint64_t *samples;       // the target's total (a per-CPU sink at system scope)
    } e[PMC_PLAN_MAX];
};

// Fill pp with the PMCs sampling source on cpu while pr runs there, in the
// interrupt. False when more than PMC_PLAN_MAX do: every sample then goes to
// pmc_sample_interrupt.
bool pmc_plan_make(struct pmc_plan *pp, KPROFILE_SOURCE source, const struct process *pr,
                   unsigned cpu);
void pmc_plan_sample(const struct pmc_plan *pp, const struct intr_frame *f);
// The general way: every running sampling PMC looked at (no plan).
void pmc_sample_interrupt(KPROFILE_SOURCE source, const struct intr_frame *f);
