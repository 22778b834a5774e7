// fuzz_state: sequences of profiler system calls over live resources (see
// main.c for the program and its command line).
//
// A sequence is a list of calls drawn from a seed, each call from (seed, its
// index) alone, so that a sequence with calls left out is still the same
// calls. A call names its resources by choice (the k-th live profile, PMC or
// process), never by handle, and at most one of its arguments is mutated.
// The executor keeps a model of what the process holds: every handle and
// its type, each profile started or not, each PMC's mode and state, its
// attachments, the children, the log. From the model it knows which status a
// call must give where the kernel's rules fix it (a closed handle:
// STATUS_INVALID_HANDLE), and otherwise which statuses the call may give.
#pragma once
#include <mix.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syscall.h>

#define NPROF      4 // profile slots, each with its own bucket buffer
#define NPMC       4 // PMC slots
#define NPROC      3 // child slots: a handle from SysSpawn and one from SysOpenProcess
#define NSTALE     8 // closed handles remembered for later calls
#define SEQ_MIN    8 // calls in a sequence
#define SEQ_MAX    64
#define PAGE_BYTES 4096u
#define SLOT_BYTES (2 * PAGE_BYTES) // one profile's buffer; an unmapped page follows
#define LOG_BYTES  (64u * 1024)     // the log's read buffer; an unmapped page follows
#define USER_TEXT  0x400000ull      // where every program is linked
#define NO_STATUS  ((NTSTATUS)1)    // no status is expected exactly
#define MAX_FAILS  100              // a fuzzing process's exit status saturates here

// Flags that narrow a call pattern the kernel gets wrong, so that a run
// finds what else is wrong (userland/README.md describes each bug).
//
// NARROW_HAL_LOCK (fixed: off by default): when the HAL's profile lock was a
// try-lock, an NtSetIntervalProfile concurrent with the first start of a
// source made that start fail with STATUS_DEVICE_BUSY, and concurrent with its
// last stop left the source started with no reference. With the flag the
// driver keeps ProfileTime started for the whole run and NtSetIntervalProfile
// is not called for the other valid sources.
#define NARROW_HAL_LOCK    0x1
//
// NARROW_TICK_COUNT (fixed: off by default): the software events of ProfileTime's ticks and of
// profile interrupts count, for a CPU or a running thread, the timer's
// expiries since its last context switch; a restart of ProfileTime (every
// NtSetIntervalProfile while it runs reprograms it) resets the timer's count,
// and those pending ticks are lost: a counting PMC of ProfileTime,
// PMC_SW_PROFILE_TICKS or PMC_SW_PROFILE_INTERRUPTS then reads lower than it
// did (a system-scope one wraps below its start: 2^64 - 3). They now read
// the profile layer's per-CPU tick count, which no restart resets. With the
// flag, counting PMCs count the other software events only.
#define NARROW_TICK_COUNT  0x2
//
// NARROW_TARGET_EXIT (fixed: off by default): a target of a process-scope
// counting PMC that exited or was detached used to leave the PMC's slots
// before its count was folded into the PMC's total, so a read in between read
// lower; a leaving target is now counted until it is folded. With the flag,
// counting PMCs count this process only.
#define NARROW_TARGET_EXIT 0x4
#define NARROW_DEFAULT     0

enum op {
    OP_PROF_CREATE,
    OP_PROF_CREATE_EX,
    OP_PROF_START,
    OP_PROF_STOP,
    OP_PROF_STATS,
    OP_INTERVAL_QUERY,
    OP_INTERVAL_SET,
    OP_PROF_REMAP,
    OP_PMC_ALLOC,
    OP_PMC_ATTACH,
    OP_PMC_DETACH,
    OP_PMC_SET_COUNT,
    OP_PMC_START,
    OP_PMC_STOP,
    OP_PMC_READ,
    OP_PMC_WRITE,
    OP_PMC_QUERY,
    OP_PMC_GET_MSR,
    OP_PMC_ROWS,
    OP_LOG_CONFIGURE,
    OP_LOG_RELEASE,
    OP_LOG_FLUSH,
    OP_LOG_READ,
    OP_LOG_WRITE,
    OP_LOG_STATS,
    OP_SPAWN,
    OP_RESUME,
    OP_KILL,
    OP_WAIT,
    OP_OPEN,
    OP_CLOSE,
    OP_PROCESS_ID,
    OP_BURN,
    OP_SLEEP,
    OP_COUNT
};

