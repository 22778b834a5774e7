// stress: the profiling paths under load, then a leak check.
//
//   stress storm N       4 processes, each N rounds of create/start/stop/close
//                        and create/start/close-while-started on its own code
//   stress kill N        N times: a spinning child sampled by our profile and
//                        by its own, killed while both are started
//   stress faults N      N programs killed by their own faults (NULL write,
//                        divide by zero, privileged instruction, ud2, int3)
//   stress lookups N     2 processes each spawn, reap and close N children that
//                        exit at once, while 2 others look every process up
//                        by pid and attach a descendants PMC to themselves
//                        (which looks up every process): a lookup must never
//                        take a process whose last reference is going
//   stress reap N        N times: spawn a child that exits at once, wait for
//                        it and close the handle; the child must then be
//                        gone (SysWait returns once every resource of the
//                        child is back, the process object included)
//   stress births SECONDS for SECONDS, spawn a spinning child and kill it at
//                        once, over and over: the shell's Ctrl-C, which lands
//                        mostly while a child is being born, must end the
//                        child too (tests/interrupt-tests)
//   stress mutexes SECONDS 4 children a CPU start and stop profiles of the
//                        system and of themselves (a scope's mutex, the HAL's
//                        inside it) for SECONDS, then all are killed at once: a killed waiter
//                        must sleep on its mutex, not spin, or the CPUs fill
//                        with spinners while the holder waits for one (a hang)
//   stress console SECONDS as a background job of the shell, for SECONDS: try
//                        to clear the console's foreground group and to read
//                        its input; every try must be refused
//                        (tests/interrupt-tests types and presses Ctrl-C
//                        meanwhile, and checks both reach the shell's jobs;
//                        no leak check: other jobs run beside it)
//   stress ticks SECONDS ProfileTime at 1,221 on every CPU, every CPU busy, for
//                        SECONDS: each CPU's ticks must match the time (none
//                        lost, none skipped) and the system profile must have
//                        been handed every tick that came while it was active
//
// Each ends with `stress: <what>: ok` or `stress: <what>: FAILED ...`. The test
// runs in a child, `stress --run MODE N`, and the counters of SysSelfCheck
// must be back where they started once it is gone. The tests' own children
// are `stress --child MODE N`, spawned with include/childtest.h's spawn_child.
#include <childtest.h>
#include <clock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define WORDS 4096
static ULONG buffer[WORDS];

static void failed(const char *what, NTSTATUS s)
{
    printf("stress: %s: %s\n", what, nt_status_name(s));
    failures++;
}

static NTSTATUS profile_self(HANDLE *h)
{
    HANDLE me;
    NTSTATUS s = SysOpenProcess(SysGetPid(), &me);
    if (!NT_SUCCESS(s))
        return s;
    s = NtCreateProfile(h, me, (void *)0x400000, WORDS * 4, 2, buffer, sizeof buffer, ProfileTime,
                        (KAFFINITY)-1);
    NtClose(me);
    return s;
}

static int storm_child(unsigned rounds)
{
    for (unsigned i = 0; i < rounds; i++) {
        HANDLE h;
        NTSTATUS s = profile_self(&h);
        if (!NT_SUCCESS(s))
            return failed("create", s), 1;
        if (!NT_SUCCESS(s = NtStartProfile(h)))
            return failed("start", s), 1;
        if (i % 2 == 0 && !NT_SUCCESS(s = NtStopProfile(h)))
            return failed("stop", s), 1;
        if (i % 7 == 0)
            SysYield();
        if (!NT_SUCCESS(s = NtClose(h))) // odd rounds: closed while started
            return failed("close", s), 1;
    }
    return 0;
}

static void spin_forever(void)
{
    HANDLE h;
    if (NT_SUCCESS(profile_self(&h)))
        NtStartProfile(h); // killed with it started
    for (;;)
        __asm__ volatile("pause");
}

