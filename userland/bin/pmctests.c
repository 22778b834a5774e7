// pmctests: the NtPmc* system calls and /tmp from ring 3, every status of the
// table in docs/pmc-log.md, the log's records and its accounting, and call
// chains through frames a program broke on purpose.
//
//   pmctests [NAME...]     run the tests (whose names contain NAME), KTAP
//
// Each test runs in a child (lib/childtest.c); the driver checks that nothing
// leaked (the log is released and /tmp files removed by the tests or by the
// exit of their owner).
#include <childtest.h>
#include <clock.h>
#include <samplelog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define TEST_TIMEOUT_MS     60000
#define LOG_BUF             (256u << 10)
#define USER_STACK_TOP_USER 0x00007FFFFFF00000ull // kernel/core/addrspace.h: where the stack ends

static struct pmc_alloc params(uint32_t mode, uint32_t flags, uint32_t source, uint64_t count)
{
    return (struct pmc_alloc){source, mode, flags, PMC_CPU_ANY, count};
}

static NTSTATUS alloc(HANDLE *h, uint32_t mode, uint32_t flags, uint32_t source, uint64_t count)
{
    struct pmc_alloc a = params(mode, flags, source, count);
    return NtPmcAllocate(h, &a);
}

// The finest ProfileTime interval for a privileged test; restored by its caller.
static ULONG fast_sampling(void)
{
    ULONG old = 0;
    NtQueryIntervalProfile(ProfileTime, &old);
    EXPECT_STATUS(NtSetIntervalProfile(1221, ProfileTime), STATUS_SUCCESS);
    return old;
}

__attribute__((noinline)) static uint64_t busy(uint64_t n)
{
    uint64_t x = 1;
    while (n--)
        __asm__ volatile("add %1, %0; rol $3, %0" : "+r"(x) : "r"(n));
    return x;
}

static void spin_ms(uint64_t ms)
{
    struct sys_clock c0, c;
    SysClock(&c0);
    do {
        busy(20000);
        SysClock(&c);
    } while (c.ns - c0.ns < ms * 1000000ull);
}

// Reads the whole log into buf (at most LOG_BUF bytes). Bytes read.
static size_t read_log(uint8_t *buf)
{
    size_t total = 0, got;
    while (total < LOG_BUF && NT_SUCCESS(NtPmcReadLog(buf + total, LOG_BUF - total, &got)) && got)
        total += got;
    return total;
}

struct log_counts {
    uint64_t samples, lost, maps, kernel_map, exits, csw, user, bad, mine, truncated;
    uint64_t user_part_kernel; // frames of a chain's user part that are kernel addresses
    uint64_t exit_samples;     // of the last exit record
    uint64_t initialize;       // PMCLOG_INITIALIZE records; first_initialize: the first is one
    int first_initialize;
    uint64_t tsc_hz; // the time base it gives
    uint32_t exit_pid;
};

static struct log_counts count_log(const uint8_t *buf, size_t n, uint32_t pid)
{
    struct log_counts c = {0};
    struct samplelog log = {(uint8_t *)buf, n, NULL};
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(&log, &pos))) {
        switch (h->type) {
        case PMCLOG_SAMPLE: {
            const struct pmclog_sample *s = (const void *)h;
            c.samples++;
            c.mine += s->pid == pid;
            c.truncated += (s->flags & PMCLOG_SAMPLE_TRUNC) != 0;
            for (unsigned i = s->nkernel; i < s->nframes; i++)
                c.user_part_kernel += s->frames[i] >= USER_ADDRESS_LIMIT;
            break;
        }
        case PMCLOG_LOST: c.lost += ((const struct pmclog_lost *)h)->count; break;
        case PMCLOG_MAP:
            c.maps++;
            c.kernel_map += ((const struct pmclog_map *)h)->pid == 0 &&
                            !strcmp(((const struct pmclog_map *)h)->name, "kernel");
            break;
        case PMCLOG_EXIT:
            c.exits++;
            c.exit_pid = ((const struct pmclog_exit *)h)->pid;
            c.exit_samples = ((const struct pmclog_exit *)h)->value;
            break;
        case PMCLOG_CSW: c.csw++; break;
        case PMCLOG_INITIALIZE:
            c.initialize++;
            c.first_initialize |= h == (const void *)buf;
            c.tsc_hz = ((const struct pmclog_initialize *)h)->tsc_hz;
            break;
        case PMCLOG_USER: c.user += ((const struct pmclog_user *)h)->userdata == 0x5eed; break;
        default: c.bad++;
        }
    }
    c.bad += pos != n; // a damaged record stops the walk early
    return c;
}

static void expect_accounting(void)
{
    struct pmc_driver_stats st;
    EXPECT_STATUS(NtPmcGetDriverStats(&st), STATUS_SUCCESS);
    for (unsigned i = 0; i < st.ncpus && i < PMC_STATS_CPUS; i++)
        EXPECT(st.cpu[i].delivered == st.cpu[i].logged + st.cpu[i].lost,
               "cpu%u: delivered %lu != logged %lu + lost %lu", i, st.cpu[i].delivered,
               st.cpu[i].logged, st.cpu[i].lost);
}

// ---------------------------------------------------------------------------
// Allocation.

static void test_alloc_errors(void)
{
    HANDLE h;
    EXPECT_STATUS(alloc(&h, 0, 0, ProfileTime, 0), STATUS_PMC_BAD_MODE);
    EXPECT_STATUS(alloc(&h, 5, 0, ProfileTime, 0), STATUS_PMC_BAD_MODE);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0x100, ProfileTime, 0), STATUS_PMC_BAD_FLAGS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0x40, ProfileTime, 0), STATUS_PMC_BAD_FLAGS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, PMC_F_KERNEL, PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES), 0),
                  STATUS_PMC_LEVEL_UNSUPPORTED);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, PMC_F_USER, ProfileTime, 0), STATUS_PMC_LEVEL_UNSUPPORTED);
    EXPECT_STATUS(alloc(&h, PMC_MODE_SS, PMC_F_DESCENDANTS, ProfileTime, 0),
                  STATUS_PMC_FLAG_NEEDS_PROCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_SC, PMC_F_LOG_PROCEXIT, ProfileTime, 0),
                  STATUS_PMC_FLAG_NEEDS_PROCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, PMC_F_CALLCHAIN, ProfileTime, 0),
                  STATUS_PMC_CALLCHAIN_COUNTING);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0, ProfileSourceCount, 0), STATUS_PMC_UNKNOWN_SOURCE);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, 0, ProfileTotalCycles, 0),
                  STATUS_PMC_COUNTING_UNSUPPORTED);
    struct sys_profile_source rows[ProfileSourceCount];
    uint32_t n = 0;
    SysProfileSources(rows, ProfileSourceCount, &n);
    for (uint32_t i = 0; i < n; i++)
        if (!rows[i].supported) { // under TCG every counter source
            EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0, rows[i].source, 0),
                          STATUS_PMC_SOURCE_UNSUPPORTED);
            break;
        }
    struct pmc_alloc a = params(PMC_MODE_TS, 0, ProfileTime, 0);
    a.cpu = 0; // process scope follows the process: no CPU
    EXPECT_STATUS(NtPmcAllocate(&h, &a), STATUS_PMC_BAD_CPU);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0, ProfileTime, 1), STATUS_PMC_COUNT_TOO_SMALL);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0, ProfileTime, ~0ull), STATUS_PMC_COUNT_TOO_LARGE);
    EXPECT_STATUS(NtPmcAllocate(&h, (const struct pmc_alloc *)KERNEL_IMAGE),
                  STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtPmcAllocate((HANDLE *)KERNEL_IMAGE, &a), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_CALLCHAIN, ProfileTime, 12210), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcSetCount(h, 1), STATUS_PMC_COUNT_TOO_SMALL);
    EXPECT_STATUS(NtPmcSetCount(h, ~0ull), STATUS_PMC_COUNT_TOO_LARGE);
    EXPECT_STATUS(NtPmcSetCount(h, 2442), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart((HANDLE)4000), STATUS_INVALID_HANDLE);
}

