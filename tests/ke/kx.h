// The profile-layer explorer (make ke-explore): the real kernel/pmc/ke
// (sample.c, profile.c, profile_index.c, profile_tree.c), core/grace.c and
// core/object.c, and core/switch_publish.h's three steps called as
// core/sched.c's switch_to calls them, built for the host under ASan and
// UBSan and driven by seeded sequences of steps on 2 to 4 simulated CPUs.
//
// What it models. Each simulated CPU has a stack of contexts, each a
// coroutine with a stack of its own (fiber.c): at the bottom the task (one
// queued operation: a profile's create, start, stop, close, replace or
// query; a context switch, a migration, an exit, the idle loop's pass; a PMC
// start, stop, attach or detach), above it at most one maskable interrupt (a
// sample, the scheduler tick, or a cross-CPU call) and at most one NMI (a
// sample). One context of the machine runs at a time, the top one of its
// CPU, until its next yield point; there the sequence says which CPU goes on
// (step RUN) or where a sample lands (step SAMPLE). Yield points: every
// this_cpu() and cpu_id(), after every percpu_read load (the hosted
// percpu_read_hook), between switch_to's publishing steps, and in every
// stand-in (kernel.c, machine.c, hwpmc.c): heap, mappings, pins, locks,
// sched_cpus_running between its loads, smp_call_many, clock_ns, the HAL. So
// a sample can be held after it loaded the plan epoch while another CPU runs
// a whole stop. An NMI lands anywhere but in another NMI (inside switch_to,
// plan_make, profile_change_retire, grace.c, a maskable sample); a maskable
// interrupt only where the task has interrupts on; a cross-CPU call is taken only
// there, so never inside a sample or switch_to. A source is delivered one
// way for a whole sequence, as for a whole boot: the timer's ProfileTime by
// vector or NMI, the PMU sources' PMIs by vector or NMI.
//
// What it does not model. Memory orders weaker than sequential consistency:
// one context runs at a time, so a load sees the last store. x86's TSO also
// lets a store wait in the store buffer past a later load, but every store
// the kernel's arguments rest on is a locked instruction (the switch's epoch
// adds and exchange, sample_plans_drop's adds, the quiescent count, the call
// acknowledgement) or is followed by one before the loads that matter
// (sample_publish's release store, then the drop): with the store buffer
// drained there, TSO allows only the interleavings explored here. A plain
// store that needed a fence would be missed, and so would the compiler's
// reordering of the kernel build's percpu_read asm (here a function call).
// Neither is a sleeping mutex (it spins here, interrupts on: the running
// process never changes under an operation), the run queue (a switch names
// its next thread), the HAL or the PMU (stubs), nor the real PMC object
// (hwpmc.c stands in for its sampling kinds: a running set retired by
// grace_wait, targets freed by grace_defer). Operations on one profile
// object take turns (profiles of one scope still race on its mutex and set),
// so the reference stays exact.
//
// Invariants: no access to freed or unmapped memory (ASan: sets, buffers
// through their mapping, kprofiles, PMC targets and retired running sets,
// processes); no sample counts into a process-scope profile, profile set or
// PMC target of a process its CPU did not run at that instant (check.c's
// watch: the running process cannot change while its sample runs); after a
// stop, buckets + out-of-range = delivered (KeQueryProfileStats), between
// the samples that surely and that may have met the profile, and unchanged
// ever after (profiles.c); a deferred free runs once, and it and grace_wait
// only after every sample in flight before them ended (hwpmc.c); nothing is
// left at the end (world.c's teardown).
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "lib/abi/profile.h"
#include "arch/x86/trapframe.h"

#define KX_CPUS      4  // simulated CPUs at most (a sequence has 2 to 4)
#define KX_PROCS     3  // process slots: threads 1..3 (0 is the idle thread)
#define KX_POOL      12 // processes one sequence may create
#define KX_SLOTS     6  // profile objects
#define KX_PMCS      2  // sampling PMCs: 0 system-wide, 1 of processes
#define KX_SOURCES   3
#define KX_ADDRS     8 // sample addresses
#define KX_RANGES    5 // profile ranges
#define KX_MAX_STEPS 64
#define KX_QUEUE     4 // operations waiting for one CPU's task
#define KX_MSG       512

