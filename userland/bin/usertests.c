// usertests: the system-call and process tests, run from the shell or by
// `make test`.
//
// Every test runs in a child process of its own (`usertests --child NAME`),
// so a test that crashes, hangs or corrupts memory takes only itself down.
// The driver prints one KTAP line per test, counts the kernel's free pages,
// heap bytes, processes and objects before and after the whole suite (a leak
// is a failure of its own), and ends with "usertests: N passed, N failed".
//
// `usertests NAME...` runs only the tests whose names contain one of the NAMEs.
//
// Inside a child, EXPECT() prints a "# test:line: ..." diagnostic and marks
// the test failed; the child's exit status is the verdict (the harness is
// include/childtest.h). Fault tests expect the kernel to kill the child
// instead (exit status EXIT_STATUS_KILLED).
#include <childtest.h>
#include <mallocchurn.h>
#include <clock.h>
#include <process.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define TEST_TIMEOUT_MS 30000 // a child still running after this is killed: "timeout"
#define CONCURRENT      64    // processes in concurrent_processes

// The child's last words when a fault it provoked did not kill it.
static _Noreturn void survived(const char *what)
{
    printf("# %s: still alive after %s\n", test_name, what);
    exit(0);
}

// Runs a helper (see the helpers table) to its end; its exit status, or
// -1000 when it could not be run.
static int run_helper(const char *helper, const char *arg)
{
    const char *argv[] = {self, "--child", helper, arg, NULL};
    int status = 0;
    NTSTATUS s = run_program(self, argv, 0, &status);
    if (!NT_SUCCESS(s)) {
        printf("# %s: running helper %s: %s\n", test_name, helper, nt_status_name(s));
        return -1000;
    }
    return status;
}

// ---------------------------------------------------------------------------
// Helpers: what a test's own children run (`usertests --child HELPER ARG`).

static int helper_exit(const char *arg)
{
    return atoi(arg);
}

static _Noreturn int helper_spin(const char *arg)
{
    (void)arg;
    for (;;)
        __asm__ volatile("pause");
}

static int helper_sleep(const char *arg)
{
    SysSleep(strtoul(arg, NULL, 0));
    return 0;
}

static const char *const passed_args[] = {"one", "two words", "", "last"};

// The child's argv should be: self --child args one "two words" "" last
static int helper_args(const char *arg)
{
    (void)arg; // the first of them
    int n = sizeof passed_args / sizeof passed_args[0];
    if (child_argc != 3 + n || child_argv[child_argc] != NULL)
        return 1;
    for (int i = 0; i < n; i++)
        if (strcmp(child_argv[3 + i], passed_args[i]) != 0)
            return 2 + i;
    return 0;
}

static unsigned count_primes(unsigned below)
{
    unsigned count = 0;
    for (unsigned n = 2; n < below; n++) {
        unsigned d = 2;
        while (d * d <= n && n % d)
            d++;
        count += d * d > n;
    }
    return count;
}

// One of the concurrent processes: its global must stay its own while the
// others run (separate address spaces), and its result reaches the parent.
static volatile unsigned identity;

static int work_result(unsigned i)
{
    return (int)((i * 7 + count_primes(3000)) % 200);
}

static int helper_work(const char *arg)
{
    unsigned me = (unsigned)atoi(arg);
    identity = me;
    SysYield();
    int r = work_result(me);
    SysYield();
    return identity == me ? r : 255;
}

// Exit 0 when our privilege flag is arg ("0" or "1").
static int helper_priv(const char *arg)
{
    struct sys_process_info *p = find_process(SysGetPid());
    return p && p->privileged == (uint32_t)atoi(arg) ? 0 : 1;
}

static const struct child_helper helpers[] = {
    CHILD_HELPER(exit), CHILD_HELPER(spin), CHILD_HELPER(sleep),
    CHILD_HELPER(work), CHILD_HELPER(priv), CHILD_HELPER(args),
};

// ---------------------------------------------------------------------------
// Tests of processes.

static void test_exit_status(void)
{
    static const char *const codes[] = {"0", "1", "42", "255", "1000", "-2"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        int got = run_helper("exit", codes[i]);
        EXPECT(got == atoi(codes[i]), "exit %s: status %d", codes[i], got);
    }
}

static void test_spawn_args(void)
{
    const char *argv[] = {self,           "--child",      "args",         passed_args[0],
                          passed_args[1], passed_args[2], passed_args[3], NULL};
    int status = -1000;
    EXPECT_STATUS(run_program(self, argv, 0, &status), STATUS_SUCCESS);
    EXPECT(status == 0, "the child saw different arguments (status %d)", status);
}

static void test_spawn_limits(void)
{
    HANDLE h;
    const char *argv[MAX_ARGS + 2];
    const char *exit0[] = {self, "--child", "exit", "0", NULL};
    EXPECT_FAILS(SysSpawn("no-such-program", exit0, 0, &h));
    EXPECT_FAILS(SysSpawn("", exit0, 0, &h));

    // Exactly MAX_ARGS entries: accepted (the helper ignores the extras).
    for (int i = 0; i < MAX_ARGS; i++)
        argv[i] = i < 4 ? exit0[i] : "x";
    argv[MAX_ARGS] = NULL;
    int status = -1000;
    EXPECT_STATUS(run_program(self, argv, 0, &status), STATUS_SUCCESS);
    EXPECT(status == 0, "MAX_ARGS arguments: status %d", status);

    // One more: refused.
    argv[MAX_ARGS] = "x";
    argv[MAX_ARGS + 1] = NULL;
    NTSTATUS s = SysSpawn(self, argv, 0, &h);
    EXPECT(!NT_SUCCESS(s), "MAX_ARGS + 1 arguments: %s", nt_status_name(s));
    if (NT_SUCCESS(s))
        SysWait(h, &status), NtClose(h);

    // More than MAX_ARG_BYTES of strings: refused.
    static char big[MAX_ARG_BYTES + 1];
    memset(big, 'a', MAX_ARG_BYTES);
    const char *huge[] = {self, "--child", "exit", "0", big, NULL};
    s = SysSpawn(self, huge, 0, &h);
    EXPECT(!NT_SUCCESS(s), "MAX_ARG_BYTES + 1 bytes of arguments: %s", nt_status_name(s));
    if (NT_SUCCESS(s))
        SysWait(h, &status), NtClose(h);
}