static void test_alloc_system_cpu(void) // privileged
{
    HANDLE h;
    struct pmc_alloc a = params(PMC_MODE_SS, 0, ProfileTime, 0);
    a.cpu = 63;
    EXPECT_STATUS(NtPmcAllocate(&h, &a), STATUS_PMC_BAD_CPU);
    a.cpu = 0;
    EXPECT_STATUS(NtPmcAllocate(&h, &a), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_PMC_NOT_PROCESS_SCOPE);
    EXPECT_STATUS(NtPmcDetach(h, NtCurrentProcess()), STATUS_PMC_NOT_PROCESS_SCOPE);
    NtClose(h);
}

static void test_privilege(void) // unprivileged
{
    HANDLE h;
    EXPECT_STATUS(alloc(&h, PMC_MODE_SS, 0, ProfileTime, 0), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(alloc(&h, PMC_MODE_SC, 0, ProfileTime, 0), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_KERNEL, ProfileTime, 0), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_LEVELS, ProfileTime, 0), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_USER, ProfileTime, 0), STATUS_SUCCESS);
    NtClose(h);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_CALLCHAIN, ProfileTime, 0), STATUS_SUCCESS);
    NtClose(h);
}

// ---------------------------------------------------------------------------
// Attach and detach.

static void test_attach_errors(void)
{
    HANDLE h, parent, dead, kids[PMC_MAX_TARGETS_USER];
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, (HANDLE)4000), STATUS_INVALID_HANDLE);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_PMC_ALREADY_ATTACHED);
    EXPECT_STATUS(NtPmcDetach(h, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcDetach(h, NtCurrentProcess()), STATUS_PMC_NOT_ATTACHED);
    // Our parent (the driver) is not ours to profile.
    struct sys_process_info *me = find_process(SysGetPid());
    EXPECT(me != NULL, "not in the process list");
    if (me && NT_SUCCESS(SysOpenProcess(me->parent, &parent))) {
        EXPECT_STATUS(NtPmcAttach(h, parent), STATUS_ACCESS_DENIED);
        NtClose(parent);
    }
    int status;
    EXPECT_STATUS(spawn_child(0, &dead, "exit", "0"), STATUS_SUCCESS);
    SysWait(dead, &status);
    EXPECT_STATUS(NtPmcAttach(h, dead), STATUS_PROCESS_IS_TERMINATING);
    NtClose(dead);
    // One table of targets per PMC.
    unsigned n = 0;
    for (; n < PMC_MAX_TARGETS_USER; n++) {
        if (!NT_SUCCESS(spawn_child(SPAWN_SUSPENDED, &kids[n], "exit", "0")))
            break;
        EXPECT_STATUS(NtPmcAttach(h, kids[n]), STATUS_SUCCESS);
    }
    EXPECT(n == PMC_MAX_TARGETS_USER, "only %u children", n);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_PMC_TOO_MANY_TARGETS);
    for (unsigned i = 0; i < n; i++) {
        uint32_t pid;
        SysProcessId(kids[i], &pid);
        SysKill(pid);
        SysWait(kids[i], &status);
        NtClose(kids[i]);
    }
    NtClose(h);
}

// ---------------------------------------------------------------------------
// Start, stop, read, write, the log's rules.

static void test_start_errors(void)
{
    HANDLE h, c;
    uint64_t v;
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_CALLCHAIN, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_PMC_NO_TARGET);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_PMC_NO_LOG);
    struct pmc_log_config cfg = {16384, 32};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStop(h), STATUS_PMC_NOT_RUNNING);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_PMC_RUNNING);
    EXPECT_STATUS(NtPmcSetCount(h, 2442), STATUS_PMC_RUNNING);
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_PMC_LOG_IN_USE);
    EXPECT_STATUS(NtPmcConfigureLog(NULL), STATUS_PMC_LOG_IN_USE);
    EXPECT_STATUS(NtPmcRead(h, &v), STATUS_PMC_NOT_COUNTING);
    EXPECT_STATUS(NtPmcWrite(h, 1), STATUS_PMC_NOT_COUNTING);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStop(h), STATUS_PMC_NOT_RUNNING);
    EXPECT_STATUS(NtPmcConfigureLog(NULL), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcConfigureLog(NULL), STATUS_PMC_NO_LOG);
    // Counting: read while running, write only when stopped.
    EXPECT_STATUS(alloc(&c, PMC_MODE_TC, 0, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(c, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcWrite(c, 5), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcRead(c, &v), STATUS_SUCCESS);
    EXPECT(v == 5, "read %lu after writing 5", v);
    EXPECT_STATUS(NtPmcStart(c), STATUS_SUCCESS); // no log needed to count
    EXPECT_STATUS(NtPmcWrite(c, 0), STATUS_PMC_RUNNING);
    EXPECT_STATUS(NtPmcRead(c, (uint64_t *)KERNEL_IMAGE), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtPmcStop(c), STATUS_SUCCESS);
    NtClose(c);
    NtClose(h);
}

// Sampling PMCs of this process started, up to want (ProfileTime, each
// process scope on itself; a log configured first): how many started, and in
// *why the status that stopped it (STATUS_SUCCESS when all did). h[want + 1].
static unsigned start_samplers(HANDLE *h, unsigned want, NTSTATUS *why)
{
    struct pmc_log_config cfg = {PMC_LOG_RING_MIN, 0};
    unsigned n = 0;
    *why = NtPmcConfigureLog(&cfg);
    for (; NT_SUCCESS(*why) && n < want; n++) {
        *why = alloc(&h[n], PMC_MODE_TS, 0, ProfileTime, 0);
        if (NT_SUCCESS(*why))
            *why = NtPmcAttach(h[n], NtCurrentProcess());
        if (NT_SUCCESS(*why))
            *why = NtPmcStart(h[n]);
        if (!NT_SUCCESS(*why)) {
            NtClose(h[n]);
            break;
        }
    }
    return n;
}

static void test_too_many_running(void) // sampling PMCs: the limit is the sample path's
{
    HANDLE h[PMC_MAX_RUNNING_USER + 1];
    NTSTATUS s;
    unsigned n = start_samplers(h, PMC_MAX_RUNNING_USER, &s);
    EXPECT(n == PMC_MAX_RUNNING_UNPRIVILEGED_USER, "%u started, unprivileged", n);
    EXPECT_STATUS(s, STATUS_PMC_TOO_MANY_RUNNING);
    for (unsigned i = 0; i < n; i++)
        NtClose(h[i]); // closing stops
    NtPmcConfigureLog(NULL);
}

// ARG sampling PMCs of its own started, then held asleep until killed; if
// one is refused, it exits with the low byte of the status (0x19:
// STATUS_PMC_TOO_MANY_RUNNING).
static int helper_running_holder(const char *arg)
{
    static HANDLE h[PMC_MAX_RUNNING_USER + 1];
    NTSTATUS s;
    start_samplers(h, MIN((unsigned)strtoul(arg, NULL, 0), (unsigned)PMC_MAX_RUNNING_USER), &s);
    if (!NT_SUCCESS(s))
        return (int)(s & 0xFF);
    for (;;)
        SysSleep(1000);
}

// The user records of the log drained into buf (n bytes): 0x5eed ones, others.
static void count_user_records(const uint8_t *buf, size_t n, uint64_t *seed, uint64_t *other)
{
    struct samplelog log = {(uint8_t *)buf, n, NULL};
    size_t pos = 0;
    const struct pmclog_header *h;
    *seed = *other = 0;
    while ((h = samplelog_next(&log, &pos)))
        if (h->type == PMCLOG_USER)
            ++*(((const struct pmclog_user *)h)->userdata == 0x5eed ? seed : other);
}

// Another process beside the owner of a log (which has written 0x5eed into
// it): none of that log is its (it has none of its own), then a log of its
// own beside it, without the owner's record. The bits of its checks that failed.
static int helper_other_owner(const char *arg)
{
    (void)arg;
    struct pmc_log_config cfg = {0, 0};
    size_t got;
    uint8_t b[64];
    int bad = 0;
    bad |= (NtPmcReadLog(b, sizeof b, &got) != STATUS_PMC_NO_LOG) << 1;
    bad |= (NtPmcFlushLog() != STATUS_PMC_NO_LOG) << 2;
    bad |= (NtPmcWriteLog(1) != STATUS_PMC_NO_LOG) << 3;
    bad |= (NtPmcConfigureLog(NULL) != STATUS_PMC_NO_LOG) << 4;
    bad |= NtPmcConfigureLog(&cfg) != STATUS_SUCCESS;
    bad |= (NtPmcWriteLog(0x0bad) != STATUS_SUCCESS) << 5;
    uint8_t *buf = malloc(LOG_BUF);
    uint64_t seed, other;
    count_user_records(buf, buf ? read_log(buf) : 0, &seed, &other);
    bad |= (seed != 0 || other != 1) << 6;
    free(buf);
    return bad; // our exit releases our log
}

static void test_log_errors(void)
{
    uint8_t b[64];
    size_t got;
    struct pmc_log_config cfg = {4095, 0};
    EXPECT_STATUS(NtPmcReadLog(b, sizeof b, &got), STATUS_PMC_NO_LOG);
    EXPECT_STATUS(NtPmcFlushLog(), STATUS_PMC_NO_LOG);
    EXPECT_STATUS(NtPmcWriteLog(1), STATUS_PMC_NO_LOG);
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_PMC_BAD_LOG_SIZE);
    cfg = (struct pmc_log_config){PMC_LOG_RING_MAX + 4096, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_PMC_BAD_LOG_SIZE);
    cfg = (struct pmc_log_config){4096, PMC_DEPTH_MAX}; // cannot hold two full chains
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_PMC_BAD_LOG_SIZE);
    cfg = (struct pmc_log_config){0, PMC_DEPTH_MAX + 1};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_PMC_BAD_DEPTH);
    EXPECT_STATUS(NtPmcConfigureLog((const struct pmc_log_config *)KERNEL_IMAGE),
                  STATUS_ACCESS_VIOLATION);
    cfg = (struct pmc_log_config){4096, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS); // the smallest ring
    EXPECT_STATUS(NtPmcWriteLog(0x5eed), STATUS_SUCCESS);
    HANDLE other;
    int status = -1;
    EXPECT_STATUS(spawn_child(0, &other, "other_owner", NULL), STATUS_SUCCESS);
    SysWait(other, &status);
    NtClose(other);
    EXPECT(status == 0, "another process: bits %d of its checks failed", status);
    EXPECT_STATUS(NtPmcFlushLog(), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcReadLog(b, 8, &got), STATUS_BUFFER_TOO_SMALL); // no record is 8 bytes
    EXPECT_STATUS(NtPmcReadLog((void *)KERNEL_IMAGE, 4096, &got), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtPmcReadLog(b, sizeof b, (size_t *)KERNEL_IMAGE), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtPmcGetDriverStats((struct pmc_driver_stats *)KERNEL_IMAGE),
                  STATUS_ACCESS_VIOLATION);
    uint8_t *buf = malloc(LOG_BUF);
    uint64_t seed, other_records;
    count_user_records(buf, buf ? read_log(buf) : 0, &seed, &other_records);
    EXPECT(seed == 1 && other_records == 0, "our user record %lu times, the other's %lu", seed,
           other_records);
    free(buf);
    // Left configured: our exit releases it (the driver's leak check sees that).
}

