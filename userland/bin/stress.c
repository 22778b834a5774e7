// stress: the profiling paths under load, then a leak check.
//
//   stress storm N       4 processes, each N rounds of create/start/stop/close
//                        and create/start/close-while-started on its own code
//   stress kill N        N times: a spinning child sampled by our profile and
//                        by its own, killed while both are started
//   stress faults N      N programs killed by their own faults (NULL write,
//                        divide by zero, privileged instruction, ud2, int3)
//   stress ticks SECONDS ProfileTime at 1,221 on every CPU, every CPU busy, for
//                        SECONDS: each CPU's ticks must match the time (none
//                        lost, none skipped) and the system profile must have
//                        been handed every tick that came while it was active
//
// Each ends with `stress: <what>: ok` or `stress: <what>: FAILED ...`, and the
// counters of SysSelfCheck must be back where they started. Children are
// `stress --child MODE N`, spawned with include/childtest.h's spawn_child.
#include <childtest.h>
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
    unsigned n = info.ncpus > 16 ? 16 : info.ncpus;
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
    HANDLE child[16];
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
    struct sys_cpu_info cpu[16];
    uint32_t got = 0;
    SysCpuInfo(cpu, 16, &got); // the counts stay put after the stop
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

int main(int argc, char **argv)
{
    self = "stress"; // its path in the ramdisk, whatever argv[0] says
    if (argc >= 4 && strcmp(argv[1], "--child") == 0) {
        if (strcmp(argv[2], "storm") == 0)
            return storm_child((unsigned)strtoul(argv[3], NULL, 0));
        spin_forever();
    }
    if (argc < 3) {
        printf("usage: stress storm N | stress kill N | stress faults N | stress ticks SECONDS\n");
        return 2;
    }
    struct sys_self_check before, after;
    HANDLE warm; // the first handle grows our handle table: not a leak
    if (NT_SUCCESS(SysOpenProcess(SysGetPid(), &warm)))
        NtClose(warm);
    SysSelfCheck(&before);
    unsigned n = (unsigned)strtoul(argv[2], NULL, 0);
    if (strcmp(argv[1], "storm") == 0)
        storm(n);
    else if (strcmp(argv[1], "kill") == 0)
        kill_sampled(n);
    else if (strcmp(argv[1], "ticks") == 0)
        ticks(n);
    else if (strcmp(argv[1], "faults") == 0)
        faults(n);
    else
        return printf("stress: unknown test %s\n", argv[1]), 2;
    SysSelfCheck(&after);
    if (after.free_pages != before.free_pages || after.heap_bytes != before.heap_bytes ||
        after.live_objects != before.live_objects || after.pinned_pages != before.pinned_pages) {
        printf("stress: leak: pages %lu -> %lu, heap %lu -> %lu, objects %lu -> %lu, pinned %lu -> "
               "%lu\n",
               before.free_pages, after.free_pages, before.heap_bytes, after.heap_bytes,
               before.live_objects, after.live_objects, before.pinned_pages, after.pinned_pages);
        failures++;
    }
    printf("stress: %s %u: %s\n", argv[1], n, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