// One generated call. mutate is the 1-based argument to corrupt (0: none),
// how the way it is corrupted; variant, pick, pick2 and v choose the valid
// values.
struct call {
    uint8_t op;
    uint8_t pick, pick2;
    uint8_t variant;
    uint8_t mutate, how;
    uint64_t v;
};

// How a slot's buffer pages are mapped now (OP_PROF_REMAP changes it).
enum slot_map { MAP_RW, MAP_DEMAND, MAP_RO, MAP_NONE };

struct prof {
    HANDLE h;
    bool live, started;
    bool exact; // the slot holds only this profile's buckets: their sum is in_range
};

struct pmc {
    HANDLE h;
    bool live, running, counting;
    bool known; // last is a value read (or written): a later read is not lower
    uint32_t mode, flags, source;
    uint64_t last, enabled;
    uint8_t self; // attached to this process: SELF_NO, SELF_YES, SELF_MAYBE
};

enum { SELF_NO, SELF_YES, SELF_MAYBE };

struct proc {
    HANDLE h, dup; // from SysSpawn, from SysOpenProcess (either may be NULL)
    bool live;     // the slot is in use (a child not reaped, or handles open)
    bool suspended, killed, waited;
    bool long_spin, endless; // a wait could take long: it is killed first
    uint32_t pid;
};

struct logstate {
    bool owner;             // this process configured the log and has not released it
    bool exact;             // every record since the configuration went through parse_log
    uint32_t depth;         // frames a chain may hold (with the IP: depth + 1)
    uint64_t samples, lost; // SAMPLE records, and LOST counts, read since then
    uint64_t user_written, user_read;
};

enum fail_kind {
    FAIL_NONE,
    FAIL_STATUS,     // a status outside the call's documented set, or not the one the rules fix
    FAIL_HANDLE,     // a closed handle still worked, or a new handle is not a fresh one
    FAIL_PROFILE,    // buckets + out of range != delivered
    FAIL_LOG_STATS,  // delivered != logged + lost on a CPU
    FAIL_LOG_RECORD, // a record the format does not allow
    FAIL_LOG_COUNT,  // the records read do not add up to the driver's counts
    FAIL_COUNT_DOWN, // a counting PMC's value went down
    FAIL_OTHER,      // anything else the model does not allow
};

struct failure {
    enum fail_kind kind;
    uint8_t op;
    unsigned call; // index in the sequence
    char what[200];
};

struct fuzzer {
    struct prof prof[NPROF];
    uint8_t map[NPROF]; // enum slot_map
    uint8_t *slots;     // NPROF slots of SLOT_BYTES, each followed by an unmapped page
    struct pmc pmc[NPMC];
    struct proc proc[NPROC];
    HANDLE self_h; // a handle to this process from SysOpenProcess, or NULL
    struct logstate log;
    HANDLE stale[NSTALE];
    unsigned nstale;
    uint8_t *logbuf; // LOG_BYTES, then an unmapped page
    bool privileged;
    unsigned ncpus;
    uint64_t online; // mask of online CPUs
    uint32_t pid, parent;
    uint64_t time_min, time_max; // ProfileTime's interval range, 100 ns units
    uint64_t max_handle;         // the largest handle value seen, for the sweep at the end
    unsigned narrow;             // NARROW_* flags
    bool verbose;                // print each call (replays)
    bool tearing;                // in the teardown
    unsigned index;              // the call being run
    uint8_t op;                  // its operation
    NTSTATUS last;               // the status its last system call gave (for the replay's lines)
    uint8_t mutated;             // its mutated argument (0: none)
    struct failure fail;         // the first failure of the sequence
    unsigned fails;              // failures in this sequence
    uint64_t ran[OP_COUNT], succeeded[OP_COUNT]; // calls of each operation, and successes
    uint64_t profile_samples, log_samples;       // what the profiles and logs checked counted
};