// ---------------------------------------------------------------------------
// A log per owner: no process's log can be held against another's.

#define HOLDER_REFUSED 100 // log_holder's exit status: refused with STATUS_PMC_TOO_MANY_LOGS

// A log configured (ARG: its ring in KiB, default the smallest), then held
// asleep until killed; without one, its exit says why.
static int helper_log_holder(const char *arg)
{
    struct pmc_log_config cfg = {*arg ? (uint32_t)strtoul(arg, NULL, 0) * 1024 : PMC_LOG_RING_MIN,
                                 0};
    NTSTATUS s = NtPmcConfigureLog(&cfg);
    if (s == STATUS_PMC_TOO_MANY_LOGS)
        return HOLDER_REFUSED;
    if (!NT_SUCCESS(s))
        return (int)(s & 0xFF); // the low byte of the status: 0x36 STATUS_PMC_LOG_QUOTA
    for (;;)
        SysSleep(1000);
}

// Spawn `name arg` (flags: SysSpawn's) and wait until it sleeps (holds what
// it took) or has exited (*status then its exit status; else -1).
static HANDLE spawn_until_asleep(uint32_t flags, const char *name, const char *arg, int *status)
{
    HANDLE h = 0;
    uint32_t pid = 0;
    const struct sys_process_info *p = NULL;
    *status = -1;
    EXPECT_STATUS(spawn_child(flags, &h, name, arg), STATUS_SUCCESS);
    SysProcessId(h, &pid);
    for (uint64_t deadline = clock_ns() + 10000000000ull; pid && clock_ns() < deadline;) {
        p = find_process(pid);
        if (!p || p->state == PROC_SLEEPING || p->state == PROC_ZOMBIE)
            break;
        SysSleep(1);
    }
    EXPECT(p && (p->state == PROC_SLEEPING || p->state == PROC_ZOMBIE),
           "%s %s: neither asleep nor gone after 10 s", name, arg ? arg : "");
    if (p && p->state == PROC_ZOMBIE)
        SysWait(h, status);
    return h;
}

// Kill and reap what spawn_until_asleep left asleep.
static void reap(HANDLE *h, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint32_t pid = 0;
        int status;
        SysProcessId(h[i], &pid);
        SysKill(pid);
        SysWait(h[i], &status);
        NtClose(h[i]);
    }
}

// The samples of a log by PMC: how many, how many of pid, and whether all
// are one PMC's (*pmc then its id).
struct pmc_samples {
    uint64_t samples, of_pid;
    uint32_t pmc;
    bool one_pmc;
};

static struct pmc_samples samples_by_pmc(const uint8_t *buf, size_t n, uint32_t pid)
{
    struct pmc_samples r = {.one_pmc = true};
    struct samplelog log = {(uint8_t *)buf, n, NULL};
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(&log, &pos))) {
        const struct pmclog_sample *s = (const void *)h;
        if (h->type != PMCLOG_SAMPLE)
            continue;
        r.one_pmc &= r.samples == 0 || s->pmc == r.pmc;
        r.pmc = s->pmc;
        r.samples++;
        r.of_pid += s->pid == pid;
    }
    return r;
}

// The attacker (unprivileged): a log, a PMC sampling itself; asleep (the
// victim's signal to go on), then 300 ms on the CPU while the victim samples
// the system into its own log. Its log must hold its own samples only.
static int helper_log_attacker(const char *arg)
{
    (void)arg;
    EXPECT(!privileged(), "the attacker holds the privilege (booted with `privileged`?)");
    struct pmc_log_config cfg = {0, 0};
    HANDLE h = 0;
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, 0, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    SysSleep(50);
    spin_ms(300);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    uint8_t *buf = malloc(LOG_BUF);
    struct pmc_samples m = samples_by_pmc(buf, buf ? read_log(buf) : 0, SysGetPid());
    EXPECT(m.samples > 0 && m.one_pmc && m.of_pid == m.samples,
           "the attacker's log: %lu samples, %lu of itself, one PMC's: %d", m.samples, m.of_pid,
           m.one_pmc);
    expect_accounting();
    free(buf);
    NtClose(h);
    return failures;
}