static void test_getpid(void)
{
    uint32_t pid = SysGetPid();
    EXPECT(pid != 0, "pid 0");
    EXPECT(SysGetPid() == pid, "pid changed");
    struct sys_process_info *p = find_process(pid);
    EXPECT(p != NULL, "pid %u is not in the process list", pid);
    if (p) {
        EXPECT(strncmp(p->name, "usertests", PROCESS_NAME_MAX) == 0, "name \"%.32s\"", p->name);
        EXPECT(p->state == PROC_RUNNING, "state %u while running", p->state);
        EXPECT(p->parent != 0 && p->parent != pid, "parent %u", p->parent);
        EXPECT(p->pages > 0, "0 pages mapped");
    }
    HANDLE h = NULL;
    EXPECT_STATUS(SysOpenProcess(pid, &h), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_INVALID_HANDLE);
    EXPECT_FAILS(SysOpenProcess(0x7ffffff0, &h));
}

// Spawns a helper, kills it by its pid and checks how it ended.
static void spawn_and_kill(const char *helper, const char *arg, uint32_t flags)
{
    HANDLE h;
    NTSTATUS s = spawn_child(flags, &h, helper, arg);
    EXPECT(NT_SUCCESS(s), "spawn %s: %s", helper, nt_status_name(s));
    if (!NT_SUCCESS(s))
        return;
    uint32_t pid = 0;
    EXPECT_STATUS(SysProcessId(h, &pid), STATUS_SUCCESS);
    if (!pid) {
        NtClose(h);
        return;
    }
    SysSleep(50); // let it get going (or, suspended, stay put)
    uint64_t start = clock_ns();
    EXPECT_STATUS(SysKill(pid), STATUS_SUCCESS);
    int status = 0;
    EXPECT_STATUS(SysWait(h, &status), STATUS_SUCCESS);
    EXPECT(status == EXIT_STATUS_KILLED, "%s: exit status %d, expected %d", helper, status,
           EXIT_STATUS_KILLED);
    EXPECT(clock_ns() - start < 5000000000ull, "the kill took over 5 s");
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
}

static void test_kill_spinning(void)
{
    spawn_and_kill("spin", "", 0);
}
static void test_kill_sleeping(void)
{
    spawn_and_kill("sleep", "100000", 0);
}
static void test_kill_suspended(void)
{
    spawn_and_kill("exit", "0", SPAWN_SUSPENDED);
}

static void test_kill_bad_pid(void)
{
    EXPECT_STATUS(SysKill(0), STATUS_INVALID_CID);
    EXPECT_STATUS(SysKill(0x7ffffff0), STATUS_INVALID_CID);
    EXPECT_STATUS(SysKill(UINT32_MAX), STATUS_INVALID_CID);
    HANDLE h;
    EXPECT_STATUS(SysOpenProcess(0x7ffffff0, &h), STATUS_INVALID_CID);
}

// Process groups and the console's foreground group (lib/abi/syscalls.h): a child leads a
// group only when spawned with SPAWN_NEW_GROUP, else it is in its parent's;
// no group is led by a stranger's pid; the interrupt mode's statuses.
static void test_console_groups(void)
{
    HANDLE led, joined;
    uint32_t led_pid = 0, joined_pid = 0, pending = 7;
    NTSTATUS s = spawn_child(SPAWN_SUSPENDED | SPAWN_NEW_GROUP, &led, "exit", "0");
    EXPECT(NT_SUCCESS(s), "spawn with SPAWN_NEW_GROUP: %s", nt_status_name(s));
    s = spawn_child(SPAWN_SUSPENDED, &joined, "exit", "0");
    EXPECT(NT_SUCCESS(s), "spawn: %s", nt_status_name(s));
    SysProcessId(led, &led_pid);
    SysProcessId(joined, &joined_pid);
    EXPECT_STATUS(SysConsoleForeground(led_pid), STATUS_SUCCESS);
    EXPECT_STATUS(SysConsoleForeground(joined_pid), STATUS_INVALID_CID); // in our group
    EXPECT_STATUS(SysConsoleForeground(0x7ffffff0), STATUS_INVALID_CID);
    EXPECT_STATUS(SysConsoleForeground(0), STATUS_SUCCESS);
    EXPECT_STATUS(SysInterruptMode(2, NULL), STATUS_INVALID_PARAMETER);
    EXPECT_STATUS(SysInterruptMode(INTERRUPT_NOTIFY, (uint32_t *)16), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysInterruptMode(INTERRUPT_NOTIFY, &pending), STATUS_SUCCESS);
    EXPECT(pending == 0, "an interrupt pending with none sent: %u", pending);
    EXPECT_STATUS(SysInterruptMode(INTERRUPT_END, NULL), STATUS_SUCCESS);
    for (int i = 0; i < 2; i++) {
        HANDLE h = i ? joined : led;
        int status = -1000;
        SysResume(h);
        EXPECT_STATUS(SysWait(h, &status), STATUS_SUCCESS);
        EXPECT(status == 0, "child %d: exit status %d", i, status);
        NtClose(h);
    }
}

static void test_suspended_resume(void)
{
    HANDLE h;
    NTSTATUS s = spawn_child(SPAWN_SUSPENDED, &h, "exit", "7");
    EXPECT(NT_SUCCESS(s), "spawn: %s", nt_status_name(s));
    if (!NT_SUCCESS(s))
        return;
    uint32_t pid = 0;
    EXPECT_STATUS(SysProcessId(h, &pid), STATUS_SUCCESS);
    struct sys_process_info *p = find_process(pid);
    EXPECT(p && p->state == PROC_SUSPENDED, "state %u just after a suspended spawn",
           p ? p->state : 0);
    SysSleep(100);
    p = find_process(pid);
    EXPECT(p && p->state == PROC_SUSPENDED, "state %u 100 ms later", p ? p->state : 0);
    EXPECT_STATUS(SysResume(h), STATUS_SUCCESS);
    int status = 0;
    EXPECT_STATUS(SysWait(h, &status), STATUS_SUCCESS);
    EXPECT(status == 7, "exit status %d, expected 7", status);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
}

