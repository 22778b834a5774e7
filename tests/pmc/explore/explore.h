// The PMU explorer (make pmu-explore): seeded random sequences of what a user
// or the kernel can do to the PMC layer (kernel/pmc and the PMC object above
// it, built for the host against tests/pmc's register-level PMU model), and a
// reference model of what every count, sample and logger record must then be.
//
// Steps (enum ex_op_kind): counting and sampling PMCs in the four modes
// (allocate, attach to running and idle processes, detach, start, stop, read,
// write, release); HAL start, stop and set-interval of each source; the
// context-switch logger and a trace logger (counter lists, CSwitch and
// SampledProfile hooks); row disable and enable; context switches,
// migrations, exits, scheduler ticks (rotation); events retired in user and
// kernel mode; PMIs (vector or NMI, per variant) and NMIs with nothing
// overflowed. Each step is drawn from the reference's state so that most act
// on something live; its operands are taken modulo what exists, so that a shrunk
// sequence still replays (a step on nothing is a no-op).
//
// After every step (explore_check.c): no counter both loaded with a count and
// sampling, and none enabled for no owner; every count exact (its targets'
// events in its windows; the PMI path's own instructions tolerated in counts
// that count the kernel), or when it may have been multiplexed no more than
// exact, running <= enabled; no count backwards; no more samples per CPU and
// source than whole periods retired; every sample the PMI reports delivered
// to the profile callback, samples + lost periods <= periods retired; each
// logger record's values moved by the events between it and the CPU's
// previous record. After the last step everything is released and every
// counter must be idle.
//
// NMIs: PMIs as NMI wait, as under a hypervisor, for the next VM entry
// (late_pmi); the explorer delivers a pending one after an MSR access the
// code makes outside the PMI: at random (one access in `density`) or at
// chosen accesses (systematic: each access of a sequence in turn). That is
// where a hypervisor injects a pending NMI after an intercepted rdmsr or
// wrmsr: at the VM entry that resumes the guest (Intel SDM vol. 3C, "Event
// Injection" under VM entries; AMD APM vol. 2, 15.20 "Event Injection").
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "lib/abi/profile.h"
#include "pmu_model.h"

#define EX_MAX_OPS    48 // steps in one sequence
#define EX_MAX_INJECT 32 // explicit NMI injection points of one sequence
#define EX_SLOTS      8  // PMC objects a sequence juggles
#define EX_PROCS      4  // processes: 0 owns the PMCs and the log, 1-3 are targets
#define EX_SOURCES    3  // profile sources used (explore_ops.c's ex_source)
#define EX_MSG        512

enum ex_op_kind {
    OP_ALLOC,      // a: slot, b: mode, c: source, n: rings (0 both, 1 user, 2 kernel)
    OP_ATTACH,     // a: slot, b: process
    OP_DETACH,     // a: slot, b: process
    OP_START,      // a: slot
    OP_STOP,       // a: slot
    OP_READ,       // a: slot
    OP_WRITE,      // a: slot, n: value
    OP_RELEASE,    // a: slot
    OP_HAL_START,  // a: source, n: its interval first (0: the one in force)
    OP_HAL_STOP,   // a: source
    OP_HAL_PERIOD, // a: source, n: interval
    OP_CSW_START,  // a: events (2 bits each), b: how many (1-4)
    OP_CSW_STOP,   //
    OP_TRACE_ON,   // a: counters (2 bits each), b: how many (1-4), c: hooks (bit 0 CSwitch, 1
                   // profile)
    OP_TRACE_OFF,  //
    OP_ROW_ADMIN,  // a: cpu, b: row, c: 1 disable, 0 enable
    OP_SWITCH,     // a: cpu, b: thread (0 idle, 1-3 the processes'; one running elsewhere migrates)
    OP_EXIT,       // b: process
    OP_TICK,       // a: cpu
    OP_RETIRE,     // a: cpu, b: source's event, c: 1 user mode, n: events
    OP_PMI,        // time passes: PMIs latched (late_pmi) are taken, as at a VM entry
    OP_NMI,        // a: cpu: an NMI now (the PMI handler, a pending PMI or nothing overflowed)
    OP_HOOK,       // a: cpu, b: 0 a system call (enter, exit), 1 a demand-zero page fault
    OP_KINDS
};

struct ex_op {
    uint8_t kind, a, b, c;
    uint32_t n;
};

// Where NMIs land: at the k-th MSR access (outside the PMI) of step `step`.
struct ex_point {
    uint16_t step;
    uint16_t k;
};

