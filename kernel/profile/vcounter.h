// Counting PMCs: hwpmc's process-scope and system-scope counting modes over
// software events (core/swevent.h) and hardware counters (pmc/count.h), and
// their PMC_F_LOG_PROCCSW / PMC_F_LOG_PROCEXIT records (profile/cswitch_log.h,
// which also records counter values at every context switch).
//
// A PMC is a kernel object behind a handle (OBJ_PMC). The process-scope kind
// keeps one target per attached process: the process's running total at the
// start (a baseline) and what it has counted so far; a target's total moves to
// the PMC when the process exits, so totals survive exit.
#pragma once
#include "lib/abi.h"
#include "arch/x86/percpu.h"
#include "core/sched.h"

struct process;
struct pmc;

// Non-zero while anything must run at context switches: started PMCs with
// PMC_F_LOG_PROCCSW, hardware process-scope counting, a counting-log session
// (cswitch_log.c adds itself). Read without a lock by switch_to, so the common path is one load.
extern volatile uint32_t vcounter_switch_hooks;
void vcounter_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t now);

void vcounter_init(void); // at boot, from pmc_alloc_init: the scheduler-tick rotation

// a is checked by pmc_allocate (profile/pmc_alloc.h); runs_profile_time: the
// PMC counts ProfileTime's ticks and runs the source while started.
NTSTATUS vcounter_allocate(const struct pmc_alloc *a, struct process *owner, bool runs_profile_time,
                           struct pmc **out);
NTSTATUS vcounter_attach(struct pmc *pmc, struct process *target);
NTSTATUS vcounter_detach(struct pmc *pmc, struct process *target);
NTSTATUS vcounter_start(struct pmc *pmc);
NTSTATUS vcounter_stop(struct pmc *pmc);
NTSTATUS vcounter_read(struct pmc *pmc, struct pmc_value *out);
NTSTATUS vcounter_write(struct pmc *pmc, uint64_t value);
NTSTATUS vcounter_rdpmc_index(struct pmc *pmc, struct process *caller, uint32_t *index);
struct object *vcounter_object(struct pmc *pmc);
struct pmc *vcounter_from_object(struct object *o);

// Process life: a child of a PMC_F_DESCENDANTS target becomes a target
// (spawn); a target's total is folded into its PMCs and logged (exit, before
// the last switch away); what is left is unlinked (destroy).
void vcounter_process_spawned(struct process *parent, struct process *child);
void vcounter_process_exit(struct process *p);
void vcounter_process_gone(struct process *p);