enum kx_kind {
    KX_RUN,     // cpu goes on n times to its next yield point (0: until idle or waiting)
    KX_SAMPLE,  // a sample on cpu: a: source, b: address (NMI or not: kx_seq's nmi)
    KX_CREATE,  // a: slot, n: parameters (kx_param_*)
    KX_START,   // a: slot
    KX_STOP,    // a: slot
    KX_CLOSE,   // a: slot, b: 1 close a started one (its destroy stops it)
    KX_REPLACE, // a: slot, n: parameters: close, create, start
    KX_QUERY,   // a: slot
    KX_SWITCH,  // a: thread (0 idle)
    KX_MIGRATE, // a: process slot: its CPU switches away, cpu switches to it
    KX_EXIT,    // a: process slot: it exits where it runs (or on cpu)
    KX_SPAWN,   // a: process slot: the exited process there reaped, a new one
    KX_IDLE,    // cpu's idle loop: a quiescent state, then the deferred frees
    KX_PMC_START,
    KX_PMC_STOP, // a: PMC
    KX_ATTACH,
    KX_DETACH, // a: PMC, b: process slot
    KX_NOMEM,  // cpu's next kmalloc fails
    KX_TRACE,  // `pmc trace` on or off: every plan scans
    KX_TICK,   // the scheduler tick on cpu, where it interrupts ring 3 (nothing elsewhere)
    KX_GRACE,  // the teardown's: a: 0 grace_flush, 1 a pass through the idle loop, 2 and a check
    KX_KINDS
};

struct kx_step {
    uint8_t kind, cpu, a, b;
    uint32_t n;
};

// A source reaches the profile layer one way for a whole boot: ProfileTime by
// the LAPIC timer's vector, or as NMI (profile_nmi=1); the PMU sources by
// the PMI's vector, or as NMI (pmi=nmi). A maskable sample waits while its
// CPU's interrupts are off (here: it is not taken); an NMI is taken anywhere
// but inside another NMI.
#define KX_NMI_TIMER 1
#define KX_NMI_PMI   2

struct kx_seq {
    unsigned ncpus, nsteps;
    unsigned nmi;   // KX_NMI_*
    uint32_t swarm; // the kinds of step it draws from (drawing only)
    struct kx_step steps[KX_MAX_STEPS];
    struct kx_step pending[12]; // the rest of a probe (drawing only)
    unsigned npending;
};

// What the runs reached, for the summary: how often the windows that matter
// were hit, not only that nothing failed.
struct kx_stats {
    unsigned long long switches;      // context switches published
    unsigned long long window;        // samples taken inside switch_to's publishing
    unsigned long long held;          // samples during which another CPU ran
    unsigned long long calls;         // cross-CPU calls taken
    unsigned long long checked;       // stops whose counts were checked exactly
    unsigned long long deferred_runs; // deferred frees run
};
extern struct kx_stats *kx_stats;

struct kx_result {
    bool failed;
    unsigned step; // the failing step (nsteps: the teardown)
    char msg[KX_MSG];
    unsigned steps, samples;
};

// A profile's parameters, packed in a step's n.
#define kx_param_scope(n)    ((n)&3)          // 0 system, 1..3 process slot
#define kx_param_source(n)   (((n) >> 2) % 3) // kx_sources[]
#define kx_param_range(n)    (((n) >> 4) % KX_RANGES)
#define kx_param_affinity(n) (((n) >> 7) & 15) // 0: every CPU

extern const KPROFILE_SOURCE kx_sources[KX_SOURCES];
extern const char *const kx_range_names[KX_RANGES];
extern const uint64_t kx_addrs[KX_ADDRS];

// --- machine.c: the CPUs, their contexts, yields, interrupts -----------------

enum kx_ctx_kind { CTX_TASK, CTX_CALL, CTX_TICK, CTX_IRQ, CTX_NMI };

struct kx_sample {
    unsigned cpu, source;
    uint64_t ip;
    const struct process *proc; // the CPU's running process while it runs
    uint64_t entry;             // the clock when it began (0: not yet)
    uint64_t others;            // the other CPUs' slices when it began
};

struct kx_ctx;
void kx_machine_reset(unsigned ncpus, unsigned nmi);
bool kx_queue(unsigned cpu, const struct kx_step *op);       // false: the queue is full
bool kx_raise(unsigned cpu, unsigned source, unsigned addr); // a sample there
bool kx_tick(unsigned cpu);     // the scheduler tick, where cpu runs a process in ring 3
bool kx_cpu_step(unsigned cpu); // one slice of cpu's top context; false: nothing to run
void kx_run_cpu(unsigned cpu, unsigned n);
bool kx_drain(void); // every CPU until none has anything to run; false: livelock
void kx_yield(void); // a yield point (nothing outside a context)
void kx_wait(void);  // a yield point spent waiting on another CPU
uint64_t kx_clock(void);
unsigned kx_ncpus(void);
unsigned kx_samples_raised(void);
bool kx_cpu_busy(unsigned cpu); // a context on it, or a queued op
bool kx_cpu_irqs_off(unsigned cpu);
// The samples in flight (begun, not ended): fn for each.
void kx_each_sample(void (*fn)(const struct kx_sample *s, void *arg), void *arg);
void kx_ctx_describe(unsigned cpu, char *buf, unsigned size);

// --- fiber.c: coroutines ------------------------------------------------------

