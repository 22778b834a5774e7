// etwtests: NT's per-logger PMC counters from ring 3 (lib/abi/etw.h), run as init
// (privileged): NtQuerySystemInformation's source list, a trace logger's
// counter and event lists set with NtSetSystemInformation, the PMCLOG_HOOK
// records its hooks write (system-call entry and exit, demand-zero page
// faults, context switches, process exit, the profile interrupt) with the
// counters' raw values in list order, and every bad input's status.
//
//   etwtests                  every test, KTAP lines, "etwtests: N passed, N failed"
//   etwtests --unprivileged   the privileged calls, each refused (exit 0 when all are)
//   etwtests --exit N         exits with status N
#include <childtest.h>
#include <nt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define PAGE    4096
#define LOG_BUF (256u << 10)

static int checks, failed;
static uint8_t logbuf[LOG_BUF];

#define CHECK(cond, ...) \
    do { \
        checks++; \
        int ok_ = (cond); \
        printf("%sok %d - ", ok_ ? "" : "not ", checks); \
        printf(__VA_ARGS__); \
        printf("\n"); \
        failed += !ok_; \
    } while (0)

#define CHECK_STATUS(call, want, what) \
    do { \
        NTSTATUS got_ = (call); \
        CHECK(got_ == (want), "%s: %s (want %s)", what, nt_status_name(got_), \
              nt_status_name(want)); \
    } while (0)

// A list set (0x0E or 0x0F) of n entries.
static NTSTATUS set_list(uint32_t sub, TRACEHANDLE h, const uint32_t *list, unsigned n)
{
    struct {
        uint32_t cls, pad;
        TRACEHANDLE handle;
        uint32_t list[8];
    } in = {sub, 0, h, {0}};
    memcpy(in.list, list, n * sizeof *list);
    return NtSetSystemInformation(SystemPerformanceTraceInformation, &in, 16 + 4 * n);
}

// ---------------------------------------------------------------------------

static uint8_t srcbuf[8192];

// The source list: the number of entries, and whether src (with its description) is among them.
static int find_source(uint32_t src, const char *desc)
{
    int found = 0;
    uint32_t at = 8;
    for (int n = 0; n < 200; n++) {
        const PROFILE_SOURCE_INFO *e = (const PROFILE_SOURCE_INFO *)(srcbuf + at);
        int same = e->Source == src;
        for (size_t i = 0; same && i <= strlen(desc); i++)
            same = e->Description[i] == (uint16_t)desc[i];
        found |= same;
        if (!e->NextEntryOffset)
            break;
        at += e->NextEntryOffset;
    }
    return found;
}

static void test_query(void)
{
    uint32_t ret = 0, cls = EventTraceProfileSourceListInformation;
    memcpy(srcbuf, &cls, 4);
    CHECK_STATUS(NtQuerySystemInformation(0x05, srcbuf, sizeof srcbuf, &ret),
                 STATUS_INVALID_INFO_CLASS, "query: a class other than 0x1F");
    CHECK_STATUS(NtQuerySystemInformation(SystemPerformanceTraceInformation, srcbuf, 2, &ret),
                 STATUS_INFO_LENGTH_MISMATCH, "query: 2 bytes, no room for the class");
    uint32_t sub = EventTraceProfileCounterListInformation;
    CHECK_STATUS(NtQuerySystemInformation(SystemPerformanceTraceInformation, &sub, 4, &ret),
                 STATUS_INVALID_INFO_CLASS, "query: 0x0F is set only");
    CHECK_STATUS(NtQuerySystemInformation(SystemPerformanceTraceInformation, srcbuf, 8, &ret),
                 STATUS_INFO_LENGTH_MISMATCH, "query: 8 bytes, too short for the list");
    CHECK(ret > 8 && ret <= sizeof srcbuf, "query: ReturnLength %u says what is needed", ret);
    CHECK_STATUS(NtQuerySystemInformation(SystemPerformanceTraceInformation, (void *)8, 4096, &ret),
                 STATUS_ACCESS_VIOLATION, "query: a bad buffer");
    memcpy(srcbuf, &cls, 4);
    CHECK_STATUS(NtQuerySystemInformation(SystemPerformanceTraceInformation, srcbuf, ret, &ret),
                 STATUS_SUCCESS, "query: the source list");
    CHECK(find_source(PMC_EVENT_SW(PMC_SW_TASK_CLOCK), "task-clock") &&
              find_source(PMC_EVENT_SW(PMC_SW_PAGE_FAULTS), "page-faults"),
          "query: PROFILE_SOURCE_INFO chain names task-clock and page-faults");
    CHECK(!find_source(ProfileTime, "ProfileTime"), "query: ProfileTime (a timer) is no counter");
}