static int run_children(const char *mode, unsigned n, unsigned count)
{
    HANDLE h[16];
    char arg[16];
    snprintf(arg, sizeof arg, "%u", count);
    for (unsigned i = 0; i < n; i++)
        if (!NT_SUCCESS(spawn_child(0, &h[i], mode, arg)))
            return failed("spawn", STATUS_UNSUCCESSFUL), 1;
    int bad = 0;
    for (unsigned i = 0; i < n; i++) {
        int status = -1;
        SysWait(h[i], &status);
        NtClose(h[i]);
        bad += status != 0;
    }
    return bad;
}

static void storm(unsigned rounds)
{
    if (run_children("storm", 4, rounds))
        failures++;
}

static void kill_sampled(unsigned times)
{
    for (unsigned i = 0; i < times; i++) {
        HANDLE child, prof;
        NTSTATUS s = spawn_child(SPAWN_SUSPENDED, &child, "spin", "0");
        if (!NT_SUCCESS(s))
            return failed("spawn", s);
        s = NtCreateProfile(&prof, child, (void *)0x400000, WORDS * 4, 2, buffer, sizeof buffer,
                            ProfileTime, (KAFFINITY)-1);
        if (!NT_SUCCESS(s) || !NT_SUCCESS(s = NtStartProfile(prof)))
            return failed("profile", s);
        SysResume(child);
        SysSleep(i % 3);
        uint32_t pid = 0;
        if (!NT_SUCCESS(s = SysProcessId(child, &pid)))
            return failed("pid", s);
        if (!NT_SUCCESS(s = SysKill(pid)))
            return failed("kill", s);
        int status;
        SysWait(child, &status);
        if (status != EXIT_STATUS_KILLED)
            return failed("killed child's status", STATUS_UNSUCCESSFUL);
        if (i % 2)
            NtStopProfile(prof); // and even rounds: closed while started
        NtClose(prof);
        NtClose(child);
    }
}

// Spawns, reaps and closes rounds children that exit at once: the close drops
// a process's last reference while the finders look processes up.
static int churn_child(unsigned rounds)
{
    for (unsigned i = 0; i < rounds; i++) {
        HANDLE h;
        NTSTATUS s = spawn_child(0, &h, "exit", "0");
        if (!NT_SUCCESS(s))
            return failed("spawn", s), 1;
        int status = -1;
        SysWait(h, &status);
        NtClose(h); // usually the last reference: the process is destroyed here
    }
    return 0;
}

// Looks every listed process up by pid, and attaches a descendants PMC to
// itself (the attach walks the process list and looks each process up), until
// it is killed.
static int find_child(void)
{
    static struct sys_process_info list[64];
    struct pmc_alloc a = {PMC_EVENT_SW(PMC_SW_SYSCALLS), PMC_MODE_TC, PMC_F_DESCENDANTS,
                          PMC_CPU_ANY, 0};
    HANDLE pmc = 0;
    NTSTATUS s = NtPmcAllocate(&pmc, &a);
    if (!NT_SUCCESS(s))
        return failed("pmc", s), 1;
    for (unsigned i = 0;; i++) {
        uint32_t n = 0;
        SysProcessList(list, 64, &n);
        for (uint32_t k = 0; k < n && k < 64; k++) {
            HANDLE h;
            if (NT_SUCCESS(SysOpenProcess(list[k].pid, &h)))
                NtClose(h);
        }
        if (i % 4 == 0 && NT_SUCCESS(NtPmcAttach(pmc, NtCurrentProcess())))
            NtPmcDetach(pmc, NtCurrentProcess());
    }
}

static void lookups(unsigned rounds)
{
    HANDLE finders[2];
    for (unsigned i = 0; i < 2; i++)
        if (!NT_SUCCESS(spawn_child(0, &finders[i], "find", "0")))
            return failed("spawn", STATUS_UNSUCCESSFUL);
    if (run_children("churn", 2, rounds))
        failures++;
    for (unsigned i = 0; i < 2; i++) {
        uint32_t pid = 0;
        int status = 0;
        SysProcessId(finders[i], &pid);
        SysKill(pid);
        SysWait(finders[i], &status);
        NtClose(finders[i]);
        if (status != EXIT_STATUS_KILLED)
            failed("finder's status", STATUS_UNSUCCESSFUL);
    }
}

