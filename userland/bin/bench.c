// bench: the measurements behind `make bench` (tests/bench/bench.py), meant to
// run as init under QEMU -icount shift=0,sleep=off, where the TSC counts
// guest instructions exactly.
//
//   bench cost N         per-sample cost of ProfileTime at the minimum
//                        interval with one matching profile and N-1 started
//                        profiles that cannot match (another process's, or
//                        this process's over other ranges)
//   bench overhead I     slowdown of a fixed workload with one profile
//                        started at ProfileTime interval I (100 ns units)
//   bench smp            one system profile on every CPU at 1,221 while every
//                        CPU spins: buckets + out-of-range - delivered
//   bench callchain D    per-sample cost of a sampling PMC with call chains
//                        (profile record -g) at 1,221 over a workload whose
//                        samples have D user frames: the interrupt, the
//                        chain walk and the log record, all included
//   bench startstop N    NtStartProfile + NtStopProfile, N times, of a profile
//                        of a process that is not running (a suspended
//                        child): the cross-CPU call interrupts sent and the
//                        guest instructions (of every CPU) per pair
//   bench start N        the guest instructions of one NtStartProfile of a
//                        process that is not running: its first profile
//                        (start_cost_1), and one more when N are started on
//                        distinct small ranges (start_cost_N): a start must
//                        not grow with the profiles started before it; the
//                        same for the NtStopProfile after each (stop_cost_*)
//   bench cswitch K      instructions per context switch (-smp 1: this process
//                        and a child yield to each other) with K counting PMCs
//                        of software events started on this process (0 or 4),
//                        or with K "offcpu" a sampling PMC that logs off-CPU
//                        records with call chains (profile record --off-cpu)
//
// Each prints `bench: NAME VALUE UNIT` lines; cost and callchain name theirs
// nmi_... when ProfileTime is delivered as NMI (a boot with profile_nmi=1).
#include <benchloops.h>
#include <delivery.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define BUF_WORDS 0x4000 // 4-byte buckets over 64 KiB of code

static ULONG buffers[2][BUF_WORDS];

static int fail(const char *what, NTSTATUS s)
{
    printf("bench: %s: %s\n", what, nt_status_name(s));
    return 1;
}

// The figures' prefix: "nmi_" when ProfileTime arrives as NMI, else "".
static const char *delivery_prefix(void)
{
    char why[160];
    return profile_time_nmi(why, sizeof why) ? "nmi_" : "";
}

// One profile of ProfileTime over this program's text.
static NTSTATUS own_profile(HANDLE self, HANDLE *h, ULONG *buf)
{
    return NtCreateProfile(h, self, (void *)0x400000, BUF_WORDS * 4, 2, buf, BUF_WORDS * 4,
                           ProfileTime, (KAFFINITY)-1);
}

static int cost(unsigned n)
{
    HANDLE self, other, prof[512];
    const char *argv[] = {"spin", "3600", NULL};
    NTSTATUS s;
    if (n < 1 || n > 512)
        return fail("N must be 1..512", STATUS_INVALID_PARAMETER);
    if (!NT_SUCCESS(s = SysOpenProcess(SysGetPid(), &self)))
        return fail("SysOpenProcess", s);
    // Another process that never runs: its profiles are started but can never match.
    if (!NT_SUCCESS(s = SysSpawn("spin", argv, SPAWN_SUSPENDED, &other)))
        return fail("SysSpawn", s);
    if (!NT_SUCCESS(s = NtSetIntervalProfile(1221, ProfileTime)))
        return fail("NtSetIntervalProfile", s);
    uint64_t base = timed_work(); // nothing started
    if (!NT_SUCCESS(s = own_profile(self, &prof[0], buffers[0])))
        return fail("NtCreateProfile", s);
    for (unsigned i = 1; i < n; i++) {
        // Half on the other process, half on this one over ranges far from the code.
        HANDLE target = i % 2 ? other : self;
        void *base_addr = (void *)(0x10000000ull + (uint64_t)i * 0x100000);
        s = NtCreateProfile(&prof[i], target, base_addr, 0x1000, 2, buffers[1], BUF_WORDS * 4,
                            ProfileTime, (KAFFINITY)-1);
        if (!NT_SUCCESS(s))
            return fail("NtCreateProfile (non-matching)", s);
    }
    for (unsigned i = 0; i < n; i++)
        if (!NT_SUCCESS(s = NtStartProfile(prof[i])))
            return fail("NtStartProfile", s);
    uint64_t with = timed_work();
    for (unsigned i = 0; i < n; i++)
        NtStopProfile(prof[i]);

    struct sys_profile_stats st;
    SysProfileStats(prof[0], &st);
    for (unsigned i = 0; i < n; i++)
        NtClose(prof[i]);
    NtClose(other);
    NtClose(self);
    printf("bench: workload %lu instructions, with %u profiles %lu, %lu samples\n", base, n, with,
           st.in_range);
    if (st.in_range == 0)
        return fail("no samples", STATUS_UNSUCCESSFUL);
    printf("bench: %ssample_cost_%u %lu instructions\n", delivery_prefix(), n,
           (with > base ? with - base : 0) / st.in_range);
    return 0;
}

