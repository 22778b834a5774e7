// PMC objects: hwpmc's allocation model over the HAL's profile sources.
//
// A PMC samples or counts one KPROFILE_SOURCE, system-wide or for attached
// processes. Sampling PMCs write into the sample log (sample_log.h); counting
// PMCs accumulate a value read with NtPmcRead. The source itself runs through
// the same reference count as NT profile objects (KeReferenceProfileSource),
// so `profile run` and `profile record` can sample at once.
//
// How the layers below reach it (each a cheap test when no PMC runs):
//   pmc_plan_sample      every sample, from KeProfileInterruptWithSource
//   pmc_switch_out_slow  sched_switch_out_hook while a PMC logs context
//                        switches (PMC_F_LOG_PROCCSW)
//   a process watcher    a new process (DESCENDANTS, PMCLOG_MAP) and an
//                        exiting one (PMCLOG_EXIT, detach, the log's owner)
#pragma once
#include "arch/x86/trapframe.h"
#include "lib/abi.h"
#include "core/object.h"
#include "lib/param.h"
#include "lib/types.h"
#include "profile/sample_log.h"

struct process;
struct thread;

#define PMC_MAX_TARGETS PMC_MAX_TARGETS_USER // processes attached to one PMC, descendants too
#define PMC_MAX_RUNNING PMC_MAX_RUNNING_USER // PMCs running at once, machine-wide

struct kpmc {
    struct object obj;
    uint32_t id;
    KPROFILE_SOURCE source;
    uint32_t mode, flags;
    uint64_t cpus;         // CPUs whose samples count
    uint64_t count;        // sampling interval asked for (0: every tick of the source)
    uint64_t period;       // ticks of the source per sample, fixed at start
    struct process *owner; // the allocating process (its handle keeps us alive)
    bool running;
    unsigned ntargets; // slots in use (a detached slot is NULL)
    struct pmc_target {
        struct process *p; // a reference
        uint64_t samples;
    } targets[PMC_MAX_TARGETS];
    uint64_t phase[MAX_CPUS]; // ticks since this CPU's last sample
    uint64_t slice[MAX_CPUS]; // samples on this CPU since its last switch
    struct kpmc *all_next;    // every PMC (pmc_lock)
};

// A sampling PMC (struct kpmc, OBJ_PMC) or, for the counting modes, a
// counting one (profile/vcounter.h, OBJ_COUNTING_PMC): one allocation call,
// one set of rules and statuses for both.
NTSTATUS pmc_allocate(struct process *owner, const struct pmc_alloc *a, struct object **out);
NTSTATUS pmc_attach(struct kpmc *m, struct process *caller, struct process *target);
NTSTATUS pmc_detach(struct kpmc *m, struct process *target);
NTSTATUS pmc_set_count(struct kpmc *m, uint64_t count);
NTSTATUS pmc_start(struct kpmc *m, struct process *caller);
NTSTATUS pmc_stop(struct kpmc *m);
bool pmc_sampling_running(void);

extern void *pmc_running_set;
void pmc_switch_out_slow(struct thread *t);

// The sample path. Ke's per-CPU sample plan (ke_profile.c) holds, beside its
// profiles, this CPU's PMC plan for the source: the running PMCs that sample
// the process running here, each with what its samples update and the fields
// of its log records. Both are made at the first sample after a change (any
// start, stop, attach, detach or exit bumps the profile generation through
// ke_profile_replan) and serve every sample until the next one.
#define PMC_PLAN_MAX 2 // PMCs a plan holds; more go the general way
struct pmc_plan {
    unsigned n;
    struct pmc_plan_entry {
        struct sample_origin origin; // what the PMC's records say
        bool kernel;                 // PMC_F_KERNEL: ring-0 samples count too
        uint64_t period;             // ticks of the source per sample
        uint64_t *phase, *slice;     // the PMC's counters for this CPU
        uint64_t *samples;           // the target's total (a per-CPU sink at system scope)
    } e[PMC_PLAN_MAX];
};

// The plan of cpu for source while process pr runs there, in the interrupt:
// *out is NULL when no PMC samples there. False when more than PMC_PLAN_MAX
// do: no plan then, and every sample goes to pmc_sample_interrupt.
bool pmc_plan_make(KPROFILE_SOURCE source, const struct process *pr, unsigned cpu,
                   const struct pmc_plan **out);
void pmc_plan_sample(const struct pmc_plan *pp, const struct intr_frame *f);
// The general way: every running PMC looked at (no plan).
void pmc_sample_interrupt(KPROFILE_SOURCE source, const struct intr_frame *f);

void pmc_alloc_init(void); // at boot: watch processes
