// The PMC object: hwpmc's one PMC, whose mode decides what it does.
//
// A PMC samples or counts one event for the whole system (system scope) or
// for the processes attached to it (process scope): hwpmc(4)'s four modes,
// PMC_MODE_SS/SC/TS/TC. Every PMC is this one struct, with one ID space, one
// lock, one attachment type and one release path; what differs by kind sits
// behind its ops table (struct pmc_ops), as hwpmc keeps a table of operations
// per class of counters and Linux one `struct pmu` per kind of event:
//
//   time sampling       ProfileTime's ticks sampled (hwpmc/kind_sampling.c)
//   hardware sampling   a PMU event's overflows sampled (hwpmc/kind_sampling.c)
//   hardware counting   a PMU event counted on reserved counter rows (hwpmc/kind_counting.c)
//   software counting   the kernel's own counts (core/swevent.h), ProfileTime's
//                       ticks among them (hwpmc/kind_counting.c)
//
// The system-call layer (sys/nt_pmc.c) calls the pmc_* functions below and
// never asks which kind it holds; an operation a kind does not have answers
// with its status (STATUS_PMC_NOT_COUNTING, STATUS_PMC_NOT_SAMPLING).
//
// Locking: pmc_lock (a spinlock taken with interrupts off) guards the list of
// PMCs, every PMC's targets and the processes' attachment lists; the switch
// path takes it only when a process has work there. pmc_mutex serializes
// start and stop, which call other CPUs (smp_call_many) and so never run
// under pmc_lock.
//
// Attachments live until a grace period has passed: a detached target's slot
// is cleared (the sampling interrupt reads the slots without a lock and
// compares pointers), the sample plans are dropped, and the target is freed
// only after every CPU has passed a quiescent state (core/grace.h), so no
// plan or interrupt still points into it. The targets of many detaches and
// closes wait for their grace periods together.
#pragma once
#include "lib/abi/pmc.h"
#include "lib/abi/status.h"
#include "lib/param.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

#include "core/grace.h"
#include "core/object.h"
#include "core/spinlock.h"

#include "pmc/hal/counts.h"

#include "pmc/hwpmc/log.h"

struct log_cpu;
struct pmc_log;
struct process;
struct thread;

#define PMC_MAX_TARGETS PMC_MAX_TARGETS_USER // processes attached to one PMC, descendants too
#define PMC_MAX_RUNNING PMC_MAX_RUNNING_USER // sampling PMCs running at once, machine-wide
#define PMC_MAX_RUNNING_UNPRIVILEGED \
    PMC_MAX_RUNNING_UNPRIVILEGED_USER // of them, unprivileged owners'

// One attachment of a process-scope PMC to a process.
struct pmc_target {
    struct pmc *pmc;
    struct process *proc;          // a reference, dropped when the target is freed
    struct pmc_target *proc_next;  // the process's attachments (pmc_lock)
    struct pmc_target *leave_next; // the PMC's targets leaving (pmc_lock)
    bool switch_work;              // counted in the process's pmc_switch_work
    uint64_t samples;              // sampling: samples of the process
    uint64_t base;                 // software counting: the process's total when this count began
    uint64_t counted;              // counting: what earlier start/stop periods counted
    uint64_t csw_base;             // PMC_F_LOG_PROCCSW: the total at the last switch-in
    uint64_t off_since;            // PMC_F_LOG_OFFCPU: its last switch-out (0: on a CPU)
    uint32_t off_seq;              // PMC_F_LOG_OFFCPU: its switch-outs
    uint16_t off_reason;           // PMC_F_LOG_OFFCPU: why it left (enum thread_wait)
    struct pmc_count hw;           // hardware counting: the process's virtual counter
    struct grace_item grace;       // its free, a grace period after it was released
};

struct pmc {
    struct object obj;
    uint32_t id;
    const struct pmc_ops *ops; // the kind
    struct pmc_alloc a;        // as allocated: source, mode, flags, cpu, count
    uint32_t owner_pid;
    bool privileged; // its owner holds the privilege (the running set's reserve)
    uint64_t cpus;   // CPUs it samples or counts
    bool running;    // started
    // Its owner's log while it runs and writes one (pmc_log_use: every
    // sampling PMC, a counting one with PMC_F_LOG_PROC*), else NULL: where
    // its records go. Set before it runs, cleared under pmc_lock after.
    struct pmc_log *log;
    unsigned slots; // target slots ever used (a detached one is NULL)
    unsigned ntargets;
    struct pmc_target *targets[PMC_MAX_TARGETS];
    struct pmc *all_next; // every PMC (pmc_lock)
    // Targets unlinked and not yet released: what they counted is not in the
    // PMC's totals yet, so a read still adds them (pmc_lock).
    struct pmc_target *leaving;
    union {
        struct {                              // the sampling kinds
            uint64_t period;                  // ticks of the source per sample, fixed at start
            struct pmc_sampler cpu[MAX_CPUS]; // each CPU's (hwpmc/kind_sampling.h)
        } s;
        struct {                    // the counting kinds
            bool user_read;         // its owner reads it with rdpmc (NtPmcGetMsr)
            bool runs_profile_time; // counts ProfileTime's ticks: the source runs while started
            unsigned row;           // hardware: the reserved counter row
            uint64_t value;         // counted by targets that are gone, plus a written value
            uint64_t enabled_ns;    // before the current start (hardware: of targets gone)
            uint64_t running_ns;    // hardware: of targets gone
            uint64_t started_ns;    // clock at the current start
            uint64_t cpu_base[MAX_CPUS]; // system scope, software: each CPU's total at the start
            struct pmc_count *cpu_hw;    // system scope, hardware: one count per CPU
        } c;
    };
};

