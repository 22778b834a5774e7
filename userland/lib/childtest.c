// The harness of the suites whose tests run in child processes: see
// include/childtest.h for what each part promises.
#include <childtest.h>
#include <clock.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const char *self = "?";
const char *test_name = "?";
int failures;
int child_argc;
char **child_argv;
struct sys_process_info plist[PLIST_MAX];

// ---------------------------------------------------------------------------
// Checking.

void failf(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# %s:%d: ", test_name, line);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

// ---------------------------------------------------------------------------
// Processes.

// SysProcessList fills what fits and says STATUS_BUFFER_OVERFLOW when more
// did not: a full plist is still worth reading.
uint32_t list_processes(void)
{
    uint32_t count = 0;
    NTSTATUS s = SysProcessList(plist, PLIST_MAX, &count);
    if (!NT_SUCCESS(s) && s != STATUS_BUFFER_OVERFLOW)
        return 0;
    return count < PLIST_MAX ? count : PLIST_MAX;
}

struct sys_process_info *find_process(uint32_t pid)
{
    uint32_t n = list_processes();
    for (uint32_t i = 0; i < n; i++)
        if (plist[i].pid == pid)
            return &plist[i];
    return NULL;
}

int privileged(void)
{
    struct sys_process_info *p = find_process(SysGetPid());
    return p && p->privileged;
}

NTSTATUS spawn_child(uint32_t flags, HANDLE *h, const char *name, const char *arg)
{
    const char *argv[] = {self, "--child", name, arg, NULL}; // a NULL arg ends argv early
    return SysSpawn(self, argv, flags, h);
}

// ---------------------------------------------------------------------------
// The table of tests.

int run_in_child(const struct child_test *tests, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tests[i].name, name) == 0) {
            test_name = name;
            tests[i].run();
            return failures ? 1 : 0;
        }
    return -1;
}

// ---------------------------------------------------------------------------
// The driver.

// SysWait, but a child still running after timeout_ms is killed first (and
// *timed_out set): SysWait itself has no timeout, so this polls the process
// list until the child is a zombie. Without a pid (a bad handle) it is a
// plain SysWait, which then says what is wrong.
static NTSTATUS wait_child(HANDLE h, uint64_t timeout_ms, int *status, int *timed_out)
{
    uint32_t pid = 0;
    SysProcessId(h, &pid);
    *timed_out = 0;
    uint64_t deadline = clock_ns() + timeout_ms * 1000000ull;
    struct sys_process_info *p;
    while (pid && (p = find_process(pid)) && p->state != PROC_ZOMBIE) {
        if (clock_ns() > deadline) {
            *timed_out = 1;
            SysKill(pid);
            break;
        }
        SysSleep(10);
    }
    return SysWait(h, status);
}

// Noinline, so that the buffer lies below the caller's frame: the stack the
// driver's later calls will use.
__attribute__((noinline)) static void prefault_stack(void)
{
    volatile char buf[32 * 1024];
    for (size_t i = 0; i < sizeof buf; i += 512)
        buf[i] = 0;
}

static int selected(const struct driver *d, const char *name)
{
    for (int i = 0; i < d->nnames; i++)
        if (strstr(name, d->names[i]))
            return 1;
    return d->nnames <= 0;
}

void driver_start(struct driver *d)
{
    int planned = 1; // leak_check
    for (size_t i = 0; i < d->ntests; i++)
        planned += selected(d, d->tests[i].name);
    d->privileged = privileged();
    d->n = d->passed = d->failed = 0;
    printf("KTAP version 1\n1..%d\n", planned);
    prefault_stack();
    HANDLE h;
    if (NT_SUCCESS(spawn_child(0, &h, "exit", "0"))) {
        int status, timed_out;
        wait_child(h, d->timeout_ms, &status, &timed_out);
        NtClose(h);
    }
    d->before_status = SysSelfCheck(&d->before);
}

static void ktap_line(struct driver *d, const char *name, int ok)
{
    printf("%sok %d %s\n", ok ? "" : "not ", ++d->n, name);
    if (ok)
        d->passed++;
    else
        d->failed++;
}