// The victim (privileged), after the attacker configured its log: its own
// log and a system-scope sampling PMC succeed, and its log holds its PMC's
// samples only, of every process (the attacker's too).
static void test_log_beside_attacker(void) // privileged: system scope
{
    ULONG old = fast_sampling();
    int status;
    HANDLE attacker = spawn_until_asleep(0, "log_attacker", NULL, &status);
    EXPECT(status == -1, "the attacker exited early: %d", status);
    struct pmc_log_config cfg = {0, 0};
    HANDLE h = 0;
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_SS, 0, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    spin_ms(200);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    SysWait(attacker, &status);
    NtClose(attacker);
    EXPECT(status == 0, "the attacker: %d checks failed", status);
    uint8_t *buf = malloc(LOG_BUF);
    struct pmc_samples m = samples_by_pmc(buf, buf ? read_log(buf) : 0, SysGetPid());
    EXPECT(m.samples > 0 && m.of_pid > 0 && m.one_pmc,
           "the victim's log: %lu samples, %lu of itself, one PMC's: %d", m.samples, m.of_pid,
           m.one_pmc);
    expect_accounting();
    free(buf);
    NtClose(h);
    EXPECT_STATUS(NtPmcConfigureLog(NULL), STATUS_SUCCESS);
    NtSetIntervalProfile(old, ProfileTime);
}

// The slots: unprivileged holders take every log they may, then are refused;
// the privileged caller and one more privileged process still get one each;
// then the machine's logs are all taken, for everyone.
static void test_log_reserve(void) // privileged: the reserve's user
{
    HANDLE held[PMC_LOGS_MAX + 1];
    unsigned n = 0;
    int status = -1;
    while (n <= PMC_LOGS_MAX) {
        HANDLE h = spawn_until_asleep(0, "log_holder", NULL, &status);
        if (status != -1) {
            NtClose(h);
            break;
        }
        held[n++] = h;
    }
    EXPECT(n == PMC_LOGS_UNPRIVILEGED && status == HOLDER_REFUSED,
           "unprivileged processes hold %u logs (of %u), the next exits with %d", n,
           PMC_LOGS_UNPRIVILEGED, status);
    struct pmc_log_config cfg = {PMC_LOG_RING_MIN, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    HANDLE h = spawn_until_asleep(SPAWN_PRIVILEGED, "log_holder", NULL, &status);
    EXPECT(status == -1, "a second privileged process: no log (exit %d)", status);
    if (status == -1 && n <= PMC_LOGS_MAX)
        held[n++] = h;
    else
        NtClose(h);
    h = spawn_until_asleep(SPAWN_PRIVILEGED, "log_holder", NULL, &status);
    EXPECT(status == HOLDER_REFUSED, "a third privileged process, every log taken: exit %d",
           status);
    if (status == -1 && n <= PMC_LOGS_MAX)
        held[n++] = h;
    else
        NtClose(h);
    reap(held, n);
    EXPECT_STATUS(NtPmcConfigureLog(NULL), STATUS_SUCCESS);
}

// Unprivileged owners run at most their share of the sampling PMCs, the
// rest is the privileged owners' reserve: a privileged process starts the
// last quarter while unprivileged ones hold all they may.
static void test_running_reserve(void) // privileged: the reserve's user
{
    char share[16];
    int status;
    snprintf(share, sizeof share, "%u", PMC_MAX_RUNNING_UNPRIVILEGED_USER);
    HANDLE held[2];
    held[0] = spawn_until_asleep(0, "running_holder", share, &status);
    EXPECT(status == -1, "an unprivileged process starts %s: exit %d", share, status);
    held[1] = spawn_until_asleep(0, "running_holder", "1", &status);
    EXPECT(status == (STATUS_PMC_TOO_MANY_RUNNING & 0xFF),
           "one more for another unprivileged process: exit %d", status);
    HANDLE h[PMC_MAX_RUNNING_USER + 1];
    NTSTATUS s;
    unsigned reserve = PMC_MAX_RUNNING_USER - PMC_MAX_RUNNING_UNPRIVILEGED_USER;
    unsigned n = start_samplers(h, PMC_MAX_RUNNING_USER, &s);
    EXPECT(n == reserve, "the privileged process started %u, the reserve is %u", n, reserve);
    EXPECT_STATUS(s, STATUS_PMC_TOO_MANY_RUNNING);
    for (unsigned i = 0; i < n; i++)
        NtClose(h[i]);
    NtPmcConfigureLog(NULL);
    reap(held, 2);
}

// The unprivileged logs' rings share PMC_LOG_UNPRIVILEGED_BYTES per CPU: one
// of half of it and a page takes the half another one asks for.
static void test_log_quota(void)
{
    char kb[16];
    int status;
    snprintf(kb, sizeof kb, "%u", PMC_LOG_UNPRIVILEGED_BYTES / 2048 + 4);
    HANDLE big = spawn_until_asleep(0, "log_holder", kb, &status);
    EXPECT(status == -1, "a log of %s KiB: exit %d", kb, status);
    snprintf(kb, sizeof kb, "%u", PMC_LOG_UNPRIVILEGED_BYTES / 2048);
    HANDLE h = spawn_until_asleep(0, "log_holder", kb, &status);
    EXPECT(status == (STATUS_PMC_LOG_QUOTA & 0xFF), "another of %s KiB: exit %d", kb, status);
    if (status == -1)
        reap(&h, 1);
    else
        NtClose(h);
    reap(&big, 1);
}

// ---------------------------------------------------------------------------
// What the log says.

static void test_log_records(void) // privileged: the finest interval
{
    ULONG old = fast_sampling();
    HANDLE h;
    struct pmc_log_config cfg = {0, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_CALLCHAIN, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcWriteLog(0x5eed), STATUS_SUCCESS);
    spin_ms(60);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcFlushLog(), STATUS_SUCCESS);
    uint8_t *buf = malloc(LOG_BUF);
    size_t n = buf ? read_log(buf) : 0;
    struct log_counts c = count_log(buf, n, SysGetPid());
    EXPECT(c.samples > 100 && c.mine == c.samples, "%lu samples, %lu of this process", c.samples,
           c.mine);
    EXPECT(c.kernel_map == 1 && c.maps >= 2, "%lu map records, %lu of the kernel", c.maps,
           c.kernel_map);
    EXPECT(c.user == 1 && c.bad == 0 && c.lost == 0, "user %lu bad %lu lost %lu", c.user, c.bad,
           c.lost);
    struct sys_clock clk;
    SysClock(&clk);
    EXPECT(c.initialize == 1 && c.first_initialize && c.tsc_hz == clk.tsc_hz,
           "one PMCLOG_INITIALIZE record, first, with the TSC's %lu Hz (%lu, %lu)", clk.tsc_hz,
           c.initialize, c.tsc_hz);
    struct pmc_driver_stats st;
    NtPmcGetDriverStats(&st);
    uint64_t logged = 0;
    for (unsigned i = 0; i < st.ncpus && i < PMC_STATS_CPUS; i++)
        logged += st.cpu[i].logged;
    EXPECT(logged == c.samples, "driver logged %lu, log holds %lu", logged, c.samples);
    expect_accounting();
    free(buf);
    NtClose(h);
    NtPmcConfigureLog(NULL);
    NtSetIntervalProfile(old, ProfileTime);
}

static int helper_spin(const char *arg)
{
    spin_ms(strtoul(arg, NULL, 0));
    return 0;
}

