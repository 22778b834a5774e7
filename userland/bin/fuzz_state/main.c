// fuzz_state: a stateful fuzzer of the profiler's system calls.
//
//   fuzz_state CALLS SEED [PROCS [NARROW]] [--beside]
//                                       PROCS fuzzing processes (default 4) make
//                                       CALLS calls in all, then a leak check;
//                                       NARROW: the NARROW_* flags (fuzz_state.h)
//                                       in force (default all; 0: none);
//                                       --beside: other programs run beside it
//                                       (fuzz_users), so no leak check
//   fuzz_state --replay SEED,LEN[,I...] one sequence again (only its calls I...
//                                       when given), each call printed, then a leak check
//
// Where fuzz throws random arguments at random calls, this program builds
// sequences of calls over live resources, as syzkaller does: profile objects
// (created with valid and invalid ranges, buffers, sources and affinities,
// started, stopped, their statistics, the interval), PMCs in the four modes
// (allocated with flags, attached to and detached from its children, count
// set, started, stopped, read, written, queried), the log (configured with
// many sizes, released, flushed, read, written), children from the ramdisk
// (spin, calib, primes; suspended or not, resumed, killed, waited) and
// handles (a second one to a process from SysOpenProcess; closed). One call in
// five has one argument mutated. Every status is checked against the call's
// documented statuses, or against the one the rules fix where the model
// knows it (a closed handle gives STATUS_INVALID_HANDLE). At the end of each
// sequence everything is stopped and the invariants are checked: each
// profile's buckets + out of range = delivered; the log's delivered = logged +
// lost on every CPU and the records read add up to the driver's counts; no
// counting PMC went down; then everything is closed, the children are reaped
// and no handle is left. A failing sequence is shortened (minimize.c) and
// printed so that --replay runs it again. Each sequence is named on a
// "fuzz-state-run:" line before it runs, so that when the kernel itself
// fails the log says which sequence each process was in (make fuzz-state
// prints those lines and the REPLAY= that runs each again).
//
// Fuzzing process i (odd ones with the privilege, or the only one) runs
// sequences whose seeds come from SEED and i: the same SEED gives the same
// calls. The driver checks the kernel's counters (free pages, heap bytes,
// objects, pinned pages, processes) against their values before, and prints
// "fuzz-state: N calls, N sequences, 0 panics, N leaks, N invariant failures".
#include "fuzz_state.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROCS    16
#define MINIMIZE_MAX 3 // failures of one fuzzing process that are shortened

static const char *self_path = "fuzz_state";

static uint64_t fuzzer_seed(uint64_t seed, unsigned i)
{
    return stream_seed(seed, i); // a stream of its own for each fuzzing process
}

// Sequences a fuzzing process runs for its share of the calls.
static uint64_t count_sequences(uint64_t fseed, uint64_t calls, bool privileged)
{
    uint64_t n = 0;
    for (uint64_t j = 0; calls; j++, n++) {
        unsigned len = seq_len(seq_seed(fseed, j, privileged));
        calls -= len < calls ? len : calls;
    }
    return n;
}

// How many calls of each operation succeeded.
static void print_mix(const struct fuzzer *f)
{
    char line[1200];
    int at = 0;
    for (unsigned op = 0; op < OP_COUNT && at < (int)sizeof line - 64; op++)
        at += snprintf(line + at, sizeof line - (size_t)at, " %s %lu/%lu", op_name(op),
                       f->succeeded[op], f->ran[op]);
    printf("fuzz-state: pid %u succeeded:%s\n", SysGetPid(), line);
}

// One fuzzing process: its sequences, each failure shortened and printed.
static int fuzz_child(uint64_t seed, unsigned index, uint64_t calls, unsigned narrow)
{
    static struct fuzzer f;
    if (fuzzer_init(&f) != 0) {
        printf("fuzz-state: pid %u: cannot set up\n", SysGetPid());
        return MAX_FAILS + 1;
    }
    f.narrow = narrow;
    uint64_t fseed = fuzzer_seed(seed, index), left = calls, sequences = 0;
    unsigned failures = 0;
    for (uint64_t j = 0; left; j++, sequences++) {
        uint64_t s = seq_seed(fseed, j, f.privileged);
        unsigned len = seq_len(s) < left ? seq_len(s) : (unsigned)left;
        // Said before it runs: if the kernel dies in it, the log names it.
        printf("fuzz-state-run: pid %u sequence %lu REPLAY=%lu,%u\n", SysGetPid(), j, s, len);
        enum fail_kind k = run_sequence(&f, s, len, NULL);
        if (k != FAIL_NONE && failures++ < MINIMIZE_MAX)
            minimize(&f, s, len, k);
        else if (k != FAIL_NONE)
            printf("fuzz-state: FAILURE in sequence %lu,%u at call #%u (%s): %s\n", s, len,
                   f.fail.call, op_name(f.fail.op), f.fail.what);
        left -= len;
    }
    print_mix(&f);
    printf("fuzz-state: pid %u (%s): %lu calls, %lu sequences, %u invariant failures; "
           "%lu samples in profiles, %lu in logs\n",
           SysGetPid(), f.privileged ? "privileged" : "unprivileged", calls, sequences, failures,
           f.profile_samples, f.log_samples);
    return failures < MAX_FAILS ? (int)failures : MAX_FAILS;
}