static void test_set_errors(TRACEHANDLE h)
{
    uint32_t sw[5] = {PMC_EVENT_SW(0), PMC_EVENT_SW(1), PMC_EVENT_SW(2), PMC_EVENT_SW(3),
                      PMC_EVENT_SW(4)};
    uint32_t hooks[5] = {ETW_HOOK_CSWITCH, ETW_HOOK_SYSCALL_ENTER, ETW_HOOK_SYSCALL_EXIT,
                         ETW_HOOK_PAGE_FAULT_DZ, ETW_HOOK_PROCESS_DELETE};
    uint32_t in[6] = {EventTraceProfileCounterListInformation, 0, 0, 0, 0, 0};
    CHECK_STATUS(NtSetSystemInformation(0x1E, in, sizeof in), STATUS_INVALID_INFO_CLASS,
                 "set: a class other than 0x1F");
    CHECK_STATUS(NtSetSystemInformation(SystemPerformanceTraceInformation, in, 3),
                 STATUS_INFO_LENGTH_MISMATCH, "set: 3 bytes");
    CHECK_STATUS(NtSetSystemInformation(SystemPerformanceTraceInformation, in, 18),
                 STATUS_INFO_LENGTH_MISMATCH, "set: 18 bytes, half a source");
    CHECK_STATUS(NtSetSystemInformation(SystemPerformanceTraceInformation, in, 16),
                 STATUS_INFO_LENGTH_MISMATCH, "set: 16 bytes, no source");
    in[0] = EventTraceProfileSourceListInformation;
    CHECK_STATUS(NtSetSystemInformation(SystemPerformanceTraceInformation, in, sizeof in),
                 STATUS_INVALID_INFO_CLASS, "set: 0x0D is a query");
    CHECK_STATUS(NtSetSystemInformation(SystemPerformanceTraceInformation, (void *)8, 24),
                 STATUS_ACCESS_VIOLATION, "set: a bad buffer");
    CHECK_STATUS(set_list(EventTraceProfileCounterListInformation, h + 0x10000, sw, 1),
                 STATUS_INVALID_HANDLE, "counters: a TRACEHANDLE of no logger");
    CHECK_STATUS(set_list(EventTraceProfileCounterListInformation, h, sw, 5),
                 STATUS_INVALID_PARAMETER, "counters: 5 sources, 4 at most");
    uint32_t bogus = 0x99;
    CHECK_STATUS(set_list(EventTraceProfileCounterListInformation, h, &bogus, 1),
                 STATUS_INVALID_PARAMETER, "counters: source 0x99, no such source");
    uint32_t cyc = ProfileTotalCycles;
    int has_pmu = find_source(ProfileTotalCycles, "ProfileTotalCycles");
    CHECK_STATUS(set_list(EventTraceProfileCounterListInformation, h, &cyc, 1),
                 has_pmu ? STATUS_SUCCESS : STATUS_NOT_SUPPORTED,
                 "counters: TotalCycles, supported only with a PMU");
    CHECK_STATUS(set_list(EventTraceProfileEventListInformation, h, hooks, 5),
                 STATUS_INVALID_PARAMETER, "events: 5 hook IDs, 4 at most");
    bogus = 0x1234;
    CHECK_STATUS(set_list(EventTraceProfileEventListInformation, h, &bogus, 1),
                 STATUS_INVALID_PARAMETER, "events: hook 0x1234, no such hook");
    CHECK_STATUS(set_list(EventTraceProfileEventListInformation, h + 0x10000, hooks, 1),
                 STATUS_INVALID_HANDLE, "events: a TRACEHANDLE of no logger");
}

