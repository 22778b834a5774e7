// counttests: the counting PMCs from ring 3 (lib/abi/pmc.h, system calls 70-79), run as
// init (privileged). Software counts are checked exactly: N sleeps are N
// context switches, N first touches of demand pages are N page faults, N system
// calls are N system calls; totals survive exit, PMC_F_DESCENDANTS follows a
// child, PMC_F_LOG_PROCEXIT logs its total; and every bad input gets its status.
//
//   counttests                 every test, KTAP lines, "counttests: N passed, N failed"
//   counttests --child faults N   touch N demand pages, then exit
//   counttests --child mixed N    N rounds of computing and system calls
//   counttests --child compute N  N rounds of computing
#include <ktapcheck.h>
#include <nt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define PAGE 4096

int checks, failed;
static const char *self = "counttests";

#define CHECK(cond, ...) ktap_check(!!(cond), " - ", __VA_ARGS__)

static HANDLE alloc(uint32_t event, uint32_t mode, uint32_t flags, uint32_t cpu, NTSTATUS *st)
{
    struct pmc_alloc a = {event, mode, flags, cpu, 0};
    HANDLE h = 0;
    *st = NtPmcAllocate(&h, &a);
    return h;
}

static HANDLE own(enum pmc_sw_event e, uint32_t flags)
{
    NTSTATUS st;
    HANDLE h = alloc(PMC_EVENT_SW(e), PMC_MODE_TC, flags, PMC_CPU_ANY, &st);
    if (!NT_SUCCESS(st) || !NT_SUCCESS(NtPmcStart(h)))
        printf("# allocating or starting %u: %s\n", (unsigned)e, nt_status_name(st));
    return h;
}

static uint64_t value(HANDLE h)
{
    struct pmc_value v = {0};
    NTSTATUS st = NtPmcQuery(h, &v);
    return NT_SUCCESS(st) ? v.value : ~0ull;
}

static void touch_pages(unsigned n)
{
    void *p = NULL;
    if (!NT_SUCCESS(SysMap(&p, (size_t)n * PAGE, PROT_READ | PROT_WRITE | PROT_DEMAND)))
        exit(3);
    for (unsigned i = 0; i < n; i++)
        ((volatile char *)p)[(size_t)i * PAGE + 7] = 1;
    for (unsigned i = 0; i < n; i++) // present now: no more faults
        ((volatile char *)p)[(size_t)i * PAGE] = 2;
    SysUnmap(p, (size_t)n * PAGE);
}

static void test_context_switches(void)
{
    enum { N = 25 };
    HANDLE cs = own(PMC_SW_CONTEXT_SWITCHES, 0), mig = own(PMC_SW_CPU_MIGRATIONS, 0);
    for (int i = 0; i < N; i++)
        SysSleep(1);
    uint64_t v = value(cs), m = value(mig);
    CHECK(v == N, "%d sleeps give up the CPU %d times: context-switches = %llu", N, N,
          (unsigned long long)v);
    CHECK(m <= v, "cpu-migrations (%llu) <= context switches", (unsigned long long)m);
    NtClose(cs);
    NtClose(mig);
}

static void test_page_faults(void)
{
    enum { N = 37 };
    HANDLE pf = own(PMC_SW_PAGE_FAULTS, 0);
    touch_pages(N);
    uint64_t v = value(pf);
    CHECK(v == N, "first touches of %d demand pages: page-faults = %llu", N, (unsigned long long)v);
    NtClose(pf);
}

static void test_syscalls(void)
{
    enum { N = 100 };
    HANDLE sc = own(PMC_SW_SYSCALLS, 0);
    for (int i = 0; i < N; i++)
        SysGetPid();
    uint64_t v = value(sc);
    CHECK(v == N + 1, "%d SysGetPid then the SysPmcRead: system-calls = %llu (want %d)", N,
          (unsigned long long)v, N + 1);
    NtClose(sc);
}

