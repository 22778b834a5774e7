// pmcadmintests: the rows from ring 3 (NtPmcAdmin, NtPmcGetCpuInfo,
// NtPmcGetPmcInfo, NtPmcGetModuleVersion; docs/counting.md): every status,
// dispositions as PMCs come and go, a disable refused while a row is in use,
// a disabled row kept from new PMCs and from ProfileTime's ticks on its CPU,
// and the enable that gives it back.
//
//   pmcadmintests [NAME...]     run the tests (whose names contain NAME), KTAP
//
// Each test runs in a child (lib/childtest.c) and leaves every row enabled.
// Under QEMU TCG there is no PMU: the rows are the timer's and the software
// events' (the counter rows are tested on the PMU model, tests/pmc/).
#include <childtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define TEST_TIMEOUT_MS 60000

static struct pmc_cpuinfo ci;
static struct pmc_rowinfo rows[PMC_ROWS_MAX];

static const struct pmc_classinfo *class_of(uint32_t cls)
{
    for (uint32_t c = 0; c < ci.nclass; c++)
        if (ci.classes[c].cls == cls)
            return &ci.classes[c];
    return NULL;
}

// The CPU information, and the first row of class cls (~0u when none).
static uint32_t first_row(uint32_t cls)
{
    EXPECT_STATUS(NtPmcGetCpuInfo(&ci), STATUS_SUCCESS);
    const struct pmc_classinfo *k = class_of(cls);
    EXPECT(k != NULL, "no class %u among %u", cls, ci.nclass);
    return k ? k->first_row : ~0u;
}

static uint32_t timer_row(void)
{
    return first_row(PMC_CLASS_TIMER);
}

static uint32_t soft_row(enum pmc_sw_event e)
{
    return first_row(PMC_CLASS_SOFT) + (uint32_t)e;
}

// Row r of cpu, as NtPmcGetPmcInfo gives it now.
static struct pmc_rowinfo row_of(uint32_t cpu, uint32_t r)
{
    uint32_t need = 0;
    EXPECT_STATUS(NtPmcGetPmcInfo(cpu, rows, sizeof rows, &need), STATUS_SUCCESS);
    return r < PMC_ROWS_MAX ? rows[r] : (struct pmc_rowinfo){0};
}

static NTSTATUS alloc(HANDLE *h, uint32_t mode, uint32_t source, uint32_t cpu)
{
    struct pmc_alloc a = {source, mode, 0, cpu, 0};
    return NtPmcAllocate(h, &a);
}

#define EXPECT_ROW(cpu, r, want_disp, want_enabled) \
    do { \
        struct pmc_rowinfo i_ = row_of(cpu, r); \
        EXPECT(i_.disp == (want_disp) && i_.enabled == (want_enabled), \
               "cpu %u row %u (%s): disposition %u enabled %u, want %u and %u", cpu, r, i_.name, \
               i_.disp, i_.enabled, want_disp, want_enabled); \
    } while (0)

// ---------------------------------------------------------------------------
// What anyone may read.

static void test_version(void)
{
    uint32_t v = 0;
    EXPECT_STATUS(NtPmcGetModuleVersion(&v), STATUS_SUCCESS);
    EXPECT(v == PMC_MODULE_VERSION, "version 0x%x", v);
    EXPECT_STATUS(NtPmcGetModuleVersion((uint32_t *)KERNEL_IMAGE), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtPmcGetModuleVersion(NULL), STATUS_ACCESS_VIOLATION);
}

// The classes tile the rows in order; the timer and software classes are
// there with or without a PMU.
static void test_cpuinfo(void)
{
    struct sys_info si;
    SysInfo(&si);
    EXPECT_STATUS(NtPmcGetCpuInfo(&ci), STATUS_SUCCESS);
    EXPECT(ci.ncpu == si.ncpus, "%u CPUs, SysInfo says %u", ci.ncpu, si.ncpus);
    uint32_t next = 0;
    for (uint32_t c = 0; c < ci.nclass; c++) {
        EXPECT(ci.classes[c].first_row == next && ci.classes[c].num > 0 && ci.classes[c].width,
               "class %u: first row %u (want %u), %u rows, %u bits", ci.classes[c].cls,
               ci.classes[c].first_row, next, ci.classes[c].num, ci.classes[c].width);
        next += ci.classes[c].num;
    }
    EXPECT(next == ci.npmc && ci.npmc <= PMC_ROWS_MAX, "classes cover %u of %u rows", next,
           ci.npmc);
    const struct pmc_classinfo *t = class_of(PMC_CLASS_TIMER), *s = class_of(PMC_CLASS_SOFT);
    EXPECT(t && t->num == 1 && t->events == 1u << ProfileTime && (t->caps & PMC_CAP_INTERRUPT),
           "timer class");
    EXPECT(s && s->num == PMC_SW_COUNT && (s->caps & PMC_CAP_READ) &&
               !(s->caps & PMC_CAP_INTERRUPT),
           "software class");
    EXPECT_STATUS(NtPmcGetCpuInfo((struct pmc_cpuinfo *)KERNEL_IMAGE), STATUS_ACCESS_VIOLATION);
}

