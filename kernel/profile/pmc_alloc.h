// PMC objects: hwpmc's allocation model over the HAL's profile sources.
//
// A PMC samples or counts one KPROFILE_SOURCE, system-wide or for attached
// processes. Sampling PMCs write into the sample log (sample_log.h); counting
// PMCs accumulate a value read with NtPmcRead. The source itself runs through
// the same reference count as NT profile objects (KeReferenceProfileSource),
// so `profile run` and `profile record` can sample at once.
//
// How the layers below reach it (each a cheap test when no PMC runs):
//   pmc_sample_hook      every sample, from KeProfileInterruptWithSource
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
void pmc_sample_interrupt(KPROFILE_SOURCE source, const struct intr_frame *f);
void pmc_switch_out_slow(struct thread *t);

static inline void pmc_sample_hook(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    if (__atomic_load_n(&pmc_running_set, __ATOMIC_RELAXED))
        pmc_sample_interrupt(source, f);
}

void pmc_alloc_init(void); // at boot: watch processes