static void test_task_clock(void)
{
    HANDLE tc = own(PMC_SW_TASK_CLOCK, 0);
    struct sys_clock c0, c1;
    SysClock(&c0);
    do
        SysClock(&c1);
    while (c1.ns - c0.ns < 30000000);
    uint64_t v = value(tc), wall = c1.ns - c0.ns;
    CHECK(v >= wall / 2 && v <= wall + 20000000,
          "30 ms of spinning: task-clock %llu ns for %llu ns of wall time", (unsigned long long)v,
          (unsigned long long)wall);
    NtClose(tc);
}

// N rounds of computing alone.
static void compute_work(unsigned n)
{
    while (n--)
        for (volatile unsigned i = 0; i < 20000; i++)
            ;
}

// N rounds of a computation and a burst of system calls: time in both levels
// (a fixed amount of work, not of time: under TCG the host decides how much
// of a millisecond a vCPU gets).
static void mixed_work(unsigned n)
{
    while (n--) {
        compute_work(1);
        for (int i = 0; i < 40; i++)
            SysGetPid();
    }
}

// task-clock of a child three ways, counted at once: every ring, :u, :k.
static void task_clock_levels(const char *mode, uint64_t v[3])
{
    static const uint32_t flags[3] = {0, PMC_F_USER, PMC_F_KERNEL};
    const char *argv[] = {self, "--child", mode, "2000", NULL};
    HANDLE kid = 0, h[3];
    NTSTATUS st = SysSpawn(self, argv, SPAWN_SUSPENDED, &kid);
    for (int k = 0; k < 3; k++) {
        NTSTATUS s2;
        h[k] = alloc(PMC_EVENT_SW(PMC_SW_TASK_CLOCK), PMC_MODE_TC, flags[k], PMC_CPU_ANY, &s2);
        if (NT_SUCCESS(s2) && NT_SUCCESS(st))
            s2 = NtPmcAttach(h[k], kid);
        if (NT_SUCCESS(s2))
            s2 = NtPmcStart(h[k]);
        st = NT_SUCCESS(st) ? s2 : st;
    }
    CHECK(NT_SUCCESS(st), "task-clock, task-clock:u and :k of a '%s' child: %s", mode,
          nt_status_name(st));
    SysResume(kid);
    int status = -1;
    SysWait(kid, &status);
    NtClose(kid);
    CHECK(status == 0, "the '%s' child exits with 0: %d", mode, status);
    for (int k = 0; k < 3; k++) {
        v[k] = value(h[k]);
        NtClose(h[k]);
    }
}

// User time is ring 3's, system time the rest of the CPU time: they add up
// to task-clock (within 1 %), both are there in a program that does both,
// and a program that only computes spends nearly all of it in ring 3.
static void test_task_clock_levels(void)
{
    uint64_t v[3], c[3];
    task_clock_levels("mixed", v);
    uint64_t sum = v[1] + v[2], diff = sum > v[0] ? sum - v[0] : v[0] - sum;
    CHECK(v[0] > 10000000 && diff * 100 <= v[0],
          "task-clock:u %llu + task-clock:k %llu = %llu ns, task-clock %llu ns (within 1%%)",
          (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)sum,
          (unsigned long long)v[0]);
    CHECK(v[1] * 20 >= v[0] && v[2] * 20 >= v[0],
          "computing and system calls: each ring has 5%% or more (u %llu, k %llu of %llu ns)",
          (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[0]);
    task_clock_levels("compute", c);
    CHECK(c[1] * 10 >= c[0] * 9 && c[1] * v[0] > v[1] * c[0],
          "computing only: task-clock:u %llu of %llu ns (90%% or more, and a larger share than "
          "with system calls)",
          (unsigned long long)c[1], (unsigned long long)c[0]);
}

// Only task-clock counts its levels apart; the other software events, and
// ProfileTime's ticks, refuse :u and :k.
static void test_ring_refusals(void)
{
    NTSTATUS st;
    static const struct {
        uint32_t event, flags;
    } no[] = {
        {PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES), PMC_F_KERNEL},
        {PMC_EVENT_SW(PMC_SW_PAGE_FAULTS), PMC_F_USER},
        {PMC_EVENT_SW(PMC_SW_SYSCALLS), PMC_F_USER},
        {ProfileTime, PMC_F_KERNEL},
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        NtClose(alloc(no[i].event, PMC_MODE_TC, no[i].flags, PMC_CPU_ANY, &st));
        CHECK(st == STATUS_PMC_LEVEL_UNSUPPORTED, "event %#x in one ring: %s", no[i].event,
              nt_status_name(st));
    }
    NtClose(
        alloc(PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES), PMC_MODE_TC, PMC_F_LEVELS, PMC_CPU_ANY, &st));
    CHECK(st == STATUS_SUCCESS, "context-switches in both levels, named: %s", nt_status_name(st));
    NtClose(alloc(PMC_EVENT_SW(PMC_SW_TASK_CLOCK), PMC_MODE_SC, PMC_F_USER, PMC_CPU_ANY, &st));
    CHECK(st == STATUS_SUCCESS, "system-wide task-clock:u: %s", nt_status_name(st));
    NtClose(alloc(ProfileTotalCycles, PMC_MODE_TC, PMC_F_USER, PMC_CPU_ANY, &st));
    CHECK(st == STATUS_PMC_COUNTING_UNSUPPORTED, "cycles:u without a PMU: %s", nt_status_name(st));
}