static void test_pmcinfo_errors(void)
{
    uint32_t need = 0;
    EXPECT_STATUS(NtPmcGetCpuInfo(&ci), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcGetPmcInfo(ci.ncpu, rows, sizeof rows, &need), STATUS_PMC_BAD_CPU);
    EXPECT_STATUS(NtPmcGetPmcInfo(~0u, rows, sizeof rows, &need), STATUS_PMC_BAD_CPU);
    EXPECT_STATUS(NtPmcGetPmcInfo(0, rows, 8, &need), STATUS_BUFFER_TOO_SMALL);
    EXPECT(need == ci.npmc * sizeof rows[0], "needed %u bytes for %u rows", need, ci.npmc);
    EXPECT_STATUS(NtPmcGetPmcInfo(0, NULL, 0, &need), STATUS_BUFFER_TOO_SMALL);
    EXPECT_STATUS(NtPmcGetPmcInfo(0, rows, sizeof rows, (uint32_t *)KERNEL_IMAGE),
                  STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtPmcGetPmcInfo(0, (struct pmc_rowinfo *)KERNEL_IMAGE, sizeof rows, &need),
                  STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtPmcGetPmcInfo(0, rows, need, &need), STATUS_SUCCESS);
    for (uint32_t r = 0; r < ci.npmc; r++) {
        const struct pmc_classinfo *k = NULL;
        for (uint32_t c = 0; c < ci.nclass; c++)
            if (r >= ci.classes[c].first_row && r < ci.classes[c].first_row + ci.classes[c].num)
                k = &ci.classes[c];
        EXPECT(k && rows[r].cls == k->cls && rows[r].name[0] && rows[r].enabled,
               "row %u (%s): class %u, enabled %u", r, rows[r].name, rows[r].cls, rows[r].enabled);
    }
    EXPECT(!strcmp(rows[soft_row(PMC_SW_SYSCALLS)].name, "SOFT-system-calls"), "row name %s",
           rows[soft_row(PMC_SW_SYSCALLS)].name);
}

// ---------------------------------------------------------------------------
// NtPmcAdmin.

static void test_admin_unprivileged(void)
{
    uint32_t r = timer_row();
    EXPECT_STATUS(NtPmcAdmin(0, r, PMC_STATE_DISABLED), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(NtPmcAdmin(0, r, PMC_STATE_FREE), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(NtPmcAdmin(~0u, ~0u, 7), STATUS_PRIVILEGE_NOT_HELD); // the privilege first
    EXPECT_ROW(0, r, PMC_DISP_FREE, 1u);
}

static void test_admin_errors(void) // privileged
{
    uint32_t r = timer_row();
    EXPECT_STATUS(NtPmcAdmin(ci.ncpu, r, PMC_STATE_DISABLED), STATUS_PMC_BAD_CPU);
    EXPECT_STATUS(NtPmcAdmin(~0u, r, PMC_STATE_DISABLED), STATUS_PMC_BAD_CPU);
    EXPECT_STATUS(NtPmcAdmin(0, r, 2), STATUS_INVALID_PARAMETER);
    EXPECT_STATUS(NtPmcAdmin(0, ci.npmc, PMC_STATE_DISABLED), STATUS_PMC_BAD_ROW);
    EXPECT_STATUS(NtPmcAdmin(0, ~0u, PMC_STATE_FREE), STATUS_PMC_BAD_ROW);
    EXPECT_STATUS(NtPmcAdmin(0, r, PMC_STATE_FREE), STATUS_SUCCESS); // enabled already: nothing
    EXPECT_ROW(0, r, PMC_DISP_FREE, 1u);
}

// A process-scope counting PMC makes its event's row THREAD on every CPU, a
// system-scope one STANDALONE on its CPU only; released, FREE again. Counting
// ProfileTime also runs the timer: STANDALONE while started.
static void test_dispositions(void) // privileged
{
    uint32_t sc = soft_row(PMC_SW_SYSCALLS), cs = soft_row(PMC_SW_CONTEXT_SWITCHES);
    uint32_t ticks = soft_row(PMC_SW_PROFILE_TICKS), t = timer_row(), last = ci.ncpu - 1;
    HANDLE tc, sys, pt;
    EXPECT_STATUS(alloc(&tc, PMC_MODE_TC, PMC_EVENT_SW(PMC_SW_SYSCALLS), PMC_CPU_ANY),
                  STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&sys, PMC_MODE_SC, PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES), last),
                  STATUS_SUCCESS);
    for (uint32_t cpu = 0; cpu < ci.ncpu; cpu++) {
        struct pmc_rowinfo i = row_of(cpu, sc);
        EXPECT(i.disp == PMC_DISP_THREAD && i.owner_pid == SysGetPid() && i.mode == PMC_MODE_TC &&
                   i.event == PMC_EVENT_SW(PMC_SW_SYSCALLS) && i.users == 1,
               "cpu %u %s: disposition %u owner %u mode %u event 0x%x users %u", cpu, i.name,
               i.disp, i.owner_pid, i.mode, i.event, i.users);
        EXPECT_ROW(cpu, cs, cpu == last ? PMC_DISP_STANDALONE : PMC_DISP_FREE, 1u);
    }
    EXPECT(row_of(last, cs).mode == PMC_MODE_SC, "system-scope mode");
    EXPECT_STATUS(alloc(&pt, PMC_MODE_TC, ProfileTime, PMC_CPU_ANY), STATUS_SUCCESS);
    EXPECT_ROW(0, t, PMC_DISP_FREE, 1u); // the timer runs from the start
    EXPECT_STATUS(NtPmcStart(pt), STATUS_SUCCESS);
    struct pmc_rowinfo i = row_of(0, t);
    EXPECT(i.disp == PMC_DISP_STANDALONE && i.event == ProfileTime && i.mode == PMC_MODE_TC &&
               i.owner_pid == SysGetPid() && i.reload > 0,
           "timer while started: disposition %u event %u mode %u reload %lu", i.disp, i.event,
           i.mode, (unsigned long)i.reload);
    EXPECT_ROW(0, ticks, PMC_DISP_THREAD, 1u);
    NtClose(pt);
    NtClose(tc);
    NtClose(sys);
    for (uint32_t cpu = 0; cpu < ci.ncpu; cpu++) {
        EXPECT_ROW(cpu, sc, PMC_DISP_FREE, 1u);
        EXPECT_ROW(cpu, cs, PMC_DISP_FREE, 1u);
        EXPECT_ROW(cpu, t, PMC_DISP_FREE, 1u);
    }
}