static inline uint8_t *slot_base(const struct fuzzer *f, unsigned k)
{
    return f->slots + k * (SLOT_BYTES + PAGE_BYTES);
}

// gen.c: the calls of a sequence.
uint64_t seq_seed(uint64_t fuzzer_seed, uint64_t j, bool privileged);
unsigned seq_len(uint64_t seed);
void gen_call(uint64_t seed, unsigned index, struct call *c);
const char *op_name(unsigned op);
void print_call(unsigned index, const struct call *c, NTSTATUS s);

// exec.c: the executor's frame.
int fuzzer_init(struct fuzzer *f);
enum fail_kind run_sequence(struct fuzzer *f, uint64_t seed, unsigned len, const uint8_t *keep);
void fuzz_fail(struct fuzzer *f, enum fail_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void check(struct fuzzer *f, unsigned op, NTSTATUS got, NTSTATUS want, bool must_fail);
void note_handle(struct fuzzer *f, HANDLE h);
void forget_handle(struct fuzzer *f, HANDLE h);
void close_and_probe(struct fuzzer *f, HANDLE h, unsigned op, NTSTATUS (*probe)(HANDLE));
NTSTATUS handle_class(const struct fuzzer *f, HANDLE h, int type);
HANDLE bad_handle(struct fuzzer *f, const struct call *c, int type);
bool new_handle_ok(struct fuzzer *f, HANDLE h);

// Handle types of the model.
enum { HT_NONE, HT_PROFILE, HT_PMC, HT_PROCESS };

// Bad pointers, by how (a call's `how`): NULL, the kernel's, non-canonical,
// read-only (this program's code), unmapped (a guard page).
uint64_t bad_pointer(const struct fuzzer *f, unsigned how);
uint64_t bad_in_pointer(const struct fuzzer *f, unsigned how); // never readable

// The operations, one file each for profiles, PMCs, the log, processes.
typedef void op_fn(struct fuzzer *f, const struct call *c);
op_fn op_prof_create, op_prof_create_ex, op_prof_start, op_prof_stop, op_prof_stats,
    op_interval_query, op_interval_set, op_prof_remap;
op_fn op_pmc_alloc, op_pmc_attach, op_pmc_detach, op_pmc_set_count, op_pmc_start, op_pmc_stop,
    op_pmc_read, op_pmc_write, op_pmc_query, op_pmc_get_msr, op_pmc_rows;
op_fn op_log_configure, op_log_release, op_log_flush, op_log_read, op_log_write, op_log_stats;
op_fn op_spawn, op_resume, op_kill, op_wait, op_open, op_close, op_process_id, op_burn, op_sleep;

// The k-th live resource (k taken modulo their number), or -1 when none is.
int live_prof(const struct fuzzer *f, unsigned k);
int live_pmc(const struct fuzzer *f, unsigned k);
int live_proc(const struct fuzzer *f, unsigned k);
int live_child(const struct fuzzer *f, unsigned k); // a child slot in use, with or without handles

// Helpers the teardown shares with the operations.
void prof_close(struct fuzzer *f, unsigned k);
void prof_check_sum(struct fuzzer *f, unsigned k);
void pmc_close(struct fuzzer *f, unsigned k);
void pmc_check_value(struct fuzzer *f, unsigned k, uint64_t value, uint64_t enabled);
void proc_reap(struct fuzzer *f, unsigned k);
void self_close(struct fuzzer *f);
void log_drain_and_check(struct fuzzer *f);
bool log_sampling_running(const struct fuzzer *f);
void slot_restore(struct fuzzer *f, unsigned k);

// teardown.c: the end of every sequence.
void teardown(struct fuzzer *f);

// minimize.c: a failing sequence made short.
void minimize(struct fuzzer *f, uint64_t seed, unsigned len, enum fail_kind kind);