static HANDLE spawn_faults(unsigned n, uint32_t flags)
{
    char num[16];
    snprintf(num, sizeof num, "%u", n);
    const char *argv[] = {self, "--child", "faults", num, NULL};
    HANDLE h = 0;
    NTSTATUS st = SysSpawn(self, argv, flags, &h);
    if (!NT_SUCCESS(st))
        printf("# spawn: %s\n", nt_status_name(st));
    return h;
}

// Whether the log holds a PMCLOG_EXIT record of pid with value, after its
// PMCLOG_INITIALIZE record.
static int found_exit_record(uint32_t pid, uint64_t value)
{
    static uint8_t buf[64 * 1024];
    size_t got = 0;
    int found = 0, initialized = 0;
    if (NT_SUCCESS(NtPmcReadLog(buf, sizeof buf, &got)))
        for (size_t off = 0; off < got;) {
            const struct pmclog_header *h = (const void *)(buf + off);
            const struct pmclog_exit *r = (const void *)h;
            initialized |= off == 0 && h->type == PMCLOG_INITIALIZE;
            if (h->type == PMCLOG_EXIT && r->pid == pid && r->value == value)
                found = initialized;
            off += h->size ? h->size : got;
        }
    return found;
}

static void test_exit_total(void)
{
    NTSTATUS st;
    HANDLE pf =
        alloc(PMC_EVENT_SW(PMC_SW_PAGE_FAULTS), PMC_MODE_TC, PMC_F_LOG_PROCEXIT, PMC_CPU_ANY, &st);
    HANDLE child = spawn_faults(13, SPAWN_SUSPENDED);
    CHECK(NT_SUCCESS(NtPmcAttach(pf, child)), "attach to a suspended child");
    CHECK(NtPmcAttach(pf, child) == STATUS_PMC_ALREADY_ATTACHED, "attach twice: already attached");
    CHECK(NtPmcStart(pf) == STATUS_PMC_NO_LOG, "PMC_F_LOG_PROCEXIT needs the log to start");
    struct pmc_log_config cfg = {0, 0};
    CHECK(NT_SUCCESS(NtPmcConfigureLog(&cfg)), "configure the log");
    CHECK(NT_SUCCESS(NtPmcStart(pf)), "then it starts");
    uint64_t before = value(pf);
    SysResume(child);
    int status = -1;
    SysWait(child, &status);
    struct pmc_value v;
    NtPmcQuery(pf, &v);
    CHECK(before == 0 && v.value == 13 && v.targets == 0,
          "a child's 13 faults survive its exit: %llu (targets left %u)",
          (unsigned long long)v.value, v.targets);
    uint32_t pid = 0;
    SysProcessId(child, &pid);
    CHECK(found_exit_record(pid, 13), "PMCLOG_EXIT record: pid %u, 13 page faults", pid);
    NtClose(child);
    NtClose(pf);
    CHECK(NT_SUCCESS(NtPmcConfigureLog(NULL)), "release the log");
}