static int overhead(uint32_t interval)
{
    HANDLE self, prof;
    NTSTATUS s;
    if (!NT_SUCCESS(s = SysOpenProcess(SysGetPid(), &self)))
        return fail("SysOpenProcess", s);
    if (!NT_SUCCESS(s = NtSetIntervalProfile(interval, ProfileTime)))
        return fail("NtSetIntervalProfile", s);
    uint64_t base = timed_work();
    if (!NT_SUCCESS(s = own_profile(self, &prof, buffers[0])) ||
        !NT_SUCCESS(s = NtStartProfile(prof)))
        return fail("profile", s);
    uint64_t with = timed_work();
    NtStopProfile(prof);
    NtClose(prof);
    NtClose(self);
    uint64_t extra = with > base ? with - base : 0;
    printf("bench: overhead_%u %lu.%03lu %%\n", interval, extra * 100 / base,
           extra * 100000 / base % 1000);
    return 0;
}

static int smp(void)
{
    struct sys_info info;
    SysInfo(&info);
    HANDLE prof, child[64];
    unsigned n = info.ncpus > 64 ? 64 : info.ncpus;
    static ULONG buf[1 << 16];
    NTSTATUS s;
    if (!NT_SUCCESS(s = NtSetIntervalProfile(1221, ProfileTime)))
        return fail("NtSetIntervalProfile", s);
    // System scope over the spinners' text and more: every CPU samples into it.
    s = NtCreateProfile(&prof, NULL, (void *)0x400000, sizeof buf, 2, buf, sizeof buf, ProfileTime,
                        (KAFFINITY)-1);
    if (!NT_SUCCESS(s) || !NT_SUCCESS(s = NtStartProfile(prof)))
        return fail("system profile", s);
    const char *argv[] = {"spin", "1", NULL};
    for (unsigned i = 0; i < n; i++)
        if (!NT_SUCCESS(s = SysSpawn("spin", argv, 0, &child[i])))
            return fail("SysSpawn", s);
    for (unsigned i = 0; i < n; i++) {
        int status;
        SysWait(child[i], &status);
        NtClose(child[i]);
    }
    NtStopProfile(prof);
    struct sys_profile_stats st;
    SysProfileStats(prof, &st);
    NtClose(prof);
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
        sum += buf[i];
    printf("bench: %u CPUs, delivered %lu, buckets %lu, out of range %lu\n", n, st.delivered, sum,
           st.out_of_range);
    printf("bench: smp_lost_samples %ld samples\n", (long)(sum + st.out_of_range - st.delivered));
    return 0;
}

// Cross-CPU call interrupts sent so far, by every CPU.
static uint64_t calls_sent(void)
{
    static struct sys_cpu_info cpu[64];
    uint32_t got = 0;
    uint64_t sum = 0;
    SysCpuInfo(cpu, 64, &got);
    for (uint32_t i = 0; i < got; i++)
        sum += cpu[i].calls_sent;
    return sum;
}