// Reads the whole log into logbuf: its size.
static size_t drain(void)
{
    size_t total = 0, got = 0;
    NtPmcFlushLog();
    while (total + 8192 <= sizeof logbuf &&
           NT_SUCCESS(NtPmcReadLog(logbuf + total, sizeof logbuf - total, &got)) && got)
        total += got;
    return total;
}

struct hook_counts {
    unsigned enter, exit, fault, cswitch, profile, process, other_logger;
    int exit_status;
    int monotonic; // each CPU's syscall counter never went back
};

static void count_hooks(size_t len, TRACEHANDLE h, uint32_t pid, uint32_t child,
                        struct hook_counts *c)
{
    uint64_t last[64] = {0};
    memset(c, 0, sizeof *c);
    c->monotonic = 1;
    for (size_t at = 0; at + sizeof(struct pmclog_header) <= len;) {
        const struct pmclog_header *hd = (const void *)(logbuf + at);
        if (hd->size < sizeof *hd)
            break;
        at += hd->size;
        if (hd->type != PMCLOG_HOOK)
            continue;
        const struct pmclog_hook *r = (const void *)hd;
        if (r->logger != h) {
            c->other_logger++;
            continue;
        }
        if (r->ncounters >= 1 && hd->cpu < 64) {
            c->monotonic &= r->value[0] >= last[hd->cpu];
            last[hd->cpu] = r->value[0];
        }
        c->enter +=
            r->hook_id == ETW_HOOK_SYSCALL_ENTER && r->pid == pid && r->arg == SYS_SysGetPid;
        c->exit += r->hook_id == ETW_HOOK_SYSCALL_EXIT && r->pid == pid && r->arg == SYS_SysGetPid;
        c->fault += r->hook_id == ETW_HOOK_PAGE_FAULT_DZ && r->pid == pid;
        c->cswitch += r->hook_id == ETW_HOOK_CSWITCH;
        c->profile += r->hook_id == ETW_HOOK_SAMPLED_PROFILE && r->pid == pid;
        if (r->hook_id == ETW_HOOK_PROCESS_DELETE && r->pid == child) {
            c->process++;
            c->exit_status = (int)r->arg;
        }
    }
}

static void touch_pages(unsigned n)
{
    void *p = NULL;
    if (!NT_SUCCESS(SysMap(&p, (size_t)n * PAGE, PROT_READ | PROT_WRITE | PROT_DEMAND)))
        return;
    for (unsigned i = 0; i < n; i++)
        ((volatile char *)p)[(size_t)i * PAGE] = 1;
    SysUnmap(p, (size_t)n * PAGE);
}

// Counters syscalls, page-faults, context-switches, task-clock at system-call
// entry and exit, demand-zero faults and context switches.
static void test_records(TRACEHANDLE h)
{
    uint32_t sw[4] = {PMC_EVENT_SW(PMC_SW_SYSCALLS), PMC_EVENT_SW(PMC_SW_PAGE_FAULTS),
                      PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES), PMC_EVENT_SW(PMC_SW_TASK_CLOCK)};
    uint32_t hooks[4] = {ETW_HOOK_SYSCALL_ENTER, ETW_HOOK_SYSCALL_EXIT, ETW_HOOK_PAGE_FAULT_DZ,
                         ETW_HOOK_CSWITCH};
    drain();
    CHECK_STATUS(set_list(EventTraceProfileCounterListInformation, h, sw, 4), STATUS_SUCCESS,
                 "counters: 4 software events");
    CHECK_STATUS(set_list(EventTraceProfileEventListInformation, h, hooks, 4), STATUS_SUCCESS,
                 "events: syscall enter/exit, demand-zero fault, context switch");
    uint32_t pid = SysGetPid();
    for (int i = 0; i < 5; i++)
        SysGetPid();
    touch_pages(3);
    SysSleep(2);
    TRACEHANDLE none = 0;
    CHECK_STATUS(NtPmcTraceLogger(PMC_LOGGER_CLOSE, &none), STATUS_INVALID_HANDLE,
                 "close: handle 0");
    struct hook_counts c;
    size_t len = drain();
    count_hooks(len, h, pid, 0, &c);
    CHECK(c.enter == 6 && c.exit == 6, "SysGetPid: %u entry and %u exit records (want 6 each)",
          c.enter, c.exit);
    CHECK(c.fault == 3, "3 demand pages touched: %u demand-zero fault records", c.fault);
    CHECK(c.cswitch >= 2, "a sleep: %u context-switch records", c.cswitch);
    CHECK(c.monotonic && c.other_logger == 0,
          "the syscalls counter (list position 0) never goes back on a CPU");
}