static void test_descendants_exit_csw(void) // privileged
{
    ULONG old = fast_sampling();
    HANDLE h, kid;
    struct pmc_log_config cfg = {0, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(
        alloc(&h, PMC_MODE_TS,
              PMC_F_CALLCHAIN | PMC_F_DESCENDANTS | PMC_F_LOG_PROCEXIT | PMC_F_LOG_PROCCSW,
              ProfileTime, 0),
        STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    int status = -1;
    EXPECT_STATUS(spawn_child(0, &kid, "spin", "40"), STATUS_SUCCESS); // a future child
    uint32_t pid = 0;
    SysProcessId(kid, &pid);
    SysWait(kid, &status);
    NtClose(kid);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    uint8_t *buf = malloc(LOG_BUF);
    size_t n = buf ? read_log(buf) : 0;
    struct log_counts c = count_log(buf, n, pid);
    EXPECT(c.mine > 50, "the descendant has %lu samples", c.mine);
    EXPECT(c.exits == 1 && c.exit_pid == pid && c.exit_samples == c.mine,
           "%lu exit records, pid %u, %lu samples (want %u, %lu)", c.exits, c.exit_pid,
           c.exit_samples, pid, c.mine);
    EXPECT(c.csw >= 1, "no context-switch record");
    expect_accounting();
    free(buf);
    NtClose(h);
    NtPmcConfigureLog(NULL);
    NtSetIntervalProfile(old, ProfileTime);
}

static void test_counting(void) // privileged: the interval is known
{
    ULONG old = fast_sampling();
    HANDLE c;
    uint64_t v = 0;
    EXPECT_STATUS(alloc(&c, PMC_MODE_TC, 0, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(c, NtCurrentProcess()), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(c), STATUS_SUCCESS);
    spin_ms(30);
    EXPECT_STATUS(NtPmcStop(c), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcRead(c, &v), STATUS_SUCCESS);
    // Counting ProfileTime counts the ticks this process took: 30 ms on CPU
    // is at most about 245 periods of 122.1 us (fewer ticks where the host
    // ran the vCPU's timer late: those periods are missed, not counted).
    EXPECT(v >= 1 && v <= 260, "%lu ProfileTime ticks in 30 ms", v);
    NtClose(c);
    NtSetIntervalProfile(old, ProfileTime);
}

// The log drained and the PMC stopped while every CPU samples, with the
// smallest ring: booted with ProfileTime as NMI (profile_nmi=1) the samples
// land inside the drain's and the stop's own kernel code on this CPU, and
// in the middle of other writers' records. Every record read must be whole,
// and delivered = logged + lost on each CPU, the log's own lost records
// included. The driver prints how ProfileTime was delivered.
static size_t drain_counted(uint8_t *buf, struct log_counts *sum)
{
    size_t got = 0;
    if (!NT_SUCCESS(NtPmcReadLog(buf, LOG_BUF, &got)))
        return 0;
    struct log_counts c = count_log(buf, got, 0);
    sum->samples += c.samples;
    sum->lost += c.lost;
    sum->bad += c.bad;
    return got;
}

static void print_delivery(void)
{
    static char info[8192];
    size_t got = 0;
    if (NT_SUCCESS(SysPmcInfo(info, sizeof info - 1, &got))) {
        info[got < sizeof info ? got : sizeof info - 1] = 0;
        char *line = strstr(info, "ProfileTime delivery: "), *end = line ? strchr(line, '\n') : 0;
        if (end)
            *end = 0;
        printf("# %s\n", line ? line : "ProfileTime delivery: not in pmc info");
    }
}

static void test_drain_while_sampling(void) // privileged: system scope, the finest interval
{
    ULONG old = fast_sampling();
    struct sys_info si;
    SysInfo(&si);
    struct pmc_log_config cfg = {PMC_LOG_RING_MIN, 0};
    HANDLE h, kid[PMC_STATS_CPUS];
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_SS, PMC_F_CALLCHAIN | PMC_F_KERNEL, ProfileTime, 0),
                  STATUS_SUCCESS);
    unsigned kids = si.ncpus < PMC_STATS_CPUS ? si.ncpus : PMC_STATS_CPUS;
    for (unsigned i = 0; i < kids; i++)
        EXPECT_STATUS(spawn_child(0, &kid[i], "spin", "80"), STATUS_SUCCESS);
    uint8_t *buf = malloc(LOG_BUF);
    struct log_counts sum = {0};
    struct sys_clock c0, now;
    SysClock(&c0);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    do { // 60 ms of draining, the spinners running (on -smp 1 between them)
        if (buf)
            drain_counted(buf, &sum);
        SysClock(&now);
    } while (now.ns - c0.ns < 60 * 1000000ull);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS); // while the spinners still run
    for (unsigned i = 0; i < kids; i++) {
        int status = -1;
        SysWait(kid[i], &status);
        NtClose(kid[i]);
    }
    EXPECT_STATUS(NtPmcFlushLog(), STATUS_SUCCESS);
    while (buf && drain_counted(buf, &sum))
        ;
    struct pmc_driver_stats st;
    NtPmcGetDriverStats(&st);
    uint64_t logged = 0, lost = 0;
    for (unsigned i = 0; i < st.ncpus && i < PMC_STATS_CPUS; i++)
        logged += st.cpu[i].logged, lost += st.cpu[i].lost;
    print_delivery();
    printf("# %lu samples read, %lu lost, on %u CPUs\n", sum.samples, sum.lost, kids);
    EXPECT(sum.bad == 0, "%lu damaged records", sum.bad);
    EXPECT(sum.samples + sum.lost >= 50 && sum.samples == logged && sum.lost == lost,
           "log: %lu samples, %lu lost; driver: %lu logged, %lu lost", sum.samples, sum.lost,
           logged, lost);
    expect_accounting();
    free(buf);
    NtClose(h);
    NtPmcConfigureLog(NULL);
    NtSetIntervalProfile(old, ProfileTime);
}

// ---------------------------------------------------------------------------
// Broken frames: the chain is cut and counted, the kernel does not fault.

// Spins for ms with rbp = fp: the sampled chain starts from a frame pointer
// that is not one.
__attribute__((noinline)) static void spin_with_rbp(uint64_t fp, uint64_t ms)
{
    struct sys_clock c0, c;
    SysClock(&c0);
    do {
        uint64_t n = 200000;
        __asm__ volatile("push %%rbp\n\t"
                         "mov %1, %%rbp\n\t"
                         "1: dec %0\n\t"
                         "jnz 1b\n\t"
                         "pop %%rbp"
                         : "+r"(n)
                         : "r"(fp)
                         : "cc", "memory");
        SysClock(&c);
    } while (c.ns - c0.ns < ms * 1000000ull);
}

// Ring 3 may point rsp and rbp anywhere, the kernel's half included (it
// faults only when it uses them): the walk must not read the kernel's memory
// through them, and a kernel-mode load would not fault.
__attribute__((noinline)) static void spin_with_kernel_stack(uint64_t ms)
{
    struct sys_clock c0, c;
    SysClock(&c0);
    do {
        uint64_t n = 200000, saved;
        __asm__ volatile("mov %%rsp, %1\n\t"
                         "push %%rbp\n\t"
                         "mov %2, %%rsp\n\t"
                         "lea 16(%%rsp), %%rbp\n\t"
                         "1: dec %0\n\t"
                         "jnz 1b\n\t"
                         "mov %1, %%rsp\n\t"
                         "mov -8(%%rsp), %%rbp"
                         : "+r"(n), "=&r"(saved)
                         : "r"((uint64_t)KERNEL_IMAGE)
                         : "cc", "memory");
        SysClock(&c);
    } while (c.ns - c0.ns < ms * 1000000ull);
}