static void test_descendants(void)
{
    HANDLE with = own(PMC_SW_PAGE_FAULTS, PMC_F_DESCENDANTS), without = own(PMC_SW_PAGE_FAULTS, 0);
    HANDLE c = spawn_faults(21, 0);
    int status = -1;
    SysWait(c, &status);
    CHECK(status == 0, "the child touching 21 pages exits with 0 (%d)", status);
    NtClose(c);
    touch_pages(4);
    uint64_t a = value(with), b = value(without);
    CHECK(a == 25 && b == 4,
          "PMC_F_DESCENDANTS counts the child's 21 faults and our 4 (%llu); without it, 4 (%llu)",
          (unsigned long long)a, (unsigned long long)b);
    NtClose(with);
    NtClose(without);
}

static void test_system_scope(void)
{
    NTSTATUS st;
    HANDLE sys = alloc(PMC_EVENT_SW(PMC_SW_PAGE_FAULTS), PMC_MODE_SC, 0, PMC_CPU_ANY, &st);
    CHECK(NT_SUCCESS(st), "system-scope page-faults: %s", nt_status_name(st));
    HANDLE mine = own(PMC_SW_PAGE_FAULTS, PMC_F_DESCENDANTS);
    NtPmcStart(sys);
    HANDLE c = spawn_faults(9, 0);
    touch_pages(5);
    int status = -1;
    SysWait(c, &status);
    CHECK(status == 0, "the child touching 9 pages exits with 0 (%d)", status);
    NtClose(c);
    NtPmcStop(sys);
    NtPmcStop(mine);
    uint64_t s = value(sys), m = value(mine);
    CHECK(s == 14 && m == 14, "system scope sees the same 14 faults as the processes: %llu = %llu",
          (unsigned long long)s, (unsigned long long)m);
    NtClose(sys);
    NtClose(mine);
}

static void test_read_write(void)
{
    HANDLE h = own(PMC_SW_SYSCALLS, 0);
    CHECK(NtPmcWrite(h, 5) == STATUS_PMC_RUNNING, "write while started: STATUS_PMC_RUNNING");
    CHECK(NtPmcStart(h) == STATUS_PMC_RUNNING, "start twice: STATUS_PMC_RUNNING");
    NtPmcStop(h);
    CHECK(NtPmcStop(h) == STATUS_PMC_NOT_RUNNING, "stop twice: STATUS_PMC_NOT_RUNNING");
    CHECK(NT_SUCCESS(NtPmcWrite(h, 1000)) && value(h) == 1000, "write 1000 while stopped");
    NtPmcStart(h); // counting resumes from the written value
    uint64_t v = value(h);
    CHECK(v == 1001, "after start, one SysPmcRead more: %llu", (unsigned long long)v);
    NtClose(h);
}

// A loop of 3 instructions per iteration (add, sub, jnz): n iterations
// retire 3n and a few more.
static void retire_loop(uint64_t n)
{
    __asm__ volatile("1: addq $1, %%rax\n\tsubq $1, %0\n\tjnz 1b" : "+r"(n)::"rax", "cc");
}

static uint32_t rdpmc(uint32_t index)
{
    uint32_t lo, hi;
    __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index));
    return lo;
}