// A handle to this process, a suspended child, and a started profile of this
// process that keeps ProfileTime started throughout, so that no timed start
// or stop is the source's first or last user (those start and stop the timer
// on every CPU: a system-wide change). 0, or 1 after saying why.
static int startstop_setup(HANDLE *self, HANDLE *child, HANDLE *keep)
{
    const char *argv[] = {"spin", "3600", NULL};
    NTSTATUS s = SysOpenProcess(SysGetPid(), self);
    if (!NT_SUCCESS(s) || !NT_SUCCESS(s = SysSpawn("spin", argv, SPAWN_SUSPENDED, child)))
        return fail("processes", s);
    if (!NT_SUCCESS(s = own_profile(*self, keep, buffers[0])) ||
        !NT_SUCCESS(s = NtStartProfile(*keep)))
        return fail("the profile that keeps the source", s);
    return 0;
}

static int startstop(unsigned n)
{
    HANDLE self, child, keep, prof;
    if (startstop_setup(&self, &child, &keep))
        return 1;
    NTSTATUS s;
    if (!NT_SUCCESS(s = own_profile(child, &prof, buffers[1])))
        return fail("the suspended child's profile", s);
    struct sys_info info;
    SysInfo(&info);
    uint64_t ipis = calls_sent(), t0 = rdtsc();
    for (unsigned i = 0; i < n; i++)
        if (!NT_SUCCESS(s = NtStartProfile(prof)) || !NT_SUCCESS(s = NtStopProfile(prof)))
            return fail("start and stop", s);
    uint64_t t = rdtsc() - t0;
    ipis = calls_sent() - ipis;
    NtStopProfile(keep);
    uint32_t pid = 0;
    if (NT_SUCCESS(SysProcessId(child, &pid)))
        SysKill(pid);
    printf("bench: startstop_ipis_process %lu.%02lu interrupts (%lu in %u pairs, -smp %u)\n",
           ipis / n, ipis * 100 / n % 100, ipis, n, info.ncpus);
    printf("bench: startstop_cost_%u %lu instructions\n", info.ncpus, t / n);
    NtClose(prof), NtClose(keep), NtClose(child), NtClose(self);
    return 0;
}

// The fewest instructions one NtStartProfile of h, and one NtStopProfile,
// took in tries: a tick that lands inside one try does not count.
static int start_once(HANDLE h, unsigned tries, uint64_t best[2])
{
    best[0] = best[1] = UINT64_MAX;
    for (unsigned i = 0; i < tries; i++) {
        uint64_t t0 = rdtsc();
        NTSTATUS s = NtStartProfile(h);
        uint64_t t1 = rdtsc();
        if (!NT_SUCCESS(s))
            return fail("NtStartProfile (timed)", s);
        if (!NT_SUCCESS(s = NtStopProfile(h)))
            return fail("NtStopProfile (timed)", s);
        uint64_t t2 = rdtsc();
        best[0] = t1 - t0 < best[0] ? t1 - t0 : best[0];
        best[1] = t2 - t1 < best[1] ? t2 - t1 : best[1];
    }
    return 0;
}

#define START_MAX 8192

// A suspended child's profiles over [0x400000 + 16 i, +4), one 4-byte bucket
// each in one shared word: the first start of the process, then one more
// with n started. The limit is 8,192 per CPU, so this needs -smp 2.
static int start_cost(unsigned n)
{
    static HANDLE prof[START_MAX + 1];
    static ULONG word;
    HANDLE self, child, keep;
    if (n < 1 || n > START_MAX)
        return fail("N must be 1..8192", STATUS_INVALID_PARAMETER);
    if (startstop_setup(&self, &child, &keep))
        return 1;
    NTSTATUS s;
    for (unsigned i = 0; i <= n; i++)
        if (!NT_SUCCESS(s = NtCreateProfile(&prof[i], child, (void *)(0x400000ull + 16ull * i), 4,
                                            2, &word, 4, ProfileTime, (KAFFINITY)-1)))
            return fail("NtCreateProfile", s);
    uint64_t first[2], last[2];
    if (start_once(prof[n], 8, first))
        return 1;
    for (unsigned i = 0; i < n; i++)
        if (!NT_SUCCESS(s = NtStartProfile(prof[i])))
            return fail("NtStartProfile", s);
    if (start_once(prof[n], 8, last))
        return 1;
    uint32_t pid = 0;
    if (NT_SUCCESS(SysProcessId(child, &pid)))
        SysKill(pid);
    for (unsigned i = 0; i <= n; i++)
        NtClose(prof[i]); // stops the started ones
    NtClose(keep), NtClose(child), NtClose(self);
    printf("bench: start_cost_1 %lu instructions\n", first[0]);
    printf("bench: start_cost_%u %lu instructions\n", n, last[0]);
    printf("bench: stop_cost_1 %lu instructions\n", first[1]);
    printf("bench: stop_cost_%u %lu instructions\n", n, last[1]);
    return 0;
}