static void test_broken_frames(void) // privileged
{
    ULONG old = fast_sampling();
    HANDLE h;
    struct pmc_log_config cfg = {0, 0};
    struct pmc_driver_stats before, after;
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_CALLCHAIN, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, NtCurrentProcess()), STATUS_SUCCESS);
    NtPmcGetDriverStats(&before);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    // An unmapped stack: a frame chain into pages that are gone (above the
    // stack, so that the frames still look like outer ones).
    void *area = (void *)(USER_STACK_TOP_USER + 16 * PAGE);
    EXPECT_STATUS(SysMap(&area, 2 * PAGE, PROT_READ | PROT_WRITE), STATUS_SUCCESS);
    uint64_t *frame = (uint64_t *)((uint8_t *)area + PAGE);
    frame[0] = 0;
    frame[1] = 0x400000;
    EXPECT_STATUS(SysUnmap(area, 2 * PAGE), STATUS_SUCCESS);
    spin_with_rbp((uint64_t)frame, 25);
    spin_with_rbp(0x1234567, 15);             // misaligned
    spin_with_rbp(KERNEL_IMAGE, 15);          // the kernel's
    spin_with_rbp(0x0000700000000000ull, 15); // never mapped
    spin_with_rbp(0x0000000000000008ull, 15); // below the stack pointer
    spin_with_kernel_stack(25);               // rsp and rbp in the kernel's half
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    NtPmcGetDriverStats(&after);
    uint8_t *buf = malloc(LOG_BUF);
    size_t n = buf ? read_log(buf) : 0;
    struct log_counts c = count_log(buf, n, SysGetPid());
    EXPECT(c.bad == 0 && c.samples > 50, "%lu samples, %lu bad records", c.samples, c.bad);
    EXPECT(c.truncated > 20, "%lu truncated chains of %lu", c.truncated, c.samples);
    EXPECT(c.user_part_kernel == 0, "%lu kernel words logged as user frames", c.user_part_kernel);
    EXPECT(after.chains_truncated - before.chains_truncated == c.truncated,
           "driver: %lu truncated, log: %lu", after.chains_truncated - before.chains_truncated,
           c.truncated);
    EXPECT(after.user_frames_unread > before.user_frames_unread,
           "no unreadable user frame counted");
    expect_accounting();
    free(buf);
    NtClose(h);
    NtPmcConfigureLog(NULL);
    NtSetIntervalProfile(old, ProfileTime);
}

// A sampled process that exits and one that is killed mid-chain: the log of
// its sampler stays whole.
static void test_exit_while_sampled(void) // privileged
{
    ULONG old = fast_sampling();
    HANDLE h, kid;
    struct pmc_log_config cfg = {0, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, PMC_F_CALLCHAIN | PMC_F_LOG_PROCEXIT, ProfileTime, 0),
                  STATUS_SUCCESS);
    EXPECT_STATUS(spawn_child(0, &kid, "spin", "1000"), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, kid), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    SysSleep(30);
    uint32_t pid;
    int status;
    SysProcessId(kid, &pid);
    EXPECT_STATUS(SysKill(pid), STATUS_SUCCESS);
    SysWait(kid, &status);
    EXPECT(status == EXIT_STATUS_KILLED, "status %d", status);
    NtClose(kid);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    uint8_t *buf = malloc(LOG_BUF);
    size_t n = buf ? read_log(buf) : 0;
    struct log_counts c = count_log(buf, n, pid);
    EXPECT(c.bad == 0 && c.mine > 0 && c.exits == 1 && c.exit_pid == pid,
           "bad %lu, samples %lu, exits %lu", c.bad, c.mine, c.exits);
    expect_accounting();
    free(buf);
    NtClose(h);
    NtSetIntervalProfile(old, ProfileTime);
    // The log stays configured: our exit must release it.
}

// Each of three PMCs' samples of this process in a log, told apart by the
// PMC's id, the three in the order they were allocated (ids are given in order).
struct pmc_tally {
    uint32_t id[3];
    uint64_t got[3];
    uint64_t others; // samples of other PMCs or processes
};

static void tally_by_pmc(uint8_t *buf, size_t n, struct pmc_tally *t)
{
    struct samplelog log = {buf, n, NULL};
    size_t pos = 0;
    const struct pmclog_header *rec;
    *t = (struct pmc_tally){0};
    while ((rec = samplelog_next(&log, &pos))) {
        if (rec->type != PMCLOG_SAMPLE)
            continue;
        const struct pmclog_sample *smp = (const void *)rec;
        unsigned k = 0;
        while (k < 3 && t->id[k] && t->id[k] != smp->pmc)
            k++;
        if (k == 3 || smp->pid != (uint32_t)SysGetPid()) {
            t->others++;
            continue;
        }
        t->id[k] = smp->pmc;
        t->got[k]++;
    }
    // Sort the three by id: the order they were allocated in.
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = i + 1; j < 3; j++)
            if (t->id[j] < t->id[i]) {
                uint32_t ti = t->id[i];
                uint64_t tg = t->got[i];
                t->id[i] = t->id[j];
                t->got[i] = t->got[j];
                t->id[j] = ti;
                t->got[j] = tg;
            }
}

// Three sampling PMCs on one process and source, then two: a plan whose
// samplers are three chained, then two. Each PMC's
// samples are told apart by its id in the records (ids are given in order).
static void test_several_pmcs(void) // privileged
{
    ULONG old = fast_sampling();
    HANDLE h[3];
    static const uint64_t count[3] = {0, 0, 2 * 1221}; // every tick, every tick, every other
    struct pmc_log_config cfg = {0, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    for (unsigned i = 0; i < 3; i++) {
        EXPECT_STATUS(alloc(&h[i], PMC_MODE_TS, 0, ProfileTime, count[i]), STATUS_SUCCESS);
        EXPECT_STATUS(NtPmcAttach(h[i], NtCurrentProcess()), STATUS_SUCCESS);
        EXPECT_STATUS(NtPmcStart(h[i]), STATUS_SUCCESS);
    }
    spin_ms(60);
    EXPECT_STATUS(NtPmcStop(h[0]), STATUS_SUCCESS);
    spin_ms(60);
    EXPECT_STATUS(NtPmcDetach(h[2], NtCurrentProcess()), STATUS_SUCCESS);
    spin_ms(30); // only h[1] samples now
    EXPECT_STATUS(NtPmcStop(h[1]), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStop(h[2]), STATUS_SUCCESS);
    uint8_t *buf = malloc(LOG_BUF);
    size_t n = buf ? read_log(buf) : 0;
    struct pmc_tally t;
    tally_by_pmc(buf, n, &t);
    const uint64_t *got = t.got;
    printf("# samples: %lu, %lu, %lu (every tick, every tick, every other)\n", got[0], got[1],
           got[2]);
    EXPECT(t.others == 0 && t.id[0] && t.id[1] && t.id[2], "%lu foreign samples; ids %u %u %u",
           t.others, t.id[0], t.id[1], t.id[2]);
    EXPECT(got[0] > 20 && got[1] > got[0] + 20,
           "every tick: %lu samples while three ran, %lu with the later ones", got[0], got[1]);
    // h[2] took every other tick of the 120 ms that h[1] saw before the
    // detach: each CPU's phase may leave one tick over.
    uint64_t twice = 2 * got[2];
    uint64_t after_detach = got[1] > twice ? got[1] - twice : 0;
    EXPECT(got[2] > 10 && twice <= got[1] && after_detach > 10,
           "every other tick: %lu, against %lu every tick (%lu after the detach)", got[2], got[1],
           after_detach);
    expect_accounting();
    free(buf);
    for (unsigned i = 0; i < 3; i++)
        NtClose(h[i]);
    NtPmcConfigureLog(NULL);
    NtSetIntervalProfile(old, ProfileTime);
}

// ---------------------------------------------------------------------------
// /tmp.

static void test_tmp(void)
{
    char buf[32];
    size_t got = 0;
    EXPECT_STATUS(SysTmpWrite("pmc.log", "x", 1, 0), STATUS_TMP_BAD_NAME);
    EXPECT_STATUS(SysTmpWrite("/tmp/", "x", 1, 0), STATUS_TMP_BAD_NAME);
    EXPECT_STATUS(SysTmpWrite("/tmp/a/b", "x", 1, 0), STATUS_TMP_BAD_NAME);
    EXPECT_STATUS(SysTmpWrite("/tmp/0123456789012345678901234567890123456789012345", "x", 1, 0),
                  STATUS_TMP_BAD_NAME);
    EXPECT_STATUS(SysTmpWrite("/tmp/t", "x", 1, 0x80), STATUS_INVALID_PARAMETER);
    EXPECT_STATUS(SysTmpWrite((const char *)KERNEL_IMAGE, "x", 1, 0), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysTmpRead("/tmp/pmctests-none", 0, buf, sizeof buf, &got),
                  STATUS_OBJECT_NAME_NOT_FOUND);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests-none", NULL, 0, TMP_REMOVE),
                  STATUS_OBJECT_NAME_NOT_FOUND);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", "abc", 3, TMP_TRUNCATE), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", (void *)KERNEL_IMAGE, 3, 0),
                  STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", (void *)0x400000, TMP_BYTES_MAX + 1ull, 0),
                  STATUS_TMP_FULL);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", "def", 3, 0), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpRead("/tmp/pmctests", 1, buf, sizeof buf, &got), STATUS_SUCCESS);
    EXPECT(got == 5 && !memcmp(buf, "bcdef", 5), "read %lu bytes", got);
    EXPECT_STATUS(SysTmpRead("/tmp/pmctests", 0, (void *)KERNEL_IMAGE, 4, &got),
                  STATUS_ACCESS_VIOLATION);
    // A replace that fails (no room, past the share, a bad buffer) loses nothing.
    EXPECT_STATUS(
        SysTmpWrite("/tmp/pmctests", (void *)0x400000, TMP_BYTES_MAX + 1ull, TMP_TRUNCATE),
        STATUS_TMP_FULL);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", (void *)0x400000, TMP_SHARE_UNPRIVILEGED + 4096ull,
                              TMP_TRUNCATE),
                  STATUS_QUOTA_EXCEEDED);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", (void *)KERNEL_IMAGE, 3, TMP_TRUNCATE),
                  STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysTmpRead("/tmp/pmctests", 0, buf, sizeof buf, &got), STATUS_SUCCESS);
    EXPECT(got == 6 && !memcmp(buf, "abcdef", 6), "after refused replaces: %lu bytes", got);
    // The owner replaces its own file, with a mode of its choosing.
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", "xy", 2, TMP_TRUNCATE | TMP_OTHERS_READ),
                  STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpRead("/tmp/pmctests", 0, buf, sizeof buf, &got), STATUS_SUCCESS);
    EXPECT(got == 2 && !memcmp(buf, "xy", 2), "after the replace: %lu bytes", got);
    EXPECT_STATUS(SysTmpWrite("/tmp/pmctests", NULL, 0, TMP_REMOVE), STATUS_SUCCESS);
}