// Hardware counting where the PMU can count instructions (KVM -cpu host);
// otherwise the allocation's status and SysProfileSources's reason.
static void test_hardware(void)
{
    static struct sys_profile_source src[ProfileSourceCount];
    uint32_t n = 0;
    NTSTATUS st = SysProfileSources(src, ProfileSourceCount, &n);
    int pmu = NT_SUCCESS(st) && n > ProfileTotalIssues && src[ProfileTotalIssues].supported;
    if (!pmu) {
        alloc(ProfileTotalIssues, PMC_MODE_TC, 0, PMC_CPU_ANY, &st);
        CHECK(st == STATUS_PMC_COUNTING_UNSUPPORTED, "instructions with no PMU: %s (%s)",
              nt_status_name(st), n > ProfileTotalIssues ? src[ProfileTotalIssues].reason : "?");
        return;
    }
    const uint64_t iterations = 1000000;
    HANDLE h = alloc(ProfileTotalIssues, PMC_MODE_TC, 0, PMC_CPU_ANY, &st);
    CHECK(st == STATUS_SUCCESS, "process-scope instruction count: %s", nt_status_name(st));
    HANDLE sys = alloc(ProfileTotalIssues, PMC_MODE_SC, 0, PMC_CPU_ANY, &st);
    CHECK(st == STATUS_SUCCESS, "system-scope instruction count: %s", nt_status_name(st));
    NtPmcStart(sys);
    NtPmcStart(h);
    retire_loop(iterations);
    NtPmcStop(h);
    NtPmcStop(sys);
    uint64_t v = value(h), all = value(sys);
    CHECK(v >= 3 * iterations && v < 3 * iterations + 200000,
          "%llu loop iterations of 3 instructions: %llu instructions counted",
          (unsigned long long)iterations, (unsigned long long)v);
    CHECK(all >= v, "the whole system counted at least as many: %llu", (unsigned long long)all);
    NtClose(sys);
    NtClose(h);

    // Self-monitoring: rdpmc from ring 3 without a system call.
    h = alloc(ProfileTotalIssues, PMC_MODE_TC, 0, PMC_CPU_ANY, &st);
    NtPmcStart(h);
    uint32_t index = 0;
    st = NtPmcGetMsr(h, &index);
    CHECK(st == STATUS_SUCCESS, "rdpmc index of its own count: %s (0x%x)", nt_status_name(st),
          index);
    if (NT_SUCCESS(st)) {
        uint32_t a = rdpmc(index);
        retire_loop(iterations);
        uint32_t b = rdpmc(index);
        CHECK(b - a >= 3 * iterations && b - a < 3 * iterations + 200000,
              "rdpmc in ring 3 sees the loop: %u instructions", b - a);
    }
    NtClose(h);
}

// ProfileTime's ticks counted while the source is restarted: every
// NtSetIntervalProfile while it runs reprograms the timer on every CPU. The
// ticks a running thread (or a CPU) took since its last switch are pending
// until that switch; a restart must not lose them, so no read may be lower
// than the one before. The interval is the system's: saved and restored.
static void test_ticks_across_restarts(void)
{
    ULONG old = 0;
    NtQueryIntervalProfile(ProfileTime, &old);
    NTSTATUS st;
    HANDLE mine = alloc(ProfileTime, PMC_MODE_TC, 0, PMC_CPU_ANY, &st);
    HANDLE sys = alloc(PMC_EVENT_SW(PMC_SW_PROFILE_TICKS), PMC_MODE_SC, 0, PMC_CPU_ANY, &st);
    NtPmcStart(mine);
    NtPmcStart(sys);
    uint64_t last_mine = 0, last_sys = 0, drops = 0;
    for (unsigned i = 0; i < 20; i++) {
        NtSetIntervalProfile(i % 2 ? 2442 : 1221, ProfileTime);
        retire_loop(2000000); // a few ms: ticks pending, no switch
        uint64_t m = value(mine), s = value(sys);
        drops += (m < last_mine) + (s < last_sys);
        last_mine = m > last_mine ? m : last_mine;
        last_sys = s > last_sys ? s : last_sys;
    }
    CHECK(drops == 0 && last_mine > 0 && last_sys >= last_mine,
          "ticks across 20 restarts of ProfileTime: %llu reads went down; %llu ticks here, %llu "
          "on every CPU",
          (unsigned long long)drops, (unsigned long long)last_mine, (unsigned long long)last_sys);
    NtClose(mine);
    NtClose(sys);
    NtSetIntervalProfile(old, ProfileTime);
}