// One PMC on this process at the source's interval; the extra instructions per
// sample, and the samples' average chain length.
__attribute__((noinline)) static int chain_run(unsigned frames, uint32_t flags, uint64_t base,
                                               uint64_t *cost, uint64_t *avg_frames)
{
    static uint8_t log[1 << 20];
    HANDLE pmc;
    struct pmc_alloc a = {ProfileTime, PMC_MODE_TS, flags, PMC_CPU_ANY, 0};
    struct pmc_log_config cfg = {1u << 20, 0}; // holds the whole run: nothing drained meanwhile
    NTSTATUS s;
    if (!NT_SUCCESS(s = NtPmcConfigureLog(&cfg)))
        return fail("NtPmcConfigureLog", s);
    if (!NT_SUCCESS(s = NtPmcAllocate(&pmc, &a)) ||
        !NT_SUCCESS(s = NtPmcAttach(pmc, NtCurrentProcess())) || !NT_SUCCESS(s = NtPmcStart(pmc)))
        return fail("PMC", s);
    uint64_t with = timed_deep(frames);
    NtPmcStop(pmc);
    size_t got = 0, pos = 0;
    uint64_t samples = 0, nframes = 0;
    NtPmcReadLog(log, sizeof log, &got);
    while (pos + sizeof(struct pmclog_header) <= got) {
        const struct pmclog_header *h = (const void *)(log + pos);
        if (h->type == PMCLOG_SAMPLE) {
            samples++;
            nframes += ((const struct pmclog_sample *)h)->nframes;
        }
        pos += h->size;
    }
    NtClose(pmc);
    NtPmcConfigureLog(NULL);
    if (!samples)
        return fail("no samples", STATUS_UNSUCCESSFUL);
    *cost = (with > base ? with - base : 0) / samples;
    *avg_frames = nframes / samples;
    printf("bench: with a PMC (flags %#x): %lu instructions, %lu samples, %lu frames each\n", flags,
           with, samples, *avg_frames);
    return 0;
}

__attribute__((noinline)) static int callchain(unsigned frames)
{
    NTSTATUS s;
    uint64_t cost0, cost, f0, f;
    if (frames < 6 || frames > 64)
        return fail("D must be 6..64", STATUS_INVALID_PARAMETER);
    if (!NT_SUCCESS(s = NtSetIntervalProfile(1221, ProfileTime)))
        return fail("NtSetIntervalProfile", s);
    uint64_t base = timed_deep(frames); // nothing started
    printf("bench: workload %lu instructions, %u frames deep\n", base, frames);
    if (chain_run(frames, 0, base, &cost0, &f0) ||
        chain_run(frames, PMC_F_CALLCHAIN, base, &cost, &f))
        return 1;
    printf("bench: %scallchain_cost_0 %lu instructions\n", delivery_prefix(), cost0);
    printf("bench: %scallchain_cost_%lu %lu instructions\n", delivery_prefix(), f, cost);
    return 0;
}

#define CSWITCH_YIELDS 4000

// profile record --off-cpu's PMC on this process and its children, at the
// coarsest interval (a sample a second: the switches are what costs), with a
// log that holds every record of the run.
static int offcpu_pmc(HANDLE *pmc)
{
    struct pmc_log_config cfg = {4u << 20, 0};
    struct pmc_alloc a = {ProfileTime, PMC_MODE_TS,
                          PMC_F_LOG_OFFCPU | PMC_F_CALLCHAIN | PMC_F_DESCENDANTS, PMC_CPU_ANY,
                          10000000};
    NTSTATUS s = NtPmcConfigureLog(&cfg);
    if (NT_SUCCESS(s))
        s = NtPmcAllocate(pmc, &a);
    if (NT_SUCCESS(s))
        s = NtPmcAttach(*pmc, NtCurrentProcess());
    if (NT_SUCCESS(s))
        s = NtPmcStart(*pmc);
    return NT_SUCCESS(s) ? 0 : fail("off-CPU PMC", s);
}