static void test_exit_and_profile(TRACEHANDLE h)
{
    uint32_t sw = PMC_EVENT_SW(PMC_SW_TASK_CLOCK);
    uint32_t hooks[2] = {ETW_HOOK_PROCESS_DELETE, ETW_HOOK_SAMPLED_PROFILE};
    CHECK_STATUS(set_list(EventTraceProfileEventListInformation, h, hooks, 2), STATUS_SUCCESS,
                 "events: process delete, sampled profile");
    CHECK_STATUS(set_list(EventTraceProfileCounterListInformation, h, &sw, 1), STATUS_SUCCESS,
                 "counters: task-clock alone");
    drain();
    const char *argv[] = {self, "--exit", "7", NULL};
    HANDLE child = 0;
    int status = -1;
    uint32_t cpid = 0;
    if (NT_SUCCESS(SysSpawn(self, argv, 0, &child))) {
        SysProcessId(child, &cpid);
        SysWait(child, &status);
        NtClose(child);
    }
    struct pmc_alloc a = {ProfileTime, PMC_MODE_TS, 0, PMC_CPU_ANY, 0};
    HANDLE pmc = 0;
    if (NT_SUCCESS(NtPmcAllocate(&pmc, &a)) && NT_SUCCESS(NtPmcAttach(pmc, NtCurrentProcess())) &&
        NT_SUCCESS(NtPmcStart(pmc))) {
        struct sys_clock t0, t;
        SysClock(&t0);
        do
            SysClock(&t);
        while (t.ns - t0.ns < 30000000);
        NtPmcStop(pmc);
    }
    if (pmc)
        NtClose(pmc);
    struct hook_counts c;
    count_hooks(drain(), h, SysGetPid(), cpid, &c);
    CHECK(c.process == 1 && c.exit_status == 7,
          "a child's exit: %u process-delete records, status %d", c.process, c.exit_status);
    CHECK(c.profile > 0, "30 ms sampled: %u sampled-profile records of this process", c.profile);
}

static void test_loggers(TRACEHANDLE h)
{
    TRACEHANDLE more[PMC_LOGGERS_MAX];
    int made = 0;
    for (int i = 0; i < PMC_LOGGERS_MAX - 1; i++)
        made += NT_SUCCESS(NtPmcTraceLogger(PMC_LOGGER_CREATE, &more[i]));
    CHECK(made == PMC_LOGGERS_MAX - 1, "%d more loggers (want %d)", made, PMC_LOGGERS_MAX - 1);
    TRACEHANDLE x;
    CHECK_STATUS(NtPmcTraceLogger(PMC_LOGGER_CREATE, &x), STATUS_INSUFFICIENT_RESOURCES,
                 "a logger beyond PMC_LOGGERS_MAX");
    for (int i = 0; i < made; i++)
        NtPmcTraceLogger(PMC_LOGGER_CLOSE, &more[i]);
    CHECK_STATUS(NtPmcTraceLogger(3, &x), STATUS_INVALID_PARAMETER, "logger: operation 3");
    CHECK_STATUS(NtPmcTraceLogger(PMC_LOGGER_CREATE, (TRACEHANDLE *)8), STATUS_ACCESS_VIOLATION,
                 "logger: a bad handle pointer");
    CHECK_STATUS(NtPmcTraceLogger(PMC_LOGGER_CLOSE, &h), STATUS_SUCCESS, "close");
    CHECK_STATUS(NtPmcTraceLogger(PMC_LOGGER_CLOSE, &h), STATUS_INVALID_HANDLE, "close twice");
    uint32_t sw = PMC_EVENT_SW(0);
    CHECK_STATUS(set_list(EventTraceProfileCounterListInformation, h, &sw, 1),
                 STATUS_INVALID_HANDLE, "counters: a closed logger's handle");
}