static void test_bad_inputs(void)
{
    NTSTATUS st;
    HANDLE h;
    alloc(0x999, PMC_MODE_TC, 0, PMC_CPU_ANY, &st);
    CHECK(st == STATUS_PMC_UNKNOWN_SOURCE, "unknown event: %s", nt_status_name(st));
    alloc(PMC_EVENT_SW(0), 7, 0, PMC_CPU_ANY, &st);
    CHECK(st == STATUS_PMC_BAD_MODE, "unknown mode: %s", nt_status_name(st));
    alloc(PMC_EVENT_SW(0), PMC_MODE_TC, 0x80, PMC_CPU_ANY, &st);
    CHECK(st == STATUS_PMC_BAD_FLAGS, "unknown flag: %s", nt_status_name(st));
    alloc(PMC_EVENT_SW(0), PMC_MODE_SC, PMC_F_DESCENDANTS, PMC_CPU_ANY, &st);
    CHECK(st == STATUS_PMC_FLAG_NEEDS_PROCESS, "DESCENDANTS on system scope: %s",
          nt_status_name(st));
    alloc(PMC_EVENT_SW(0), PMC_MODE_SC, 0, 999, &st);
    CHECK(st == STATUS_PMC_BAD_CPU, "CPU 999: %s", nt_status_name(st));
    alloc(PMC_EVENT_SW(0), PMC_MODE_TC, 0, 0, &st);
    CHECK(st == STATUS_PMC_BAD_CPU, "process scope on one CPU: %s", nt_status_name(st));
    NtClose(alloc(ProfileTime, PMC_MODE_TC, 0, PMC_CPU_ANY, &st));
    CHECK(st == STATUS_SUCCESS, "ProfileTime counts its ticks: %s", nt_status_name(st));
    struct pmc_alloc a = {PMC_EVENT_SW(0), PMC_MODE_TC, 0, PMC_CPU_ANY, 0};
    CHECK(NtPmcAllocate(&h, (void *)8) == STATUS_ACCESS_VIOLATION, "bad input pointer");
    CHECK(NtPmcAllocate((void *)0xffff800000000000ull, &a) == STATUS_ACCESS_VIOLATION,
          "kernel output pointer");
    struct pmc_value pv;
    CHECK(NtPmcQuery((HANDLE)0x1234, &pv) == STATUS_INVALID_HANDLE, "bad handle");
    h = own(PMC_SW_SYSCALLS, 0);
    CHECK(NtPmcQuery(h, (void *)16) == STATUS_ACCESS_VIOLATION, "read into a bad pointer");
    uint32_t idx;
    CHECK(NtPmcGetMsr(h, &idx) == STATUS_NOT_SUPPORTED,
          "rdpmc index of a software event: not supported");
    CHECK(NtPmcCswitchLog(99, NULL, 0) == STATUS_INVALID_PARAMETER, "unknown log operation");
    uint32_t ev[9] = {0};
    CHECK(NtPmcCswitchLog(PMC_CSWITCH_START, ev, sizeof ev) == STATUS_INVALID_PARAMETER,
          "9 context-switch events: more than 8");
    CHECK(NtPmcCswitchLog(PMC_CSWITCH_START, ev, 2 * sizeof ev[0]) == STATUS_PMC_NO_LOG,
          "context-switch counters need the caller's log");
    NtClose(h);
}

int main(int argc, char **argv)
{
    self = argc > 0 && argv[0][0] ? argv[0] : self;
    if (argc == 4 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "faults") == 0) {
        touch_pages((unsigned)atoi(argv[3]));
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "mixed") == 0) {
        mixed_work((unsigned)atoi(argv[3]));
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "compute") == 0) {
        compute_work((unsigned)atoi(argv[3]));
        return 0;
    }
    struct sys_self_check before, after;
    SysSelfCheck(&before);
    test_context_switches();
    test_page_faults();
    test_syscalls();
    test_task_clock();
    test_task_clock_levels();
    test_ring_refusals();
    test_exit_total();
    test_descendants();
    test_system_scope();
    test_read_write();
    test_hardware();
    test_ticks_across_restarts();
    test_bad_inputs();
    SysSelfCheck(&after);
    CHECK(after.live_objects == before.live_objects &&
              after.live_processes == before.live_processes,
          "no PMC or process object left (%llu -> %llu objects)",
          (unsigned long long)before.live_objects, (unsigned long long)after.live_objects);
    printf("counttests: %d passed, %d failed\n", checks - failed, failed);
    return failed != 0;
}