// Nothing else runs, so once the child is reaped and its only handle closed,
// the live objects and processes must be back at their count before the spawn.
static void reap(unsigned rounds)
{
    struct sys_self_check base, now;
    SysSelfCheck(&base);
    for (unsigned i = 0; i < rounds; i++) {
        HANDLE h;
        NTSTATUS s = spawn_child(0, &h, "exit", "0");
        if (!NT_SUCCESS(s))
            return failed("spawn", s);
        int status = -1;
        SysWait(h, &status);
        NtClose(h);
        SysSelfCheck(&now);
        if (status != 0 || now.live_objects != base.live_objects ||
            now.live_processes != base.live_processes) {
            printf("stress: reap: round %u: status %d, objects %lu -> %lu, processes %lu -> %lu\n",
                   i, status, base.live_objects, now.live_objects, base.live_processes,
                   now.live_processes);
            return failed("reap", STATUS_UNSUCCESSFUL);
        }
    }
}

static void births(unsigned seconds)
{
    uint64_t end = clock_ns() + seconds * 1000000000ull;
    unsigned n = 0;
    while (clock_ns() < end) {
        HANDLE h;
        uint32_t pid;
        NTSTATUS s = spawn_child(0, &h, "spin", "0");
        if (!NT_SUCCESS(s))
            return failed("spawn", s);
        int status = 0;
        if (!NT_SUCCESS(s = SysProcessId(h, &pid)) || !NT_SUCCESS(s = SysKill(pid)) ||
            !NT_SUCCESS(s = SysWait(h, &status)) || status != EXIT_STATUS_KILLED)
            failed("births", NT_SUCCESS(s) ? STATUS_UNSUCCESSFUL : s);
        NtClose(h);
        n++;
    }
    printf("stress: births: %u children born and killed\n", n);
}

// Half the children profile the system (its scope's mutex, then the HAL's
// inside it), half themselves (their own scope's, then the HAL's): a holder of
// the system's mutex then sleeps on the HAL's.
static int contend_child(unsigned system)
{
    HANDLE h;
    NTSTATUS s = system ? NtCreateProfile(&h, NULL, (void *)0x400000, WORDS * 4, 2, buffer,
                                          sizeof buffer, ProfileTime, (KAFFINITY)-1)
                        : profile_self(&h);
    if (!NT_SUCCESS(s))
        return failed("create", s), 1;
    for (;;) {
        NtStartProfile(h);
        NtStopProfile(h);
    }
}

// One round: n contending children for ms, then all killed at once.
static void contend_round(unsigned n, unsigned ms)
{
    HANDLE h[64];
    uint32_t pid[64];
    unsigned started = 0;
    for (; started < n; started++)
        if (!NT_SUCCESS(spawn_child(privileged() ? SPAWN_PRIVILEGED : 0, &h[started], "contend",
                                    started % 2 ? "1" : "0")) ||
            !NT_SUCCESS(SysProcessId(h[started], &pid[started])))
            break;
    SysSleep(ms);
    for (unsigned i = 0; i < started; i++)
        SysKill(pid[i]);
    for (unsigned i = 0; i < started; i++) {
        int status = 0;
        SysWait(h[i], &status); // a livelock never returns: the suite's timeout says so
        NtClose(h[i]);
        if (status != EXIT_STATUS_KILLED)
            failed("contend child's status", STATUS_UNSUCCESSFUL);
    }
    if (started < n)
        failed("spawn", STATUS_UNSUCCESSFUL);
}

static void mutexes(unsigned seconds)
{
    struct sys_info info;
    SysInfo(&info);
    unsigned n = MIN(4 * info.ncpus, 64u), rounds = 0;
    uint64_t end = clock_ns() + seconds * 1000000000ull;
    for (; clock_ns() < end && !failures; rounds++)
        contend_round(n, 20 + rounds % 5 * 10);
    printf("stress: mutexes: %u rounds of %u contending children killed at once\n", rounds, n);
}