// A row in use cannot be disabled (hwpmc's EBUSY); released, it can.
static void test_busy(void) // privileged
{
    uint32_t sc = soft_row(PMC_SW_SYSCALLS), t = timer_row(), last = ci.ncpu - 1;
    HANDLE h, pt;
    EXPECT_STATUS(alloc(&h, PMC_MODE_SC, PMC_EVENT_SW(PMC_SW_SYSCALLS), last), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAdmin(last, sc, PMC_STATE_DISABLED), STATUS_PMC_ROW_BUSY);
    if (last > 0) // another CPU's row is free
        EXPECT_STATUS(NtPmcAdmin(0, sc, PMC_STATE_DISABLED), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAdmin(0, sc, PMC_STATE_FREE), STATUS_SUCCESS);
    EXPECT_STATUS(alloc(&pt, PMC_MODE_TC, ProfileTime, PMC_CPU_ANY), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(pt), STATUS_SUCCESS);
    for (uint32_t cpu = 0; cpu < ci.ncpu; cpu++)
        EXPECT_STATUS(NtPmcAdmin(cpu, t, PMC_STATE_DISABLED), STATUS_PMC_ROW_BUSY);
    EXPECT_STATUS(NtPmcStop(pt), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAdmin(last, t, PMC_STATE_DISABLED), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAdmin(last, t, PMC_STATE_FREE), STATUS_SUCCESS);
    NtClose(pt);
    NtClose(h);
    EXPECT_STATUS(NtPmcAdmin(last, sc, PMC_STATE_DISABLED), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAdmin(last, sc, PMC_STATE_FREE), STATUS_SUCCESS);
    EXPECT_ROW(last, sc, PMC_DISP_FREE, 1u);
}

// A disabled software row is STANDALONE and refuses new PMCs that would
// count on its CPU (process scope needs it everywhere); enabled, they come.
static void test_soft_round_trip(void) // privileged
{
    uint32_t sc = soft_row(PMC_SW_SYSCALLS), last = ci.ncpu - 1;
    uint32_t ev = PMC_EVENT_SW(PMC_SW_SYSCALLS);
    HANDLE h;
    EXPECT_STATUS(NtPmcAdmin(last, sc, PMC_STATE_DISABLED), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAdmin(last, sc, PMC_STATE_DISABLED), STATUS_SUCCESS); // again: nothing
    EXPECT_ROW(last, sc, PMC_DISP_STANDALONE, 0u);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, ev, PMC_CPU_ANY), STATUS_PMC_ROW_DISABLED);
    EXPECT_STATUS(alloc(&h, PMC_MODE_SC, ev, last), STATUS_PMC_ROW_DISABLED);
    EXPECT_STATUS(alloc(&h, PMC_MODE_SC, ev, PMC_CPU_ANY), STATUS_PMC_ROW_DISABLED);
    if (last > 0) {
        EXPECT_ROW(0, sc, PMC_DISP_FREE, 1u);
        EXPECT_STATUS(alloc(&h, PMC_MODE_SC, ev, 0), STATUS_SUCCESS);
        NtClose(h);
    }
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, PMC_EVENT_SW(PMC_SW_PAGE_FAULTS), PMC_CPU_ANY),
                  STATUS_SUCCESS); // another event's row is not touched
    NtClose(h);
    EXPECT_STATUS(NtPmcAdmin(last, sc, PMC_STATE_FREE), STATUS_SUCCESS);
    EXPECT_ROW(last, sc, PMC_DISP_FREE, 1u);
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, ev, PMC_CPU_ANY), STATUS_SUCCESS);
    NtClose(h);
}