// Closing the only handle of a running child must neither stop it nor leak
// it (the leak check after the suite sees the latter).
static void test_close_before_exit(void)
{
    HANDLE h;
    NTSTATUS s = spawn_child(0, &h, "sleep", "100");
    EXPECT(NT_SUCCESS(s), "spawn: %s", nt_status_name(s));
    if (!NT_SUCCESS(s))
        return;
    uint32_t pid = 0;
    EXPECT_STATUS(SysProcessId(h, &pid), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    uint64_t deadline = clock_ns() + 5000000000ull;
    struct sys_process_info *p;
    while ((p = find_process(pid)) && p->state != PROC_ZOMBIE && clock_ns() < deadline)
        SysSleep(20);
    EXPECT(!p || p->state == PROC_ZOMBIE, "the child did not finish in 5 s");
}

static void test_concurrent_processes(void)
{
    HANDLE h[CONCURRENT];
    int spawned[CONCURRENT] = {0};
    char arg[CONCURRENT][8];
    for (int i = 0; i < CONCURRENT; i++) {
        snprintf(arg[i], sizeof arg[i], "%d", i);
        NTSTATUS s = spawn_child(0, &h[i], "work", arg[i]);
        spawned[i] = NT_SUCCESS(s);
        EXPECT(spawned[i], "spawn %d: %s", i, nt_status_name(s));
    }
    for (int i = 0; i < CONCURRENT; i++) {
        if (!spawned[i])
            continue;
        int status = -1000;
        EXPECT_STATUS(SysWait(h[i], &status), STATUS_SUCCESS);
        EXPECT(status == work_result((unsigned)i), "process %d: status %d, expected %d", i, status,
               work_result((unsigned)i));
        EXPECT_STATUS(NtClose(h[i]), STATUS_SUCCESS);
    }
}

static void test_privilege_denied(void)
{
    struct sys_process_info *p = find_process(SysGetPid());
    EXPECT(p && !p->privileged, "a child spawned without SPAWN_PRIVILEGED holds the privilege");
    if (!p || p->privileged)
        return; // do not call SysPowerOff with the privilege
    HANDLE h;
    const char *argv[] = {self, "--child", "exit", "0", NULL};
    EXPECT_STATUS(SysSpawn(self, argv, SPAWN_PRIVILEGED, &h), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(SysPowerOff(), STATUS_PRIVILEGE_NOT_HELD);
}

// Spawned with SPAWN_PRIVILEGED (when the driver holds it, else skipped).
static void test_privilege_granted(void)
{
    struct sys_process_info *p = find_process(SysGetPid());
    EXPECT(p && p->privileged, "spawned with SPAWN_PRIVILEGED but not privileged");
    const char *argv1[] = {self, "--child", "priv", "1", NULL};
    const char *argv0[] = {self, "--child", "priv", "0", NULL};
    int status = -1000;
    EXPECT_STATUS(run_program(self, argv1, SPAWN_PRIVILEGED, &status), STATUS_SUCCESS);
    EXPECT(status == 0, "a privileged spawn gave an unprivileged child");
    status = -1000;
    EXPECT_STATUS(run_program(self, argv0, 0, &status), STATUS_SUCCESS);
    EXPECT(status == 0, "the privilege was inherited without SPAWN_PRIVILEGED");
}

// ---------------------------------------------------------------------------
// Tests of memory.

static void *map_pages(size_t pages, uint32_t prot)
{
    void *p = NULL;
    NTSTATUS s = SysMap(&p, pages * PAGE, prot);
    EXPECT(NT_SUCCESS(s), "SysMap(%lu pages): %s", pages, nt_status_name(s));
    return NT_SUCCESS(s) ? p : NULL;
}

static void test_map_unmap(void)
{
    uint8_t *p = map_pages(4, PROT_READ | PROT_WRITE);
    if (!p)
        return;
    EXPECT((uintptr_t)p % PAGE == 0, "mapping at %p is not page aligned", (void *)p);
    EXPECT((uintptr_t)p < NON_CANONICAL, "mapping at %p is outside the user half", (void *)p);
    size_t nonzero = 0;
    for (size_t i = 0; i < 4 * PAGE; i++)
        nonzero += p[i] != 0;
    EXPECT(nonzero == 0, "%lu bytes of a new mapping are not zero", nonzero);
    for (size_t i = 0; i < 4 * PAGE; i++)
        p[i] = (uint8_t)(i * 7);
    size_t wrong = 0;
    for (size_t i = 0; i < 4 * PAGE; i++)
        wrong += p[i] != (uint8_t)(i * 7);
    EXPECT(wrong == 0, "%lu bytes read back wrong", wrong);

    // Unmapping the middle leaves both ends usable.
    EXPECT_STATUS(SysUnmap(p + PAGE, 2 * PAGE), STATUS_SUCCESS);
    EXPECT(p[0] == 0 && p[3 * PAGE + 1] == (uint8_t)((3 * PAGE + 1) * 7), "the ends changed");
    p[0] = 1, p[3 * PAGE] = 2;
    EXPECT_STATUS(SysUnmap(p, PAGE), STATUS_SUCCESS);
    EXPECT_STATUS(SysUnmap(p + 3 * PAGE, PAGE), STATUS_SUCCESS);

    // A chosen address, then addresses that are not ours to choose.
    void *want = (void *)0x50000000;
    void *at = want;
    EXPECT_STATUS(SysMap(&at, PAGE, PROT_READ | PROT_WRITE), STATUS_SUCCESS);
    EXPECT(at == want, "asked for %p, got %p", want, at);
    if (at == want) {
        *(volatile uint64_t *)at = 42;
        EXPECT_STATUS(SysUnmap(at, PAGE), STATUS_SUCCESS);
    }
    static const uint64_t kernel_addrs[] = {KERNEL_DIRECT_MAP, KERNEL_IMAGE, NON_CANONICAL,
                                            NON_CANONICAL - PAGE};
    for (size_t i = 0; i < sizeof kernel_addrs / sizeof kernel_addrs[0]; i++) {
        at = (void *)(uintptr_t)kernel_addrs[i];
        size_t len = kernel_addrs[i] == NON_CANONICAL - PAGE ? 2 * PAGE : PAGE;
        NTSTATUS s = SysMap(&at, len, PROT_READ | PROT_WRITE);
        EXPECT(!NT_SUCCESS(s), "SysMap at %p, %lu bytes: %s", (void *)(uintptr_t)kernel_addrs[i],
               len, nt_status_name(s));
        EXPECT_FAILS(SysUnmap((void *)(uintptr_t)kernel_addrs[i], PAGE));
    }
    at = NULL;
    NTSTATUS s = SysMap(&at, (size_t)1 << 46, PROT_READ | PROT_WRITE); // 64 TiB
    EXPECT(!NT_SUCCESS(s), "a 64 TiB mapping: %s", nt_status_name(s));
    if (NT_SUCCESS(s))
        SysUnmap(at, (size_t)1 << 46);
}

// Mapping and unmapping repeatedly returns every page (after one round for
// page tables the kernel may keep).
static void test_map_no_leak(void)
{
    struct sys_self_check before, after;
    for (int round = 0; round < 101; round++) {
        if (round == 1)
            SysSelfCheck(&before);
        uint8_t *p = map_pages(16, PROT_READ | PROT_WRITE);
        if (!p)
            return;
        for (int i = 0; i < 16; i++)
            p[i * PAGE] = 1;
        EXPECT_STATUS(SysUnmap(p, 16 * PAGE), STATUS_SUCCESS);
    }
    SysSelfCheck(&after);
    EXPECT(after.free_pages == before.free_pages,
           "free pages %lu before 100 map/unmap rounds, %lu after", before.free_pages,
           after.free_pages);
}

static void test_malloc_stress(void)
{
    enum { SLOTS = 200 };
    static unsigned char *slot[SLOTS];
    static size_t size[SLOTS];
    struct malloc_churn c = {
        .alloc = malloc,
        .resize = realloc,
        .release = free,
        .slot = slot,
        .size = size,
        .slots = SLOTS,
        .rounds = 4000,
        .seed = 0x2545F4914F6CDD1Dull,
        .small = 2000,
        .large_every = 50,
        .large_min = 64 * 1024,
        .large_span = 200 * 1024,
    };
    malloc_churn_run(&c);
    EXPECT(c.failed == 0, "allocating %lu bytes failed", c.failed);
    if (c.failed)
        return;
    EXPECT(c.overwritten == 0, "%lu bytes of blocks overwritten", c.overwritten);
    EXPECT(c.misaligned == 0, "%lu blocks not 16-byte aligned", c.misaligned);
    EXPECT(c.lost == 0, "realloc lost %lu bytes", c.lost);
    malloc_churn_free(&c);
    struct malloc_stats st;
    malloc_stats(&st);
    EXPECT(st.allocations == 0 && st.bytes_in_use == 0,
           "after freeing everything: %lu allocations, %lu bytes", st.allocations, st.bytes_in_use);
    EXPECT(st.bytes_mapped <= 256 * 1024, "after freeing everything %lu bytes are still mapped",
           st.bytes_mapped);
    void *big = calloc((size_t)1 << 62, 8);
    EXPECT(big == NULL, "calloc overflow returned %p", big);
}

// ---------------------------------------------------------------------------
// Tests of the machine, the clock, files and the console.

static void test_clock_sleep(void)
{
    struct sys_clock a, b;
    EXPECT_STATUS(SysClock(&a), STATUS_SUCCESS);
    EXPECT_STATUS(SysSleep(50), STATUS_SUCCESS);
    EXPECT_STATUS(SysClock(&b), STATUS_SUCCESS);
    uint64_t ms = (b.ns - a.ns) / 1000000;
    EXPECT(b.ns > a.ns && ms >= 49 && ms < 5000, "SysSleep(50) took %lu ms", ms);
    EXPECT(b.tsc > a.tsc, "the TSC did not advance");
    EXPECT(a.tsc_hz > 0, "tsc_hz is 0");
    EXPECT_STATUS(SysYield(), STATUS_SUCCESS);
    EXPECT_STATUS(SysSleep(0), STATUS_SUCCESS);
}

static void test_system_info(void)
{
    struct sys_info info;
    EXPECT_STATUS(SysInfo(&info), STATUS_SUCCESS);
    EXPECT(info.ncpus >= 1, "%u CPUs", info.ncpus);
    EXPECT(info.total_pages > 0 && info.free_pages <= info.total_pages, "free pages %lu of %lu",
           info.free_pages, info.total_pages);
    EXPECT(info.nprocesses >= 2, "%u processes, but the driver and this one run", info.nprocesses);
    EXPECT(info.tsc_hz > 0, "tsc_hz is 0");
    static struct sys_cpu_info cpus[256];
    uint32_t count = 0;
    EXPECT_STATUS(SysCpuInfo(cpus, 256, &count), STATUS_SUCCESS);
    EXPECT(count == info.ncpus, "SysCpuInfo: %u CPUs, SysInfo: %u", count, info.ncpus);
    for (uint32_t i = 0; i < count && i < 256; i++)
        EXPECT(cpus[i].online && cpus[i].id < count, "cpu row %u: id %u online %u", i, cpus[i].id,
               cpus[i].online);
    struct sys_self_check sc;
    EXPECT_STATUS(SysSelfCheck(&sc), STATUS_SUCCESS);
    EXPECT(sc.live_processes >= 2, "%lu live processes", sc.live_processes);
}

// The teaching call SysIrqoffSpin: the time is bounded, each half takes at
// least the time asked, measured by the TSC.
static void test_irqoff_spin(void)
{
    struct sys_irqoff_split r = {0, 0, 0};
    EXPECT_STATUS(SysIrqoffSpin(0, &r), STATUS_INVALID_PARAMETER);
    EXPECT_STATUS(SysIrqoffSpin(IRQOFF_SPIN_MAX_US + 1, &r), STATUS_INVALID_PARAMETER);
    EXPECT_STATUS(SysIrqoffSpin(~0ull, &r), STATUS_INVALID_PARAMETER);
    EXPECT(r.tsc_hz == 0, "a refused call wrote its result");
    EXPECT_STATUS(SysIrqoffSpin(100, &r), STATUS_SUCCESS);
    uint64_t want = 100 * r.tsc_hz / 1000000;
    EXPECT(r.tsc_hz > 0 && r.locked_tsc >= want && r.open_tsc >= want,
           "100 us: locked %lu, open %lu TSC ticks, want >= %lu each", r.locked_tsc, r.open_tsc,
           want);
}

// A call given room for n rows must not write the row after them.
static void test_buffer_bounds(void)
{
    static struct sys_process_info procs[2];
    static struct sys_cpu_info cpus[2];
    static struct sys_profile_source sources[2];
    static char text[16 + 8];
    memset(procs, 0xA5, sizeof procs);
    memset(cpus, 0xA5, sizeof cpus);
    memset(sources, 0xA5, sizeof sources);
    memset(text, 0xA5, sizeof text);
    uint32_t count;
    size_t got;
    SysProcessList(procs, 1, &count); // the driver and us: two processes, room for one
    SysCpuInfo(cpus, 1, &count);
    SysProfileSources(sources, 1, &count);
    SysFileList(text, 16, &got);
    size_t untouched = 0;
    for (size_t i = 0; i < sizeof procs[1]; i++)
        untouched += ((uint8_t *)&procs[1])[i] == 0xA5;
    EXPECT(untouched == sizeof procs[1], "SysProcessList wrote past max");
    untouched = 0;
    for (size_t i = 0; i < sizeof cpus[1]; i++)
        untouched += ((uint8_t *)&cpus[1])[i] == 0xA5;
    EXPECT(untouched == sizeof cpus[1], "SysCpuInfo wrote past max");
    untouched = 0;
    for (size_t i = 0; i < sizeof sources[1]; i++)
        untouched += ((uint8_t *)&sources[1])[i] == 0xA5;
    EXPECT(untouched == sizeof sources[1], "SysProfileSources wrote past max");
    untouched = 0;
    for (size_t i = 16; i < sizeof text; i++)
        untouched += (uint8_t)text[i] == 0xA5;
    EXPECT(untouched == sizeof text - 16, "SysFileList wrote past len");
    // A list longer than the buffer says how much it needs.
    NTSTATUS s = SysFileList(text, 4, &got);
    EXPECT(!NT_SUCCESS(s) && got > 4, "SysFileList(len 4): %s, needed %lu", nt_status_name(s), got);
}

static void test_files(void)
{
    char *list = program_list();
    EXPECT(list != NULL, "SysFileList failed");
    EXPECT(program_exists("usertests") && program_exists("sh"), "usertests or sh missing from:\n%s",
           list ? list : "");
    free(list);
    char buf[8] = {0};
    size_t got = 0;
    EXPECT_STATUS(SysFileRead("usertests", 0, buf, 4, &got), STATUS_SUCCESS);
    EXPECT(got == 4 && memcmp(buf, "\177ELF", 4) == 0, "usertests does not start with \\177ELF");
    got = 99;
    NTSTATUS s = SysFileRead("usertests", (uint64_t)1 << 40, buf, 4, &got);
    EXPECT(!NT_SUCCESS(s) || got == 0, "reading past the end: %s, got %lu", nt_status_name(s), got);
    EXPECT_FAILS(SysFileRead("no-such-file", 0, buf, 4, &got));
}

static void test_console(void)
{
    EXPECT_STATUS(SysWrite(1, "", 0), STATUS_SUCCESS);
    EXPECT_STATUS(SysWrite(1, "# console: SysWrite works\n", 26), STATUS_SUCCESS);
    EXPECT_FAILS(SysWrite(7, "x", 1));
    EXPECT_FAILS(SysWrite(-1, "x", 1));
    char c;
    size_t got;
    EXPECT_FAILS(SysRead(7, &c, 1, &got)); // must fail at once, not wait for input
}

// ---------------------------------------------------------------------------
// Handles.

static const uintptr_t bad_handles[] = {0, 0x1234, 0x7fffffff, (uintptr_t)-3, KERNEL_DIRECT_MAP};

static void test_bad_handles(void)
{
    static ULONG buckets[4096];
    HANDLE prof;
    struct sys_profile_stats st;
    int status;
    for (size_t i = 0; i < sizeof bad_handles / sizeof bad_handles[0]; i++) {
        HANDLE h = (HANDLE)bad_handles[i];
        EXPECT_STATUS(NtClose(h), STATUS_INVALID_HANDLE);
        EXPECT_STATUS(SysResume(h), STATUS_INVALID_HANDLE);
        EXPECT_STATUS(SysWait(h, &status), STATUS_INVALID_HANDLE);
        EXPECT_STATUS(NtStartProfile(h), STATUS_INVALID_HANDLE);
        EXPECT_STATUS(NtStopProfile(h), STATUS_INVALID_HANDLE);
        EXPECT_STATUS(SysProfileStats(h, &st), STATUS_INVALID_HANDLE);
        if (h) // a NULL process means "every process" to NtCreateProfile
            EXPECT_STATUS(NtCreateProfile(&prof, h, (void *)0x400000, 0x10000, 4, buckets,
                                          sizeof buckets, ProfileTime, 1),
                          STATUS_INVALID_HANDLE);
    }
}

// Profile handles: right type, right order of operations, closed once.
static void test_profile_handles(void)
{
    static ULONG buckets[4096]; // 64 KiB range / 16-byte buckets
    HANDLE proc = NULL, prof = NULL;
    EXPECT_STATUS(SysOpenProcess(SysGetPid(), &proc), STATUS_SUCCESS);
    NTSTATUS s = NtCreateProfile(&prof, proc, (void *)0x400000, 0x10000, 4, buckets, sizeof buckets,
                                 ProfileTime, 1);
    EXPECT(NT_SUCCESS(s), "NtCreateProfile: %s", nt_status_name(s));
    if (NT_SUCCESS(s)) {
        struct sys_profile_stats st;
        int status;
        EXPECT_STATUS(SysProfileStats(prof, &st), STATUS_SUCCESS);
        EXPECT_STATUS(NtStopProfile(prof), STATUS_PROFILING_NOT_STARTED);
        EXPECT_STATUS(NtStartProfile(prof), STATUS_SUCCESS);
        EXPECT_STATUS(NtStartProfile(prof), STATUS_PROFILING_NOT_STOPPED);
        EXPECT_STATUS(NtStopProfile(prof), STATUS_SUCCESS);
        // A profile is not a process, nor a process a profile.
        EXPECT_STATUS(SysWait(prof, &status), STATUS_OBJECT_TYPE_MISMATCH);
        EXPECT_STATUS(NtStartProfile(proc), STATUS_OBJECT_TYPE_MISMATCH);
        EXPECT_STATUS(NtClose(prof), STATUS_SUCCESS);
        EXPECT_STATUS(NtClose(prof), STATUS_INVALID_HANDLE);
        EXPECT_STATUS(NtStartProfile(prof), STATUS_INVALID_HANDLE);
    }
    // A range that wraps around the address space.
    s = NtCreateProfile(&prof, proc, (void *)~(uintptr_t)0xFFF, 0x2000, 4, buckets, sizeof buckets,
                        ProfileTime, 1);
    EXPECT(!NT_SUCCESS(s), "a wrapping range: %s", nt_status_name(s));
    if (NT_SUCCESS(s))
        NtClose(prof);
    EXPECT_STATUS(NtClose(proc), STATUS_SUCCESS);
}

// ---------------------------------------------------------------------------
// Bad pointers: every system call that takes a pointer, given each bad one.

// Valid arguments for the calls' other parameters, set up by test_bad_pointers.
static HANDLE valid_self, valid_child, valid_profile;
static ULONG profile_buf[4096];
static char scratch[256];
static size_t scratch_got;
static uint32_t scratch_count;
// `self --child exit 0`: a child that exits at once.
static const char **exit0_argv(void)
{
    static const char *argv[] = {"usertests", "--child", "exit", "0", NULL};
    argv[0] = self;
    return argv;
}

static NTSTATUS via_write(void *p)
{
    return SysWrite(1, p, 16);
}
static NTSTATUS via_read_buf(void *p)
{
    return SysRead(0, p, 16, &scratch_got);
}
static NTSTATUS via_read_got(void *p)
{
    return SysRead(0, scratch, 16, p);
}
// A call that should have failed but made a process or a profile: undo it,
// so one kernel bug shows as one failure rather than as a leak too.
// (h is a pointer: the call that fills it is an argument evaluated first.)
static NTSTATUS reap(NTSTATUS s, HANDLE *h, int is_process)
{
    int status;
    if (NT_SUCCESS(s) && is_process)
        SysWait(*h, &status);
    if (NT_SUCCESS(s))
        NtClose(*h);
    return s;
}

static NTSTATUS via_spawn_path(void *p)
{
    HANDLE h = NULL;
    return reap(SysSpawn(p, exit0_argv(), 0, &h), &h, 1);
}
static NTSTATUS via_spawn_argv(void *p)
{
    HANDLE h = NULL;
    return reap(SysSpawn(self, p, 0, &h), &h, 1);
}
static NTSTATUS via_spawn_arg(void *p)
{
    const char *argv[] = {self, "--child", p, NULL};
    HANDLE h = NULL;
    return reap(SysSpawn(self, argv, 0, &h), &h, 1);
}
static NTSTATUS via_spawn_handle(void *p)
{
    return SysSpawn(self, exit0_argv(), 0, p);
}
static NTSTATUS via_wait(void *p)
{
    return SysWait(valid_child, p);
}
static NTSTATUS via_map(void *p)
{
    return SysMap(p, PAGE, PROT_READ | PROT_WRITE);
}
static NTSTATUS via_clock(void *p)
{
    return SysClock(p);
}
static NTSTATUS via_plist_buf(void *p)
{
    return SysProcessList(p, 4, &scratch_count);
}
static NTSTATUS via_plist_count(void *p)
{
    return SysProcessList((void *)plist, 4, p);
}
static NTSTATUS via_info(void *p)
{
    return SysInfo(p);
}
static NTSTATUS via_open(void *p)
{
    return SysOpenProcess(SysGetPid(), p);
}
static NTSTATUS via_fread_name(void *p)
{
    return SysFileRead(p, 0, scratch, 16, &scratch_got);
}
static NTSTATUS via_fread_buf(void *p)
{
    return SysFileRead(self, 0, p, 16, &scratch_got);
}
static NTSTATUS via_fread_got(void *p)
{
    return SysFileRead(self, 0, scratch, 16, p);
}
static NTSTATUS via_flist_buf(void *p)
{
    return SysFileList(p, 4096, &scratch_got);
}
static NTSTATUS via_flist_needed(void *p)
{
    return SysFileList(scratch, sizeof scratch, p);
}
static NTSTATUS via_cpus_buf(void *p)
{
    return SysCpuInfo(p, 4, &scratch_count);
}
static NTSTATUS via_cpus_count(void *p)
{
    return SysCpuInfo((void *)plist, 4, p);
}
static NTSTATUS via_profile_handle(void *p)
{
    return NtCreateProfile(p, valid_self, (void *)0x400000, 0x10000, 4, profile_buf,
                           sizeof profile_buf, ProfileTime, 1);
}
static NTSTATUS via_profile_buffer(void *p)
{
    HANDLE h = NULL;
    return reap(NtCreateProfile(&h, valid_self, (void *)0x400000, 0x10000, 4, p, sizeof profile_buf,
                                ProfileTime, 1),
                &h, 0);
}
static NTSTATUS via_profile_ex_handle(void *p)
{
    GROUP_AFFINITY g = {.Mask = 1};
    return NtCreateProfileEx(p, valid_self, (void *)0x400000, 0x10000, 4, profile_buf,
                             sizeof profile_buf, ProfileTime, 1, &g);
}
static NTSTATUS via_profile_ex_buffer(void *p)
{
    GROUP_AFFINITY g = {.Mask = 1};
    HANDLE h = NULL;
    return reap(NtCreateProfileEx(&h, valid_self, (void *)0x400000, 0x10000, 4, p,
                                  sizeof profile_buf, ProfileTime, 1, &g),
                &h, 0);
}
static NTSTATUS via_profile_ex_groups(void *p)
{
    HANDLE h = NULL;
    return reap(NtCreateProfileEx(&h, valid_self, (void *)0x400000, 0x10000, 4, profile_buf,
                                  sizeof profile_buf, ProfileTime, 1, p),
                &h, 0);
}
static NTSTATUS via_query_interval(void *p)
{
    return NtQueryIntervalProfile(ProfileTime, p);
}
static NTSTATUS via_sources_buf(void *p)
{
    return SysProfileSources(p, 4, &scratch_count);
}
static NTSTATUS via_sources_count(void *p)
{
    static struct sys_profile_source rows[4];
    return SysProfileSources(rows, 4, p);
}
static NTSTATUS via_profile_stats(void *p)
{
    return SysProfileStats(valid_profile, p);
}
static NTSTATUS via_pmc_trace_buf(void *p)
{
    return SysPmcTrace(0, p, 64, &scratch_got);
}
static NTSTATUS via_pmc_trace_got(void *p)
{
    return SysPmcTrace(0, scratch, 64, p);
}
static NTSTATUS via_pmc_info_buf(void *p)
{
    return SysPmcInfo(p, 64, &scratch_got);
}
static NTSTATUS via_pmc_info_got(void *p)
{
    return SysPmcInfo(scratch, sizeof scratch, p);
}
static NTSTATUS via_self_check(void *p)
{
    return SysSelfCheck(p);
}
static NTSTATUS via_irqoff_spin(void *p)
{
    return SysIrqoffSpin(1, p);
}

static NTSTATUS via_interrupt_mode(void *p)
{
    return SysInterruptMode(INTERRUPT_END, p);
}

// What a call may answer besides STATUS_ACCESS_VIOLATION.
enum also {
    ONLY_AV,
    ANY_FAILURE, // the call's other checks may come first
    NULL_ENDS,   // an argv element: NULL is not bad, it ends the list
};

static const struct pointer_call {
    const char *name;
    NTSTATUS (*call)(void *p);
    enum also also;
} pointer_calls[] = {
    {"SysWrite buf", via_write, ONLY_AV},
    {"SysRead buf", via_read_buf, ONLY_AV},
    {"SysRead got", via_read_got, ONLY_AV},
    {"SysSpawn path", via_spawn_path, ONLY_AV},
    {"SysSpawn argv", via_spawn_argv, ONLY_AV},
    {"SysSpawn argv[2]", via_spawn_arg, NULL_ENDS},
    {"SysSpawn process", via_spawn_handle, ONLY_AV},
    {"SysWait exit_status", via_wait, ONLY_AV},
    {"SysMap addr", via_map, ONLY_AV},
    {"SysClock", via_clock, ONLY_AV},
    {"SysProcessList buf", via_plist_buf, ONLY_AV},
    {"SysProcessList count", via_plist_count, ONLY_AV},
    {"SysInfo", via_info, ONLY_AV},
    {"SysOpenProcess process", via_open, ONLY_AV},
    {"SysFileRead name", via_fread_name, ONLY_AV},
    {"SysFileRead buf", via_fread_buf, ONLY_AV},
    {"SysFileRead got", via_fread_got, ONLY_AV},
    {"SysFileList buf", via_flist_buf, ONLY_AV},
    {"SysFileList needed", via_flist_needed, ONLY_AV},
    {"SysCpuInfo buf", via_cpus_buf, ONLY_AV},
    {"SysCpuInfo count", via_cpus_count, ONLY_AV},
    {"NtCreateProfile ProfileHandle", via_profile_handle, ONLY_AV},
    {"NtCreateProfile Buffer", via_profile_buffer, ONLY_AV},
    {"NtCreateProfileEx ProfileHandle", via_profile_ex_handle, ONLY_AV},
    {"NtCreateProfileEx Buffer", via_profile_ex_buffer, ONLY_AV},
    {"NtCreateProfileEx GroupAffinity", via_profile_ex_groups, ONLY_AV},
    {"NtQueryIntervalProfile Interval", via_query_interval, ONLY_AV},
    {"SysProfileSources buf", via_sources_buf, ONLY_AV},
    {"SysProfileSources count", via_sources_count, ONLY_AV},
    {"SysProfileStats out", via_profile_stats, ONLY_AV},
    {"SysPmcTrace buf", via_pmc_trace_buf, ANY_FAILURE}, // op 0's meaning is the kernel's
    {"SysPmcTrace got", via_pmc_trace_got, ANY_FAILURE},
    {"SysPmcInfo buf", via_pmc_info_buf, ONLY_AV},
    {"SysPmcInfo got", via_pmc_info_got, ONLY_AV},
    {"SysSelfCheck", via_self_check, ONLY_AV},
    {"SysIrqoffSpin out", via_irqoff_spin, ONLY_AV},
    {"SysInterruptMode pending", via_interrupt_mode, NULL_ENDS},
};

// A misaligned bad pointer may also be refused for its alignment.
static void check_pointer(const struct pointer_call *c, const char *what, uintptr_t p)
{
    if (c->also == NULL_ENDS && p == 0)
        return;
    NTSTATUS s = c->call((void *)p);
    if (s == STATUS_ACCESS_VIOLATION || (c->also == ANY_FAILURE && !NT_SUCCESS(s)))
        return;
    if (s == STATUS_DATATYPE_MISALIGNMENT && p % 4)
        return;
    failf(__LINE__, "%s = %s (%p): %s, expected STATUS_ACCESS_VIOLATION", c->name, what, (void *)p,
          nt_status_name(s));
}

// Every call of pointer_calls with every bad pointer: into the hole after
// page, into the kernel, non-canonical, at the top, straddling into the hole.
static void bad_pointers_each_call(uintptr_t hole)
{
    const struct {
        const char *what;
        uintptr_t p;
    } bad[] = {
        {"NULL", 0},
        {"unmapped 0x1000", 0x1000},
        {"an unmapped page", hole},
        {"unmapped, misaligned", hole + 3},
        {"kernel direct map", KERNEL_DIRECT_MAP},
        {"kernel image", KERNEL_IMAGE},
        {"kernel, misaligned", KERNEL_IMAGE + 5},
        {"non-canonical", NON_CANONICAL},
        {"top of memory", ~(uintptr_t)7},
        {"running into a hole", hole - 2}, // even a 4-byte value straddles
    };

    EXPECT_STATUS(SysOpenProcess(SysGetPid(), &valid_self), STATUS_SUCCESS);
    NTSTATUS profile = NtCreateProfile(&valid_profile, valid_self, (void *)0x400000, 0x10000, 4,
                                       profile_buf, sizeof profile_buf, ProfileTime, 1);
    EXPECT(NT_SUCCESS(profile), "NtCreateProfile (for SysProfileStats): %s",
           nt_status_name(profile));
    NTSTATUS child = SysSpawn(self, exit0_argv(), 0, &valid_child); // for SysWait
    EXPECT(NT_SUCCESS(child), "spawn: %s", nt_status_name(child));

    for (size_t c = 0; c < sizeof pointer_calls / sizeof pointer_calls[0]; c++) {
        const struct pointer_call *call = &pointer_calls[c];
        if ((call->call == via_profile_stats && !NT_SUCCESS(profile)) ||
            (call->call == via_wait && !NT_SUCCESS(child)))
            continue;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
            check_pointer(call, bad[i].what, bad[i].p);
    }
    if (NT_SUCCESS(child)) {
        int status = -1000;
        EXPECT_STATUS(SysWait(valid_child, &status), STATUS_SUCCESS);
        EXPECT(status == 0, "the child waited for: status %d", status);
        NtClose(valid_child);
    }
    if (NT_SUCCESS(profile))
        NtClose(valid_profile);
    NtClose(valid_self);
}

// Buffers whose length carries them off the end of the user half, around
// the top of the address space, or from the page into the hole after it.
static void bad_lengths(uintptr_t hole)
{
    uintptr_t top = ~(uintptr_t)0xFFF;
    EXPECT_STATUS(SysWrite(1, (void *)top, 0x2000), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysWrite(1, (void *)(NON_CANONICAL - 16), 32), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysRead(0, (void *)top, 0x2000, &scratch_got), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysFileRead(self, 0, (void *)(hole - 8), 64, &scratch_got),
                  STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysFileRead(self, 0, scratch, SIZE_MAX, &scratch_got), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysPmcInfo((void *)(hole - 8), 64, &scratch_got), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysProcessList((void *)(hole - 8), 4, &scratch_count), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(SysCpuInfo((void *)(hole - 8), 4, &scratch_count), STATUS_ACCESS_VIOLATION);
    EXPECT_FAILS(SysUnmap((void *)top, 0x2000));
}

// Misaligned but valid pointers are allowed to work (x86 does not care)
// or to be refused with STATUS_DATATYPE_MISALIGNMENT: never to crash.
static void misaligned_pointers(void)
{
    NTSTATUS s = SysClock((struct sys_clock *)(scratch + 1));
    EXPECT(s == STATUS_SUCCESS || s == STATUS_DATATYPE_MISALIGNMENT, "misaligned SysClock: %s",
           nt_status_name(s));
    s = SysInfo((struct sys_info *)(scratch + 3));
    EXPECT(s == STATUS_SUCCESS || s == STATUS_DATATYPE_MISALIGNMENT, "misaligned SysInfo: %s",
           nt_status_name(s));
    s = SysOpenProcess(SysGetPid(), (HANDLE *)(scratch + 5));
    EXPECT(s == STATUS_SUCCESS || s == STATUS_DATATYPE_MISALIGNMENT,
           "misaligned SysOpenProcess: %s", nt_status_name(s));
    if (NT_SUCCESS(s)) {
        HANDLE h;
        memcpy(&h, scratch + 5, sizeof h);
        EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    }
}

static void test_bad_pointers(void)
{
    // A page followed by a hole: pointers into the hole, and ranges that
    // start in the page and run into it.
    uint8_t *page = map_pages(2, PROT_READ | PROT_WRITE);
    if (!page)
        return;
    EXPECT_STATUS(SysUnmap(page + PAGE, PAGE), STATUS_SUCCESS);
    uintptr_t hole = (uintptr_t)page + PAGE;
    memset(page, 'a', PAGE); // a string with no end before the hole
    bad_pointers_each_call(hole);
    bad_lengths(hole);
    misaligned_pointers();
    SysUnmap(page, PAGE);
}

// ---------------------------------------------------------------------------
// Faults: each test provokes one in itself and expects to be killed for it.

static void fault_null_write(void)
{
    *(volatile int *)0 = 1;
    survived("writing to NULL");
}
static void fault_null_read(void)
{
    (void)*(volatile int *)0;
    survived("reading NULL");
}
static void fault_kernel_read(void)
{
    (void)*(volatile uint64_t *)KERNEL_IMAGE;
    survived("reading kernel code");
}
static void fault_kernel_write(void)
{
    *(volatile uint64_t *)KERNEL_DIRECT_MAP = 0;
    survived("writing the kernel's direct map");
}
static void fault_non_canonical(void)
{
    (void)*(volatile uint64_t *)NON_CANONICAL; // #GP, not #PF
    survived("reading a non-canonical address");
}
static void fault_cli(void)
{
    __asm__ volatile("cli");
    survived("cli");
}
static void fault_hlt(void)
{
    __asm__ volatile("hlt");
    survived("hlt");
}
static void fault_port_io(void)
{
    __asm__ volatile("outb %%al, $0x80" : : "a"(0));
    survived("outb");
}
static void fault_ud2(void)
{
    __asm__ volatile("ud2");
    survived("ud2");
}
static void fault_int3(void)
{
    __asm__ volatile("int3");
    survived("int3");
}
static void fault_divide(void)
{
    volatile unsigned num = 1, den = 0;
    volatile unsigned q = num / den;
    (void)q;
    survived("dividing by zero");
}
static void fault_write_text(void)
{
    *(volatile uint8_t *)(uintptr_t)test_exit_status = 0xC3;
    survived("writing to the program's code");
}
static void fault_write_rodata(void)
{
    static const char text[] = "read-only";
    *(volatile char *)text = 'R';
    survived("writing read-only data");
}
static void fault_write_readonly_map(void)
{
    volatile uint8_t *p = map_pages(1, PROT_READ);
    if (p && *p == 0)
        *p = 1;
    survived("writing a PROT_READ mapping");
}
static void fault_exec_stack(void)
{
    volatile uint8_t code[16] = {0xC3}; // ret
    ((void (*)(void))(uintptr_t)code)();
    survived("running code on the stack");
}
static void fault_exec_map(void)
{
    uint8_t *code = map_pages(1, PROT_READ | PROT_WRITE);
    if (code) {
        code[0] = 0xC3;
        ((void (*)(void))(uintptr_t)code)();
    }
    survived("running code in a mapping without PROT_EXEC");
}
static void fault_after_unmap(void)
{
    volatile uint8_t *p = map_pages(1, PROT_READ | PROT_WRITE);
    if (!p)
        exit(1);
    *p = 1;
    SysUnmap((void *)p, PAGE);
    *p = 2;
    survived("writing unmapped memory");
}

// ---------------------------------------------------------------------------
// The list.

static const struct child_test tests[] = {
    CHILD_TEST(exit_status),
    CHILD_TEST(spawn_args),
    CHILD_TEST(spawn_limits),
    CHILD_TEST(getpid),
    CHILD_TEST(kill_spinning),
    CHILD_TEST(kill_sleeping),
    CHILD_TEST(kill_suspended),
    CHILD_TEST(kill_bad_pid),
    CHILD_TEST(console_groups),
    CHILD_TEST(suspended_resume),
    CHILD_TEST(close_before_exit),
    CHILD_TEST(concurrent_processes),
    CHILD_TEST(privilege_denied),
    CHILD_TEST_PRIVILEGED(privilege_granted),
    CHILD_TEST(map_unmap),
    CHILD_TEST(map_no_leak),
    CHILD_TEST(malloc_stress),
    CHILD_TEST(clock_sleep),
    CHILD_TEST(system_info),
    CHILD_TEST(irqoff_spin),
    CHILD_TEST(buffer_bounds),
    CHILD_TEST(files),
    CHILD_TEST(console),
    CHILD_TEST(bad_handles),
    CHILD_TEST(profile_handles),
    CHILD_TEST(bad_pointers),
    CHILD_FAULT(null_write),
    CHILD_FAULT(null_read),
    CHILD_FAULT(kernel_read),
    CHILD_FAULT(kernel_write),
    CHILD_FAULT(non_canonical),
    CHILD_FAULT(cli),
    CHILD_FAULT(hlt),
    CHILD_FAULT(port_io),
    CHILD_FAULT(ud2),
    CHILD_FAULT(int3),
    CHILD_FAULT(divide),
    CHILD_FAULT(write_text),
    CHILD_FAULT(write_rodata),
    CHILD_FAULT(write_readonly_map),
    CHILD_FAULT(exec_stack),
    CHILD_FAULT(exec_map),
    CHILD_FAULT(after_unmap),
};

// `usertests NAME...`: only the tests whose names contain one of the NAMEs.
static struct suite suite = {
    SUITE("usertests", helpers, tests, TEST_TIMEOUT_MS),
    .driver.skip_why = "usertests does not hold the privilege (try sudo usertests)",
};

SUITE_MAIN(suite)