static void console_grabs(unsigned seconds)
{
    uint64_t end = clock_ns() + seconds * 1000000000ull;
    unsigned tries = 0, taken = 0;
    for (; clock_ns() < end; tries++) {
        char c[16];
        size_t got = 0;
        NTSTATUS s = SysConsoleForeground(0);
        if (s != STATUS_ACCESS_DENIED)
            failed("foreground taken", s), taken++;
        s = SysRead(0, c, sizeof c, &got);
        if (s != STATUS_ACCESS_DENIED)
            failed("input read", s), taken++;
        SysSleep(20);
    }
    printf("stress: console: %u tries, %u taken\n", tries, taken);
}

// usertests' fault tests, each run alone in a child: every one must be killed.
static void faults(unsigned times)
{
    static const char *const kinds[] = {"fault_null_write", "fault_divide", "fault_cli",
                                        "fault_ud2", "fault_int3"};
    for (unsigned i = 0; i < times; i++) {
        const char *argv[] = {"usertests", "--child", kinds[i % 5], NULL};
        HANDLE h;
        int status = 0;
        NTSTATUS s = SysSpawn("usertests", argv, 0, &h);
        if (!NT_SUCCESS(s))
            return failed("spawn", s);
        SysWait(h, &status);
        NtClose(h);
        if (status != EXIT_STATUS_KILLED)
            return failed(kinds[i % 5], STATUS_UNSUCCESSFUL);
    }
}

// Every tick accounted. Each CPU's ProfileTime runs from a moment inside the
// NtStartProfile call to a moment inside the NtStopProfile call, so its tick
// count must lie between the time outside both calls and the time including
// them, divided by the period (122.1 us): no tick lost. A tick the CPU was too
// late to handle is counted as skipped. The system profile is active on each
// CPU for a part of that window: it must have been handed every tick but the
// skipped ones and those that fell inside the two calls.
static void ticks(unsigned seconds)
{
    struct sys_info info;
    SysInfo(&info);
    unsigned n = info.ncpus > 64 ? 64 : info.ncpus; // the kernel's MAX_CPUS
    HANDLE prof;
    static ULONG whole[1 << 14];
    NTSTATUS s = NtSetIntervalProfile(1221, ProfileTime);
    if (NT_SUCCESS(s)) // system scope: every tick of every CPU is a sample for it
        s = NtCreateProfile(&prof, NULL, (void *)0x400000, sizeof whole, 2, whole, sizeof whole,
                            ProfileTime, (KAFFINITY)-1);
    if (!NT_SUCCESS(s))
        return failed("system profile (run privileged)", s);
    struct sys_clock t0, t1, t2, t3;
    SysClock(&t0);
    s = NtStartProfile(prof);
    SysClock(&t1);
    if (!NT_SUCCESS(s))
        return failed("start", s);
    char arg[16];
    snprintf(arg, sizeof arg, "%u", seconds);
    const char *argv[] = {"spin", arg, NULL};
    HANDLE child[64];
    for (unsigned i = 0; i < n; i++)
        SysSpawn("spin", argv, 0, &child[i]);
    for (unsigned i = 0; i < n; i++) {
        int status;
        SysWait(child[i], &status);
        NtClose(child[i]);
    }
    SysClock(&t2);
    NtStopProfile(prof);
    SysClock(&t3);
    static struct sys_cpu_info cpu[64];
    uint32_t got = 0;
    SysCpuInfo(cpu, 64, &got); // the counts stay put after the stop
    struct sys_profile_stats st;
    SysProfileStats(prof, &st);
    NtClose(prof);
    const uint64_t period = 122100;
    uint64_t least = (t2.ns - t1.ns) / period, most = (t3.ns - t0.ns) / period + 1, total = 0;
    uint64_t skipped = 0;
    uint64_t in_calls = ((t1.ns - t0.ns) + (t3.ns - t2.ns)) / period + 2;
    int ok = 1;
    for (uint32_t i = 0; i < got; i++) {
        uint64_t t = cpu[i].profile_ticks;
        total += t;
        skipped += cpu[i].profile_ticks_skipped;
        printf("stress: cpu %u: %lu ProfileTime ticks, %lu skipped (between %lu and %lu)\n",
               cpu[i].id, t, cpu[i].profile_ticks_skipped, least, most);
        ok &= t >= least && t <= most;
    }
    printf("stress: ticks %lu, delivered %lu, throttled %lu, at most %lu inside the calls\n", total,
           st.delivered, st.throttled, in_calls * got);
    ok &= st.delivered + st.throttled <= total &&
          st.delivered + st.throttled + skipped + in_calls * got >= total;
    if (!ok)
        failed("ticks", STATUS_UNSUCCESSFUL);
}