struct ex_seq {
    unsigned variant;
    unsigned nops;
    struct ex_op ops[EX_MAX_OPS];
    uint8_t favourite; // the source most steps use (drawing)
    uint32_t swarm;    // the kinds of step this sequence draws from (drawing)
    uint32_t density;  // random injection: one access in `density` on average (0: none)
    uint64_t inject_seed;
    unsigned npoints; // explicit injection points (used when density is 0)
    struct ex_point points[EX_MAX_INJECT];
};

struct ex_variant {
    struct model_config cfg;
    char name[40];
    bool nmi; // pmi=nmi
};

struct ex_result {
    bool failed;
    unsigned step; // the failing step
    char msg[EX_MSG];
    unsigned steps, nmis;
    unsigned npoints; // where NMIs were injected, for shrinking a random run
    struct ex_point points[EX_MAX_INJECT];
    unsigned accesses[EX_MAX_OPS]; // MSR accesses outside the PMI, per step
};

// The reference: what the sequence has done, and so what every count must be.
struct ex_pmc {
    bool live, running, counting, system;
    uint8_t src, rings; // rings: bit 0 user, bit 1 kernel
    uint8_t targets;    // attached processes (bit per process)
    bool mux;           // it may have been multiplexed: its count may fall short
    uint64_t expect;    // events it must have counted (plus a written value)
    uint64_t last;      // its last read
    uint64_t slack;     // instructions the PMI path retired while it counted (may count them)
    struct pmc *p;
};

struct ex_logger {
    bool on;
    unsigned n;
    uint8_t src[4];
    bool have[MODEL_MAX_CPUS];
    uint64_t value[MODEL_MAX_CPUS][4], truth[MODEL_MAX_CPUS][4], handler[MODEL_MAX_CPUS];
};

struct ex_ref {
    unsigned ncpus, ngp;
    int running[MODEL_MAX_CPUS]; // process on each CPU, -1 idle
    bool alive[EX_PROCS];
    struct ex_pmc pmc[EX_SLOTS];
    bool hal_on[EX_SOURCES];
    uint64_t hal_interval[EX_SOURCES];            // smallest period in force since the start
    uint64_t window[MODEL_MAX_CPUS][EX_SOURCES];  // events since the start
    uint64_t budget[MODEL_MAX_CPUS][EX_SOURCES];  // periods of the windows closed
    uint64_t samples[MODEL_MAX_CPUS][EX_SOURCES]; // the profile callback's samples
    uint64_t total[MODEL_MAX_CPUS][EX_SOURCES];   // events retired, both levels
    struct ex_logger log[2]; // 0: the context-switch session, 1: a trace logger
    uint64_t trace;          // the trace logger's handle
    uint32_t disabled;       // rows disabled on some CPU
    // A retire in progress: a PMI inside it sees only the events before its overflow.
    bool retiring;
    unsigned r_cpu, r_src;
    uint64_t r_counted, r_handler;
    uint64_t handler[MODEL_MAX_CPUS]; // the PMI path's instructions as of the last step
};
extern struct ex_ref ex_ref;
extern bool ex_verbose; // a replay: the reads are printed

// explore.c
extern struct ex_variant ex_variants[];
extern unsigned ex_nvariants;
void ex_variants_init(void);
int ex_variant_find(const char *name);

// explore_ops.c: generation and application of one step.
struct ex_rng {
    uint64_t s;
};
uint64_t ex_rand(struct ex_rng *r);
unsigned ex_below(struct ex_rng *r, unsigned n);
void ex_draw(struct ex_rng *r, struct ex_seq *s, unsigned i);
void ex_describe(const struct ex_op *op, char *buf, unsigned size);
KPROFILE_SOURCE ex_source(unsigned i);
enum model_event ex_event(unsigned i);

// explore_run.c: one run of a sequence against the kernel and the reference.
// With draw, each step is drawn before it runs (and stored in s->ops).
bool ex_run(struct ex_seq *s, struct ex_rng *draw, struct ex_result *r, bool verbose);

// explore_apply.c: a step on the kernel, and on the reference.
void ex_setup(const struct ex_variant *v);
void ex_apply(const struct ex_op *op);
void ex_note_step(void);    // after a step and its NMIs
void ex_note_handler(void); // the PMI path's instructions since the last note
void ex_teardown(void);
// explore_check.c: the invariants (false and msg set on a violation).
bool ex_check(char *msg, unsigned size);
bool ex_check_records(char *msg, unsigned size);
bool ex_check_idle(char *msg, unsigned size);
bool ex_read_step(unsigned slot, char *msg, unsigned size); // a read as a step
uint64_t ex_truth(unsigned cpu, unsigned src);              // events of src on cpu up to now

// explore_shrink.c: the smallest failing sequence, and its text form.
void ex_shrink(struct ex_seq *s, struct ex_result *r);
void ex_format(const struct ex_seq *s, char *buf, unsigned size);
bool ex_parse(const char *text, struct ex_seq *s);