static bool privileged_self(void)
{
    static struct sys_process_info list[64];
    uint32_t n = 0, pid = SysGetPid();
    SysProcessList(list, 64, &n);
    for (uint32_t i = 0; i < n && i < 64; i++)
        if (list[i].pid == pid)
            return list[i].privileged != 0;
    return false;
}

// The kernel's counters back at their values before: how many are not.
static unsigned leaks(const struct sys_self_check *b, const struct sys_self_check *a)
{
    printf("fuzz-state: free pages %lu -> %lu, heap bytes %lu -> %lu, objects %lu -> %lu, "
           "pinned pages %lu -> %lu, processes %lu -> %lu\n",
           b->free_pages, a->free_pages, b->heap_bytes, a->heap_bytes, b->live_objects,
           a->live_objects, b->pinned_pages, a->pinned_pages, b->live_processes, a->live_processes);
    return (a->free_pages != b->free_pages) + (a->heap_bytes != b->heap_bytes) +
           (a->live_objects != b->live_objects) + (a->pinned_pages != b->pinned_pages) +
           (a->live_processes != b->live_processes);
}

// Waits for a fuzzing process: its failures (a process the kernel killed
// or that could not start counts as one).
static uint64_t reap(HANDLE h)
{
    int status = -1;
    SysWait(h, &status);
    NtClose(h);
    if (status < 0 || status > MAX_FAILS) {
        printf("fuzz-state: a fuzzing process ended with status %d\n", status);
        return 1;
    }
    return (uint64_t)status;
}

static void summary(uint64_t calls, uint64_t sequences, unsigned leaked, uint64_t failures)
{
    printf("fuzz-state: %lu calls, %lu sequences, 0 panics, %u leaks, %lu invariant failures\n",
           calls, sequences, leaked, failures);
}

// NARROW_HAL_LOCK: ProfileTime kept started (a profile of this process,
// which only waits) while the fuzzing processes run. NULL: no anchor.
static HANDLE anchor_start(unsigned narrow)
{
    static ULONG bucket;
    HANDLE h = NULL;
    if (!(narrow & NARROW_HAL_LOCK))
        return NULL;
    if (!NT_SUCCESS(NtCreateProfile(&h, NtCurrentProcess(), (void *)USER_TEXT, 4, 2, &bucket, 4,
                                    ProfileTime, (KAFFINITY)-1)))
        return NULL;
    if (!NT_SUCCESS(NtStartProfile(h)))
        printf("fuzz-state: ProfileTime cannot be kept started\n");
    return h;
}

static void anchor_stop(HANDLE h)
{
    if (h)
        NtClose(h); // closing a started profile stops it
}

// Spawns fuzzing process i with its share of the calls; its sequences.
static uint64_t spawn_fuzzer(uint64_t seed, unsigned i, uint64_t share, bool p, unsigned narrow,
                             HANDLE *h)
{
    char s[24], n[24], c[24], w[24];
    snprintf(s, sizeof s, "%lu", seed);
    snprintf(n, sizeof n, "%u", i);
    snprintf(c, sizeof c, "%lu", share);
    snprintf(w, sizeof w, "%u", narrow);
    const char *argv[] = {self_path, "--child", s, n, c, w, NULL};
    if (!NT_SUCCESS(SysSpawn(self_path, argv, p ? SPAWN_PRIVILEGED : 0, h))) {
        printf("fuzz-state: cannot spawn a fuzzing process\n");
        *h = NULL;
        return 0;
    }
    return count_sequences(fuzzer_seed(seed, i), share, p);
}

static int driver(uint64_t calls, uint64_t seed, unsigned procs, unsigned narrow, bool beside)
{
    struct sys_self_check before, after;
    HANDLE warm, h[MAX_PROCS];
    bool priv = privileged_self();
    ULONG interval = 0;
    if (NT_SUCCESS(SysOpenProcess(SysGetPid(), &warm))) // the handle table grows once
        NtClose(warm);
    NtQueryIntervalProfile(ProfileTime, &interval);
    printf("fuzz-state: %lu calls from %u processes, seed %lu, narrowed %#x\n", calls, procs, seed,
           narrow);
    HANDLE anchor = anchor_start(narrow); // before the baseline: its process slot stays
    if (priv) // the finest interval to start with: samples even in short sequences
        NtSetIntervalProfile(1, ProfileTime);
    SysSelfCheck(&before);
    uint64_t sequences = 0, failures = 0;
    for (unsigned i = 0; i < procs; i++) {
        uint64_t share = calls / procs + (i == 0 ? calls % procs : 0);
        sequences +=
            spawn_fuzzer(seed, i, share, priv && (i % 2 == 1 || procs == 1), narrow, &h[i]);
    }
    for (unsigned i = 0; i < procs; i++)
        failures += h[i] ? reap(h[i]) : 1;
    if (priv && interval)
        NtSetIntervalProfile(interval, ProfileTime); // as it was
    SysSelfCheck(&after);
    anchor_stop(anchor);
    unsigned leaked = beside ? 0 : leaks(&before, &after);
    if (beside)
        printf("fuzz-state: no leak check: other programs run beside it\n");
    summary(calls, sequences, leaked, failures);
    return leaked || failures ? 1 : 0;
}