// The tests, one row each: `stress MODE N` runs modes[i].run(N).
static const struct {
    const char *name, *arg;
    void (*run)(unsigned n);
} modes[] = {
    {"storm", "N", storm},
    {"kill", "N", kill_sampled},
    {"faults", "N", faults},
    {"lookups", "N", lookups},
    {"reap", "N", reap},
    {"births", "SECONDS", births},
    {"mutexes", "SECONDS", mutexes},
    {"console", "SECONDS", console_grabs},
    {"ticks", "SECONDS", ticks},
};

// One test, in the child `stress --run MODE N`: exit status 0 when it
// passed, 1 when it failed, 2 for an unknown MODE.
static int run(const char *mode, unsigned n)
{
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(mode, modes[i].name) == 0) {
            modes[i].run(n);
            return failures ? 1 : 0;
        }
    return printf("stress: unknown test %s\n", mode), 2;
}

static void usage(void)
{
    printf("usage:");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        printf("%s stress %s %s", i ? " |" : "", modes[i].name, modes[i].arg);
    printf("\n");
}

// Everything the test owned is back (the counters as they were before it).
static void leak_check(const struct sys_self_check *before)
{
    struct sys_self_check after;
    SysSelfCheck(&after);
    if (after.free_pages != before->free_pages || after.heap_bytes != before->heap_bytes ||
        after.live_objects != before->live_objects || after.pinned_pages != before->pinned_pages) {
        printf("stress: leak: pages %lu -> %lu, heap %lu -> %lu, objects %lu -> %lu, pinned %lu -> "
               "%lu\n",
               before->free_pages, after.free_pages, before->heap_bytes, after.heap_bytes,
               before->live_objects, after.live_objects, before->pinned_pages, after.pinned_pages);
        failures++;
    }
}

int main(int argc, char **argv)
{
    self = "stress"; // its path in the ramdisk, whatever argv[0] says
    if (argc >= 4 && strcmp(argv[1], "--child") == 0) {
        unsigned n = (unsigned)strtoul(argv[3], NULL, 0);
        if (strcmp(argv[2], "storm") == 0)
            return storm_child(n);
        if (strcmp(argv[2], "churn") == 0)
            return churn_child(n);
        if (strcmp(argv[2], "find") == 0)
            return find_child();
        if (strcmp(argv[2], "contend") == 0)
            return contend_child(n);
        if (strcmp(argv[2], "exit") == 0)
            return 0;
        spin_forever();
    }
    if (argc < 3) {
        usage();
        return 2;
    }
    if (argc >= 4 && strcmp(argv[1], "--run") == 0)
        return run(argv[2], (unsigned)strtoul(argv[3], NULL, 0));
    // The test runs in a child, and the counters are compared before it is
    // spawned and after it is gone: everything it owned (its handle table,
    // which grows with the handles it holds at once) is then back.
    struct sys_self_check before;
    HANDLE warm, h; // the first handle grows our handle table: not a leak
    if (NT_SUCCESS(SysOpenProcess(SysGetPid(), &warm)))
        NtClose(warm);
    SysSelfCheck(&before);
    unsigned n = (unsigned)strtoul(argv[2], NULL, 0);
    const char *run_argv[] = {self, "--run", argv[1], argv[2], NULL};
    int status = 1;
    NTSTATUS s = SysSpawn(self, run_argv, privileged() ? SPAWN_PRIVILEGED : 0, &h);
    if (!NT_SUCCESS(s)) {
        failed("spawn", s);
    } else {
        SysWait(h, &status);
        NtClose(h);
    }
    if (status == 2)
        return 2; // an unknown test: the child said which
    failures += status != 0;
    if (strcmp(argv[1], "console") != 0) // beside the shell's other jobs: no leak check
        leak_check(&before);
    printf("stress: %s %u: %s\n", argv[1], n, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