// The off-CPU records the run logged.
static void offcpu_records(HANDLE pmc)
{
    static uint8_t log[1 << 20];
    uint64_t out = 0, in = 0;
    size_t got;
    NtPmcStop(pmc);
    while (NT_SUCCESS(NtPmcReadLog(log, sizeof log, &got)) && got)
        for (size_t pos = 0; pos + sizeof(struct pmclog_header) <= got;) {
            const struct pmclog_header *h = (const void *)(log + pos);
            out += h->type == PMCLOG_OFFCPU;
            in += h->type == PMCLOG_ONCPU;
            pos += h->size;
        }
    NtClose(pmc);
    NtPmcConfigureLog(NULL);
    printf("bench: %lu switch-out and %lu switch-in records for %u yields\n", out, in,
           CSWITCH_YIELDS);
}

static int cswitch(unsigned k, int offcpu)
{
    static const enum pmc_sw_event ev[4] = {PMC_SW_TASK_CLOCK, PMC_SW_CONTEXT_SWITCHES,
                                            PMC_SW_PAGE_FAULTS, PMC_SW_SYSCALLS};
    HANDLE pmc[4] = {0}, child = 0, off = 0;
    if (offcpu && offcpu_pmc(&off))
        return 1;
    for (unsigned i = 0; i < k && i < 4; i++) {
        struct pmc_alloc a = {PMC_EVENT_SW(ev[i]), PMC_MODE_TC, 0, PMC_CPU_ANY, 0};
        NTSTATUS s = NtPmcAllocate(&pmc[i], &a);
        if (NT_SUCCESS(s))
            s = NtPmcStart(pmc[i]); // attaches it to this process
        if (!NT_SUCCESS(s))
            return fail("counting PMC", s);
    }
    const char *argv[] = {"bench", "yield", NULL};
    NTSTATUS s = SysSpawn("bench", argv, 0, &child);
    if (!NT_SUCCESS(s))
        return fail("spawn the yielder", s);
    SysYield(); // let it start
    uint64_t t0 = rdtsc();
    for (unsigned i = 0; i < CSWITCH_YIELDS; i++)
        SysYield(); // one switch to the child, one back
    uint64_t t = rdtsc() - t0;
    uint32_t pid = 0;
    SysProcessId(child, &pid);
    SysKill(pid);
    SysWait(child, NULL);
    NtClose(child);
    if (k) {
        struct pmc_value v;
        NtPmcQuery(pmc[1], &v);
        printf("bench: %llu context switches counted for %u yields\n", (unsigned long long)v.value,
               CSWITCH_YIELDS);
    }
    for (unsigned i = 0; i < k && i < 4; i++)
        NtClose(pmc[i]);
    if (offcpu)
        offcpu_records(off);
    char name[16];
    snprintf(name, sizeof name, offcpu ? "offcpu" : "%u", k);
    printf("bench: cswitch_cost_%s %llu instructions\n", name,
           (unsigned long long)(t / (2 * CSWITCH_YIELDS)));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "callchain") == 0)
        return callchain((unsigned)strtoul(argv[2], NULL, 0));
    if (argc >= 2 && strcmp(argv[1], "yield") == 0)
        for (;;)
            SysYield();
    if (argc >= 3 && strcmp(argv[1], "cswitch") == 0)
        return cswitch((unsigned)strtoul(argv[2], NULL, 0), strcmp(argv[2], "offcpu") == 0);
    if (argc >= 3 && strcmp(argv[1], "cost") == 0)
        return cost((unsigned)strtoul(argv[2], NULL, 0));
    if (argc >= 3 && strcmp(argv[1], "overhead") == 0)
        return overhead((uint32_t)strtoul(argv[2], NULL, 0));
    if (argc >= 2 && strcmp(argv[1], "smp") == 0)
        return smp();
    if (argc >= 3 && strcmp(argv[1], "startstop") == 0)
        return startstop((unsigned)strtoul(argv[2], NULL, 0));
    if (argc >= 3 && strcmp(argv[1], "start") == 0)
        return start_cost((unsigned)strtoul(argv[2], NULL, 0));
    printf("usage: bench cost N | bench overhead INTERVAL | bench smp | bench callchain D | "
           "bench cswitch K | bench startstop N | bench start N\n");
    return 2;
}