struct kx_fiber;
struct kx_fiber *kx_fiber_new(void);
void kx_fiber_start(struct kx_fiber *f, void (*fn)(void *arg), void *arg);
void kx_fiber_resume(struct kx_fiber *f); // from the scheduler, until it yields or ends
void kx_fiber_yield(void);                // from a fiber
bool kx_fiber_done(const struct kx_fiber *f);

// --- world.c: processes, switches, the steps and the operations ---------------

void kx_world_reset(unsigned ncpus);
void kx_step_apply(const struct kx_step *st); // a step of the sequence, from the scheduler
void kx_op_run(const struct kx_step *op, unsigned cpu); // a queued operation, in cpu's task
void kx_sample_run(struct kx_sample *s);                // a sample, in its context
void kx_tick_run(unsigned cpu);                         // the tick, in its context
void kx_teardown(void); // everything stopped, closed, exited and reaped, then checked
const struct process *kx_running(unsigned cpu);
struct process *kx_slot_process(unsigned t);    // slot t's live process, or NULL
int kx_slot_cpu(unsigned t);                    // the CPU running slot t's thread, or -1
unsigned kx_pid_index(const struct process *p); // below KX_POOL
void kx_world_each_process(void (*fn)(struct process *p, void *arg), void *arg);

// --- profiles.c: the profile objects, their operations and reference -------------

void kx_profiles_reset(unsigned ncpus);
void kx_profile_op(const struct kx_step *op);
void kx_profiles_sample_end(const struct kx_sample *s);
bool kx_profiles_check(char *msg, unsigned size); // the stopped ones have not moved
int kx_profile_state(unsigned slot);              // 0 none, 1 created, 2 started
KPROFILE_SOURCE kx_profile_source(unsigned slot);
int kx_profile_started_on(const struct process *p); // a slot started on p, or -1
void kx_profiles_each(void (*fn)(uint64_t *in_range, const struct process *p, void *arg),
                      void *arg); // the process-scope ones

// --- hwpmc.c: the sampling PMCs' stand-in --------------------------------------

void kx_pmc_init(void); // once: the stand-in registers as the fan-out's consumer
void kx_pmc_reset(void);
void kx_pmc_op(const struct kx_step *op);
void kx_pmc_exiting(struct process *p); // its targets detached (PROCESS_EXITING)
bool kx_pmc_idle(char *msg, unsigned size);
// Every live target's sample count and process, for the watch.
void kx_pmc_each_target(void (*fn)(uint64_t *samples, const struct process *p, void *arg),
                        void *arg);

// --- kernel.c: the rest of the kernel, stubbed ----------------------------------

void kx_kernel_reset(void);
void kx_nomem(unsigned cpu);
uint8_t *kx_user_buffer(unsigned slot); // a profile slot's buffer, as user memory
uint64_t kx_user_va(unsigned slot);
bool kx_kernel_idle(char *msg, unsigned size); // nothing allocated, pinned or mapped

// --- check.c: the invariants ---------------------------------------------------

// The first failure of a run, where the supervisor reads it (main.c).
struct kx_report {
    volatile bool failed;
    unsigned step;
    char msg[KX_MSG];
};
extern struct kx_report *kx_report;
void kx_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool kx_failed(void);
void kx_die(void) __attribute__((noreturn)); // after a failure nothing can go on
void kx_check_reset(void);
void kx_watch_begin(const struct kx_sample *s); // around each slice of a sample
void kx_watch_end(const struct kx_sample *s);
void kx_sets_scan(void); // the process sets published so far
void kx_sets_forget(const void *freed);

// --- run.c, shrink.c, main.c: runs, shrinking, the supervisor -------------------

void kx_run_init(void); // once: the profile layer's boot steps, the ASan callback
bool kx_run(struct kx_seq *s, uint64_t *draw, struct kx_result *r, bool verbose);
extern bool kx_verbose; // a replay: the failing step is printed before ASan's report

// What a child process leaves its parent: the workers' tallies, the sequence
// being run (drawn step by step) and its report.
struct kx_shared {
    unsigned long long seqs, steps, samples, current;
    struct kx_stats stats;
    struct kx_seq seq;
    struct kx_report report;
};
extern struct kx_shared *kx_shared;
// s shrunk to fewer steps that fail the same way (each try in a child
// process); *rep becomes the shrunk run's report.
void kx_shrink(struct kx_seq *s, struct kx_report *rep);
// The report of a child that ended: what it recorded, or how it died.
void kx_child_report(int status, struct kx_report *rep);

// --- draw.c: sequences ------------------------------------------------------------

void kx_draw(uint64_t *rng, struct kx_seq *s, unsigned i);
void kx_describe(const struct kx_step *st, char *buf, unsigned size);
void kx_format(const struct kx_seq *s, char *buf, unsigned size);
bool kx_parse(const char *text, struct kx_seq *s);