// An attacker beside a victim (lib/abi/syscalls.h's rules for /tmp): the
// privileged victim's files, private, shared, and one the attacker created
// first and the victim replaced; the unprivileged attacker's reads, appends,
// replaces and removes, each refused with its status, then /tmp filled as
// far as the attacker may. The victim's files must be as it wrote them, and
// its next writes must succeed.
#define VICTIM_FILE "/tmp/pmctests-victim" // private (mode 0)
#define SHARED_FILE "/tmp/pmctests-shared" // TMP_OTHERS_READ | TMP_OTHERS_APPEND
#define SQUAT_FILE  "/tmp/pmctests-squat"  // the attacker's, shared, then replaced by the victim
#define FILL_PREFIX "/tmp/pmctests-fill-"
#define FILL_CHUNK  (1u << 20)

static const char victim_text[] = "the privileged user's recording";

// New files FILL_PREFIX0, 1, ... of FILL_CHUNK bytes, then of halves of it
// down to 4096, each size until it is refused: the bytes written; *why: the
// last refusal.
static size_t tmp_fill(NTSTATUS *why)
{
    uint8_t *buf = malloc(FILL_CHUNK);
    size_t total = 0, chunk = FILL_CHUNK;
    *why = buf ? STATUS_SUCCESS : STATUS_NO_MEMORY;
    if (buf)
        memset(buf, 0xa5, FILL_CHUNK); // touched: a system call does not fault pages in
    for (unsigned n = 0; buf && chunk >= 4096;) {
        char name[TMP_NAME_MAX];
        snprintf(name, sizeof name, FILL_PREFIX "%u", n);
        NTSTATUS s = SysTmpWrite(name, buf, chunk, TMP_TRUNCATE);
        if (NT_SUCCESS(s)) {
            total += chunk;
            n++;
        } else {
            *why = s;
            chunk /= 2;
        }
    }
    free(buf);
    return total;
}

// The attacker, unprivileged. "squat": SQUAT_FILE made first, open to all;
// "attack": every attack on the victim's files, then the fill. Exit status:
// its failed checks.
static int helper_tmp_attacker(const char *arg)
{
    char buf[64];
    size_t got = 1;
    EXPECT(!privileged(), "the attacker holds the privilege (booted with `privileged`?)");
    if (strcmp(arg, "squat") == 0) {
        EXPECT_STATUS(
            SysTmpWrite(SQUAT_FILE, "bait", 4, TMP_TRUNCATE | TMP_OTHERS_READ | TMP_OTHERS_APPEND),
            STATUS_SUCCESS);
        return failures;
    }
    EXPECT_STATUS(SysTmpRead(VICTIM_FILE, 0, buf, sizeof buf, &got), STATUS_ACCESS_DENIED);
    EXPECT(got == 0, "a refused read says it got %lu bytes", got);
    EXPECT_STATUS(SysTmpWrite(VICTIM_FILE, "forged", 6, 0), STATUS_ACCESS_DENIED);
    EXPECT_STATUS(SysTmpWrite(VICTIM_FILE, "forged", 6, TMP_TRUNCATE),
                  STATUS_OBJECT_NAME_COLLISION);
    EXPECT_STATUS(SysTmpWrite(VICTIM_FILE, "forged", 6, TMP_TRUNCATE | TMP_OTHERS_READ),
                  STATUS_OBJECT_NAME_COLLISION);
    EXPECT_STATUS(SysTmpWrite(VICTIM_FILE, NULL, 0, TMP_REMOVE), STATUS_ACCESS_DENIED);
    // The squatted name is the victim's now, private: the bait's mode is gone.
    EXPECT_STATUS(SysTmpRead(SQUAT_FILE, 0, buf, sizeof buf, &got), STATUS_ACCESS_DENIED);
    EXPECT_STATUS(SysTmpWrite(SQUAT_FILE, "forged", 6, 0), STATUS_ACCESS_DENIED);
    // The shared file: read and appended to, as its mode says; never replaced
    // nor removed.
    EXPECT_STATUS(SysTmpRead(SHARED_FILE, 0, buf, sizeof buf, &got), STATUS_SUCCESS);
    EXPECT(got == sizeof victim_text - 1 && !memcmp(buf, victim_text, got),
           "the shared file: %lu bytes", got);
    EXPECT_STATUS(SysTmpWrite(SHARED_FILE, "+", 1, 0), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpWrite(SHARED_FILE, "forged", 6, TMP_TRUNCATE),
                  STATUS_OBJECT_NAME_COLLISION);
    EXPECT_STATUS(SysTmpWrite(SHARED_FILE, NULL, 0, TMP_REMOVE), STATUS_ACCESS_DENIED);
    NTSTATUS why;
    size_t filled = tmp_fill(&why);
    printf("# attacker: %lu bytes in /tmp, then %s\n", filled, nt_status_name(why));
    EXPECT(why == STATUS_QUOTA_EXCEEDED && filled == TMP_SHARE_UNPRIVILEGED,
           "filled %lu bytes of a share of %u, then %s", filled, TMP_SHARE_UNPRIVILEGED,
           nt_status_name(why));
    return failures;
}