// The context-switch session, now a logger of its own kind: unchanged.
static void test_cswitch_session(void)
{
    uint32_t ev = PMC_EVENT_SW(PMC_SW_TASK_CLOCK);
    drain();
    CHECK_STATUS(NtPmcCswitchLog(PMC_CSWITCH_START, &ev, 4), STATUS_SUCCESS, "cswitch: start");
    CHECK_STATUS(NtPmcCswitchLog(PMC_CSWITCH_START, &ev, 4), STATUS_PROFILING_NOT_STOPPED,
                 "cswitch: start twice");
    SysSleep(2);
    CHECK_STATUS(NtPmcCswitchLog(PMC_CSWITCH_STOP, NULL, 0), STATUS_SUCCESS, "cswitch: stop");
    CHECK_STATUS(NtPmcCswitchLog(PMC_CSWITCH_STOP, NULL, 0), STATUS_PROFILING_NOT_STARTED,
                 "cswitch: stop twice");
    size_t len = drain();
    unsigned n = 0;
    for (size_t at = 0; at + 16 <= len;) {
        const struct pmclog_header *hd = (const void *)(logbuf + at);
        if (hd->size < 16)
            break;
        n += hd->type == PMCLOG_CSWITCH;
        at += hd->size;
    }
    CHECK(n >= 2, "cswitch: %u PMCLOG_CSWITCH records", n);
}

static int unprivileged(void)
{
    uint32_t sw = PMC_EVENT_SW(0), bad = 0;
    TRACEHANDLE h;
    bad += NtPmcTraceLogger(PMC_LOGGER_CREATE, &h) != STATUS_PRIVILEGE_NOT_HELD;
    bad +=
        set_list(EventTraceProfileCounterListInformation, 1, &sw, 1) != STATUS_PRIVILEGE_NOT_HELD;
    uint32_t ret, cls = EventTraceProfileSourceListInformation;
    memcpy(srcbuf, &cls, sizeof cls);
    bad += NtQuerySystemInformation(SystemPerformanceTraceInformation, srcbuf, sizeof srcbuf,
                                    &ret) != STATUS_SUCCESS; // the list is anyone's
    return (int)bad;
}

int main(int argc, char **argv)
{
    self = argc > 0 && argv[0][0] ? argv[0] : "etwtests";
    if (argc == 2 && strcmp(argv[1], "--unprivileged") == 0)
        return unprivileged();
    if (argc == 3 && strcmp(argv[1], "--exit") == 0)
        return atoi(argv[2]);
    if (!privileged()) { // every logger call but the query needs it
        printf("etwtests: needs the system-profile privilege: run it as 'sudo etwtests'\n");
        return 2;
    }
    test_query();
    TRACEHANDLE h = 0;
    CHECK_STATUS(NtPmcTraceLogger(PMC_LOGGER_CREATE, &h), STATUS_PMC_NO_LOG,
                 "logger: no log configured");
    struct pmc_log_config cfg = {0, 0};
    CHECK_STATUS(NtPmcConfigureLog(&cfg), STATUS_SUCCESS, "configure the log");
    CHECK_STATUS(NtPmcTraceLogger(PMC_LOGGER_CREATE, &h), STATUS_SUCCESS, "logger: create");
    test_set_errors(h);
    test_records(h);
    test_exit_and_profile(h);
    test_loggers(h);
    test_cswitch_session();
    const char *uargv[] = {self, "--unprivileged", NULL};
    HANDLE child = 0;
    int status = -1;
    if (NT_SUCCESS(SysSpawn(self, uargv, 0, &child))) {
        SysWait(child, &status);
        NtClose(child);
    }
    CHECK(status == 0,
          "unprivileged: logger and lists refused (PRIVILEGE_NOT_HELD), query allowed");
    NtPmcConfigureLog(NULL);
    printf("etwtests: %d passed, %d failed\n", checks - failed, failed);
    return failed ? 1 : 0;
}