// Whether the test child ended as t->outcome says; prints why not.
static int test_passed(const struct driver *d, const struct child_test *t)
{
    uint64_t start = clock_ns();
    HANDLE h;
    NTSTATUS s = spawn_child(t->flags, &h, t->name, d->arg);
    if (!NT_SUCCESS(s)) {
        printf("# %s: SysSpawn: %s\n", t->name, nt_status_name(s));
        return 0;
    }
    int status = 0, timed_out;
    s = wait_child(h, d->timeout_ms, &status, &timed_out);
    NtClose(h);
    if (d->timed)
        printf("# %s: %lu ms\n", t->name, (clock_ns() - start) / 1000000);
    if (!NT_SUCCESS(s)) {
        printf("# %s: SysWait: %s\n", t->name, nt_status_name(s));
        return 0;
    }
    if (timed_out) {
        printf("# %s: still running after %lu s: killed\n", t->name, d->timeout_ms / 1000);
        return 0;
    }
    int want = t->outcome == KILLED ? EXIT_STATUS_KILLED : 0;
    if (status != want) {
        printf("# %s: exit status %d, expected %d%s\n", t->name, status, want,
               status == EXIT_STATUS_KILLED ? " (killed)" : "");
        return 0;
    }
    return 1;
}

static void run_test(struct driver *d, const struct child_test *t, const char *suite)
{
    if ((t->flags & SPAWN_PRIVILEGED) && !d->privileged) {
        printf("ok %d %s # SKIP ", ++d->n, t->name);
        if (d->skip_why)
            printf("%s\n", d->skip_why);
        else
            printf("needs the privilege (try sudo %s)\n", suite);
        d->passed++;
        return;
    }
    ktap_line(d, t->name, test_passed(d, t));
}

int driver_run(struct driver *d, const char *suite)
{
    for (size_t i = 0; i < d->ntests; i++)
        if (selected(d, d->tests[i].name))
            run_test(d, &d->tests[i], suite);
    int ok = NT_SUCCESS(d->before_status);
    if (!ok)
        printf("# leak_check: SysSelfCheck: %s\n", nt_status_name(d->before_status));
    else
        ok = counters_settled(&d->before);
    ktap_line(d, "leak_check", ok);
    printf("%s: %d passed, %d failed\n", suite, d->passed, d->failed);
    return d->failed ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Leak counters.

int same_counters(const struct sys_self_check *a, const struct sys_self_check *b, int report)
{
    static const struct {
        const char *name;
        size_t offset;
    } counters[] = {
        {"free pages", offsetof(struct sys_self_check, free_pages)},
        {"heap bytes", offsetof(struct sys_self_check, heap_bytes)},
        {"live processes", offsetof(struct sys_self_check, live_processes)},
        {"live objects", offsetof(struct sys_self_check, live_objects)},
        {"pinned pages", offsetof(struct sys_self_check, pinned_pages)},
    };
    int same = 1;
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        uint64_t x, y;
        memcpy(&x, (const char *)a + counters[i].offset, sizeof x);
        memcpy(&y, (const char *)b + counters[i].offset, sizeof y);
        if (x != y) {
            same = 0;
            if (report)
                printf("# leak: %s %lu before, %lu after\n", counters[i].name, x, y);
        }
    }
    return same;
}

int counters_settled(const struct sys_self_check *before)
{
    struct sys_self_check after = {0};
    for (int tries = 0; tries < 200; tries++) {
        NTSTATUS s = SysSelfCheck(&after);
        if (!NT_SUCCESS(s)) {
            printf("# SysSelfCheck: %s\n", nt_status_name(s));
            return 0;
        }
        if (same_counters(before, &after, 0))
            return 1;
        SysSleep(10);
    }
    return same_counters(before, &after, 1);
}

// ---------------------------------------------------------------------------
// A suite.

static int suite_child(const struct suite *s, int argc, char **argv)
{
    child_argc = argc;
    child_argv = argv;
    const char *name = argv[2];
    test_name = name;
    for (size_t i = 0; i < s->nhelpers; i++)
        if (strcmp(s->helpers[i].name, name) == 0)
            return s->helpers[i].run(argc > 3 ? argv[3] : "");
    int status = run_in_child(s->driver.tests, s->driver.ntests, name);
    if (status < 0)
        printf("# %s: no test or helper called %s\n", s->name, name);
    return status < 0 ? 2 : status;
}

int suite_main(int argc, char **argv, struct suite *s)
{
    self = argc > 0 && argv[0][0] ? argv[0] : s->name;
    if (argc >= 2 && strcmp(argv[1], "--child") == 0)
        return argc >= 3 ? suite_child(s, argc, argv) : 2;
    struct driver *d = &s->driver;
    d->names = argv + 1;
    d->nnames = argc - 1;
    driver_start(d);
    if (d->note)
        d->note(d);
    return driver_run(d, s->name);
}