// What name holds is want (len bytes).
static void expect_tmp(const char *name, const char *want, size_t len)
{
    char buf[64];
    size_t got = 0;
    EXPECT_STATUS(SysTmpRead(name, 0, buf, sizeof buf, &got), STATUS_SUCCESS);
    EXPECT(got == len && !memcmp(buf, want, len), "%s: %lu bytes, not %lu as written", name, got,
           len);
}

static void run_attacker(const char *phase)
{
    HANDLE h;
    int status = -1;
    EXPECT_STATUS(spawn_child(0, &h, "tmp_attacker", phase), STATUS_SUCCESS);
    SysWait(h, &status);
    NtClose(h);
    EXPECT(status == 0, "the attacker's %s: %d checks failed", phase, status);
}

static void test_tmp_owners(void) // privileged: the victim
{
    const size_t n = sizeof victim_text - 1;
    run_attacker("squat");
    EXPECT_STATUS(SysTmpWrite(VICTIM_FILE, victim_text, n, TMP_TRUNCATE), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpWrite(SQUAT_FILE, victim_text, n, TMP_TRUNCATE), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpWrite(SHARED_FILE, victim_text, n,
                              TMP_TRUNCATE | TMP_OTHERS_READ | TMP_OTHERS_APPEND),
                  STATUS_SUCCESS);
    run_attacker("attack");
    expect_tmp(VICTIM_FILE, victim_text, n);
    expect_tmp(SQUAT_FILE, victim_text, n);
    expect_tmp(SHARED_FILE, "the privileged user's recording+", n + 1);
    // The attacker's files fill its whole share: the victim writes on, into
    // the reserve, and may remove what the attacker left.
    uint8_t *more = malloc(FILL_CHUNK);
    if (more)
        memset(more, 0x5a, FILL_CHUNK);
    EXPECT(more != NULL, "no memory");
    EXPECT_STATUS(SysTmpWrite(VICTIM_FILE, more, more ? FILL_CHUNK : 0, 0), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpWrite(SQUAT_FILE, more, more ? FILL_CHUNK : 0, TMP_TRUNCATE),
                  STATUS_SUCCESS);
    free(more);
    unsigned removed = 0;
    for (char name[TMP_NAME_MAX];; removed++) {
        snprintf(name, sizeof name, FILL_PREFIX "%u", removed);
        if (SysTmpWrite(name, NULL, 0, TMP_REMOVE) != STATUS_SUCCESS)
            break;
    }
    EXPECT(removed > 0, "no file of the attacker's to remove");
    EXPECT_STATUS(SysTmpWrite(VICTIM_FILE, NULL, 0, TMP_REMOVE), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpWrite(SQUAT_FILE, NULL, 0, TMP_REMOVE), STATUS_SUCCESS);
    EXPECT_STATUS(SysTmpWrite(SHARED_FILE, NULL, 0, TMP_REMOVE), STATUS_SUCCESS);
}

// ---------------------------------------------------------------------------

// ARG rounds of 50 system calls after a short computation: most of the time
// in ring 0, some in ring 3 (a fixed amount of work, not of time: under TCG
// the host decides how much of a millisecond a vCPU gets).
static int helper_syscalls(const char *arg)
{
    for (unsigned long n = strtoul(arg, NULL, 0); n; n--) {
        busy(2000);
        for (int i = 0; i < 50; i++)
            SysGetPid();
    }
    return 0;
}

struct level_counts {
    uint64_t samples, user_flag, user_ip;
};

// The samples of a log by the privilege level their IP was in (flag and address).
static struct level_counts count_levels(const uint8_t *buf, size_t n)
{
    struct level_counts r = {0};
    struct samplelog log = {(uint8_t *)buf, n, NULL};
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(&log, &pos))) {
        const struct pmclog_sample *s = (const void *)h;
        if (h->type != PMCLOG_SAMPLE || s->nframes == 0)
            continue;
        r.samples++;
        r.user_flag += (s->flags & PMCLOG_SAMPLE_USER) != 0;
        r.user_ip += s->frames[0] < USER_ADDRESS_LIMIT;
    }
    return r;
}

// A child making system calls sampled by ProfileTime in one level (flags):
// its samples, by level.
static struct level_counts sample_child_in(uint32_t flags)
{
    HANDLE h = 0, kid = 0;
    struct pmc_log_config cfg = {0, 0};
    EXPECT_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TS, flags, ProfileTime, 0), STATUS_SUCCESS);
    EXPECT_STATUS(spawn_child(SPAWN_SUSPENDED, &kid, "syscalls", "3000"), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAttach(h, kid), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    int status = -1;
    EXPECT_STATUS(SysResume(kid), STATUS_SUCCESS);
    SysWait(kid, &status);
    NtClose(kid);
    EXPECT(status == 0, "the child exits with %d", status);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    uint8_t *buf = malloc(LOG_BUF);
    size_t n = buf ? read_log(buf) : 0;
    struct level_counts r = count_levels(buf, n);
    expect_accounting();
    free(buf);
    NtClose(h);
    NtPmcConfigureLog(NULL);
    return r;
}

// perf's :u and :k on ProfileTime (the timer ticks in both levels): a PMC
// with PMC_F_USER logs only ring-3 samples, one with PMC_F_KERNEL only
// ring-0 ones, and each gets some from a child that spends time in both.
static void test_level_sampling(void) // privileged: ring 0 and the finest interval
{
    ULONG old = fast_sampling();
    struct level_counts u = sample_child_in(PMC_F_USER), k = sample_child_in(PMC_F_KERNEL);
    EXPECT(u.samples >= 10 && u.user_flag == u.samples && u.user_ip == u.samples,
           ":u: %lu samples, %lu flagged ring 3, %lu with a user IP", u.samples, u.user_flag,
           u.user_ip);
    EXPECT(k.samples >= 10 && k.user_flag == 0 && k.user_ip == 0,
           ":k: %lu samples, %lu flagged ring 3, %lu with a user IP", k.samples, k.user_flag,
           k.user_ip);
    NtSetIntervalProfile(old, ProfileTime);
}

static int helper_exit(const char *arg)
{
    return atoi(arg);
}

static const struct child_helper helpers[] = {
    CHILD_HELPER(exit),         CHILD_HELPER(spin),           CHILD_HELPER(syscalls),
    CHILD_HELPER(other_owner),  CHILD_HELPER(tmp_attacker),   CHILD_HELPER(log_holder),
    CHILD_HELPER(log_attacker), CHILD_HELPER(running_holder),
};

static const struct child_test tests[] = {
    CHILD_TEST(alloc_errors),
    CHILD_TEST_PRIVILEGED(alloc_system_cpu),
    CHILD_TEST(privilege),
    CHILD_TEST(attach_errors),
    CHILD_TEST(start_errors),
    CHILD_TEST(too_many_running),
    CHILD_TEST(log_errors),
    CHILD_TEST_PRIVILEGED(log_beside_attacker),
    CHILD_TEST_PRIVILEGED(log_reserve),
    CHILD_TEST_PRIVILEGED(running_reserve),
    CHILD_TEST(log_quota),
    CHILD_TEST_PRIVILEGED(log_records),
    CHILD_TEST_PRIVILEGED(descendants_exit_csw),
    CHILD_TEST_PRIVILEGED(counting),
    CHILD_TEST_PRIVILEGED(broken_frames),
    CHILD_TEST_PRIVILEGED(exit_while_sampled),
    CHILD_TEST_PRIVILEGED(several_pmcs),
    CHILD_TEST_PRIVILEGED(drain_while_sampling),
    CHILD_TEST_PRIVILEGED(level_sampling),
    CHILD_TEST(tmp),
    CHILD_TEST_PRIVILEGED(tmp_owners),
};

static struct suite suite = {
    SUITE("pmctests", helpers, tests, TEST_TIMEOUT_MS),
    .driver.timed = 1,
};

SUITE_MAIN(suite)