// What a kind does. The object code (hwpmc/pmc.c) has checked the handle,
// the mode, the flags, the CPU and the caller's rights before any is called.
// set_count, read, write and rdpmc_index are NULL in a kind that has no such
// operation (set_count: the counting kinds; the others: the sampling kinds).
struct pmc_ops {
    const char *name; // "time sampling", ...
    // Whether a request (its mode and source) is of this kind.
    bool (*claims)(const struct pmc_alloc *a);
    // The kind's own checks and resources for a new PMC (m->a is set).
    NTSTATUS (*allocate)(struct pmc *m, const struct process *owner);
    void (*release)(struct pmc *m); // stopped, no target left
    NTSTATUS (*start)(struct pmc *m, struct process *caller);
    NTSTATUS (*stop)(struct pmc *m);
    NTSTATUS (*set_count)(struct pmc *m, uint64_t count);
    NTSTATUS (*read)(struct pmc *m, struct pmc_value *out);
    NTSTATUS (*write)(struct pmc *m, uint64_t value);
    NTSTATUS (*rdpmc_index)(struct pmc *m, struct process *caller, uint32_t *index);
    // Attachments (pmc_lock held, interrupts off). attach: a new target t
    // (refused with a status, or made ready to count: begun at once when m
    // runs). detach: t has left m (its hardware count is unloaded on every
    // CPU); what it counted stays in m's totals. exiting: its process is
    // ending (exit_status set), for PMC_F_LOG_PROCEXIT.
    NTSTATUS (*attach)(struct pmc_target *t);
    // After pmc_attach has attached a process (and its descendants) to m,
    // interrupts on and no lock held; NULL where nothing is to be done.
    void (*attached)(struct pmc *m);
    void (*detach)(struct pmc_target *t, bool exiting);
    // Whether t's process has work at its switches while m runs.
    bool (*wants_switch)(const struct pmc *m);
    // At a switch on this CPU, interrupts off, pmc_lock held: t's process leaves or arrives.
    void (*switch_out)(struct pmc_target *t, uint64_t now);
    void (*switch_in)(struct pmc_target *t, uint64_t now);
};

// A kind makes itself known at boot (pmc_sampling_init, pmc_counting_init);
// a request goes to the kind that claims it.
#define PMC_KINDS 4
void pmc_kind_register(const struct pmc_ops *kind);
extern const struct pmc_ops pmc_time_sampling, pmc_hw_sampling; // hwpmc/kind_sampling.c
extern const struct pmc_ops pmc_hw_counting, pmc_sw_counting;   // hwpmc/kind_counting.c

// The system calls' operations (NtPmc*): each answers with an NTSTATUS.
NTSTATUS pmc_allocate(struct process *owner, const struct pmc_alloc *a, struct object **out);
struct pmc *pmc_from_object(struct object *o); // o is an OBJ_PMC
NTSTATUS pmc_attach(struct pmc *m, struct process *caller, struct process *target);
NTSTATUS pmc_detach(struct pmc *m, struct process *caller, struct process *target);
NTSTATUS pmc_start(struct pmc *m, struct process *caller);
NTSTATUS pmc_stop(struct pmc *m);
NTSTATUS pmc_set_count(struct pmc *m, uint64_t count);
NTSTATUS pmc_read(struct pmc *m, struct pmc_value *out);
NTSTATUS pmc_write(struct pmc *m, uint64_t value);
NTSTATUS pmc_rdpmc_index(struct pmc *m, struct process *caller, uint32_t *index);

// Every PMC, newest first, chained by all_next (pmc_lock held).
struct pmc *pmc_all_locked(void);

// For the kinds.
bool pmc_process_scope(const struct pmc *m);
// The target of m for process p, or NULL; from any context (no lock: the
// slots are read as the sampling interrupt reads them).
struct pmc_target *pmc_target_of(const struct pmc *m, const struct process *p);
// Attach the caller itself (pmc_lock not held): hwpmc's start of an
// unattached process-scope PMC by its owner.
NTSTATUS pmc_attach_self(struct pmc *m, struct process *me);
// A start's use of its owner's log (m->log, taken with pmc_log_use) given
// back: m is stopped, out of the running set, with no switch work (no plan,
// switch or exit writes its records now; pmc_lock not held). None: nothing.
void pmc_give_log(struct pmc *m);
// Turn the switch work of m's targets on or off (pmc_lock held).
void pmc_switch_work(struct pmc *m, bool on);
// Where the scheduler called the switch watcher on each CPU, as an
// interrupted kernel context for the chain of an off-CPU record: the switch
// path's return address and frame pointer, set before the kinds' switch_out.
extern struct intr_frame pmc_switch_frame[MAX_CPUS];
extern struct spinlock pmc_lock;
bool pmc_mode_is_counting(const struct pmc_alloc *a); // PMC_MODE_SC or PMC_MODE_TC
// The levels a request counts or samples in (enum pmc_levels, pmc/hal/profile_source.h):
// its PMC_F_USER and PMC_F_KERNEL, or with neither the mode's default
// (counting: both; sampling: user mode).
unsigned pmc_levels(const struct pmc_alloc *a);

void pmc_object_init(void);   // at boot: watch processes and switches
void pmc_sampling_init(void); // then the kinds
void pmc_counting_init(void); // (and the scheduler-tick rotation of multiplexed counts)