__attribute__((noinline)) static uint64_t busy(uint64_t n)
{
    uint64_t x = 1;
    while (n--)
        __asm__ volatile("add %1, %0; rol $3, %0" : "+r"(x) : "r"(n));
    return x;
}

// Each CPU's ProfileTime ticks (NtPmcCpuCounts) over 200 ms of ProfileTime
// counted by a PMC of this process; ticks[cpu] is the increase.
static void ticks_while_started(uint64_t *ticks)
{
    static uint64_t a[64 * PMC_SW_COUNT], b[64 * PMC_SW_COUNT];
    uint32_t n = 0;
    HANDLE h;
    EXPECT_STATUS(alloc(&h, PMC_MODE_TC, ProfileTime, PMC_CPU_ANY), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcCpuCounts(a, 64, &n), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcStart(h), STATUS_SUCCESS);
    struct sys_clock c0, c;
    SysClock(&c0);
    do {
        busy(20000);
        SysClock(&c);
    } while (c.ns - c0.ns < 200000000ull);
    EXPECT_STATUS(NtPmcStop(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcCpuCounts(b, 64, &n), STATUS_SUCCESS);
    NtClose(h);
    for (uint32_t cpu = 0; cpu < n && cpu < 64; cpu++)
        ticks[cpu] = b[cpu * PMC_SW_COUNT + PMC_SW_PROFILE_TICKS] -
                     a[cpu * PMC_SW_COUNT + PMC_SW_PROFILE_TICKS];
}

// ProfileTime's timer disabled on the last CPU: no tick there while every
// other CPU takes them; enabled again, it takes them too.
static void test_timer_round_trip(void) // privileged
{
    uint32_t t = timer_row(), last = ci.ncpu - 1;
    uint64_t ticks[64] = {0};
    ULONG old = 0;
    NtQueryIntervalProfile(ProfileTime, &old);
    EXPECT_STATUS(NtSetIntervalProfile(1221, ProfileTime), STATUS_SUCCESS);
    EXPECT_STATUS(NtPmcAdmin(last, t, PMC_STATE_DISABLED), STATUS_SUCCESS);
    EXPECT_ROW(last, t, PMC_DISP_STANDALONE, 0u);
    ticks_while_started(ticks);
    for (uint32_t cpu = 0; cpu < ci.ncpu; cpu++)
        EXPECT(cpu == last ? ticks[cpu] == 0 : ticks[cpu] > 100,
               "timer disabled on cpu %u: cpu %u took %lu ticks in 200 ms", last, cpu,
               (unsigned long)ticks[cpu]);
    EXPECT_STATUS(NtPmcAdmin(last, t, PMC_STATE_FREE), STATUS_SUCCESS);
    EXPECT_ROW(last, t, PMC_DISP_FREE, 1u);
    ticks_while_started(ticks);
    EXPECT(ticks[last] > 100, "enabled again: cpu %u took %lu ticks", last,
           (unsigned long)ticks[last]);
    NtSetIntervalProfile(old, ProfileTime);
}

// ---------------------------------------------------------------------------

static int helper_exit(const char *arg)
{
    return atoi(arg);
}

static const struct child_helper helpers[] = {
    CHILD_HELPER(exit),
};

static const struct child_test tests[] = {
    CHILD_TEST(version),
    CHILD_TEST(cpuinfo),
    CHILD_TEST(pmcinfo_errors),
    CHILD_TEST(admin_unprivileged),
    CHILD_TEST_PRIVILEGED(admin_errors),
    CHILD_TEST_PRIVILEGED(dispositions),
    CHILD_TEST_PRIVILEGED(busy),
    CHILD_TEST_PRIVILEGED(soft_round_trip),
    CHILD_TEST_PRIVILEGED(timer_round_trip),
};

static struct suite suite = {
    SUITE("pmcadmintests", helpers, tests, TEST_TIMEOUT_MS),
    .driver.timed = 1,
};

SUITE_MAIN(suite)