// SEED,LEN[,I...] (given whole, or split at the commas into arguments, as
// the kernel's init= option does): the seed, the length, the calls kept.
static int parse_replay(int argc, char **argv, uint64_t *seed, unsigned *len, uint8_t *keep)
{
    char spec[512] = "";
    for (int i = 0; i < argc; i++) {
        if (i)
            strcat(spec, ",");
        if (strlen(spec) + strlen(argv[i]) + 2 > sizeof spec)
            return -1;
        strcat(spec, argv[i]);
    }
    char *p = spec;
    *seed = strtoul(p, &p, 0);
    if (*p != ',')
        return -1;
    *len = (unsigned)strtoul(p + 1, &p, 0);
    if (*len == 0 || *len > SEQ_MAX)
        return -1;
    memset(keep, *p == ',' ? 0 : 1, SEQ_MAX);
    while (*p == ',') {
        unsigned i = (unsigned)strtoul(p + 1, &p, 0);
        if (i >= *len)
            return -1;
        keep[i] = 1;
    }
    return *p ? -1 : 0;
}

// The replay's process: the sequence with each call printed.
static int replay_child(int argc, char **argv)
{
    static struct fuzzer f;
    uint64_t seed;
    unsigned len;
    uint8_t keep[SEQ_MAX];
    if (parse_replay(argc, argv, &seed, &len, keep) != 0 || fuzzer_init(&f) != 0)
        return MAX_FAILS + 1;
    if ((seed & 1) != f.privileged)
        printf("fuzz-state: the sequence was made %s the privilege, this process has %s\n",
               seed & 1 ? "with" : "without", f.privileged ? "it" : "none");
    f.verbose = true;
    f.narrow = NARROW_DEFAULT;
    enum fail_kind k = run_sequence(&f, seed, len, keep);
    printf("fuzz-state: sequence %lu,%u: %s\n", seed, len, k ? f.fail.what : "no failure");
    return k ? 1 : 0;
}

static int replay(int argc, char **argv)
{
    uint64_t seed;
    unsigned len;
    uint8_t keep[SEQ_MAX];
    if (parse_replay(argc, argv, &seed, &len, keep) != 0) {
        printf("fuzz-state: --replay SEED,LEN[,I...]: LEN 1..%u, each I below LEN\n", SEQ_MAX);
        return 2;
    }
    struct sys_self_check before, after;
    HANDLE h;
    if (NT_SUCCESS(SysOpenProcess(SysGetPid(), &h)))
        NtClose(h);
    HANDLE anchor = anchor_start(NARROW_DEFAULT);
    SysSelfCheck(&before);
    const char *args[MAX_ARGS + 1] = {self_path, "--run"};
    for (int i = 0; i < argc && i + 2 < MAX_ARGS; i++)
        args[i + 2] = argv[i];
    bool p = (seed & 1) && privileged_self();
    if (!NT_SUCCESS(SysSpawn(self_path, args, p ? SPAWN_PRIVILEGED : 0, &h)))
        return 1;
    uint64_t failures = reap(h);
    SysSelfCheck(&after);
    anchor_stop(anchor);
    unsigned leaked = leaks(&before, &after), calls = 0;
    for (unsigned i = 0; i < len; i++)
        calls += keep[i];
    summary(calls, 1, leaked, failures);
    return leaked || failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[1], "--child") == 0)
        return fuzz_child(strtoul(argv[2], NULL, 0), (unsigned)strtoul(argv[3], NULL, 0),
                          strtoul(argv[4], NULL, 0), (unsigned)strtoul(argv[5], NULL, 0));
    if (argc >= 3 && strcmp(argv[1], "--run") == 0)
        return replay_child(argc - 2, argv + 2);
    if (argc >= 3 && strcmp(argv[1], "--replay") == 0)
        return replay(argc - 2, argv + 2);
    bool beside = argc > 1 && strcmp(argv[argc - 1], "--beside") == 0;
    argc -= beside;
    if (argc < 3) {
        printf("usage: fuzz_state CALLS SEED [PROCS [NARROW]] [--beside] | fuzz_state --replay "
               "SEED,LEN[,I...]\n");
        return 2;
    }
    unsigned procs = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 4;
    if (procs < 1 || procs > MAX_PROCS) {
        printf("fuzz-state: PROCS must be 1..%u\n", MAX_PROCS);
        return 2;
    }
    unsigned narrow = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 0) : NARROW_DEFAULT;
    return driver(strtoul(argv[1], NULL, 0), strtoul(argv[2], NULL, 0), procs, narrow, beside);
}
