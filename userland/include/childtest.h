// childtest: the harness shared by the test suites that run each test in a
// child process of its own (usertests, ntprofiletests, pmctests; stress
// borrows spawn_child).
//
// A suite is one program in two roles. The driver spawns `PROGRAM --child
// NAME [ARG]` for each test, so that a test that crashes, hangs or corrupts
// memory takes only itself down, and prints one KTAP line per test from how
// the child ended. Inside the child, a failed EXPECT prints a "# NAME:LINE:
// ..." diagnostic and counts in `failures`; the child's exit status is the
// verdict. The driver also checks that the whole suite leaked nothing.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <syscall.h>

#define PAGE 4096

// Addresses no user pointer may reach: the kernel's half and the hole below it.
#define KERNEL_DIRECT_MAP 0xffff800000000000ull // all RAM, mapped for the kernel
#define KERNEL_BASE       0xffffffff80000000ull // where the kernel is linked
#define KERNEL_IMAGE      0xffffffff80100000ull // the kernel's code
#define NON_CANONICAL     0x0000800000000000ull // first address past the user half

// This program's path in the ramdisk: what spawn_child runs. main sets it
// (from argv[0]) before anything spawns.
extern const char *self;

// ---------------------------------------------------------------------------
// Checking, inside a test child.

extern const char *test_name; // for the diagnostics; "?" until the child sets it
extern int failures;          // failed checks so far: the test child exits 1 if any

// Prints "# test_name:line: " and the message, and counts a failure.
void failf(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define EXPECT(cond, ...) \
    do { \
        if (!(cond)) \
            failf(__LINE__, __VA_ARGS__); \
    } while (0)

#define EXPECT_STATUS(call, want) \
    do { \
        NTSTATUS got_ = (call); \
        if (got_ != (want)) \
            failf(__LINE__, "%s: %s, expected %s", #call, nt_status_name(got_), \
                  nt_status_name(want)); \
    } while (0)

#define EXPECT_FAILS(call) \
    do { \
        NTSTATUS got_ = (call); \
        if (NT_SUCCESS(got_)) \
            failf(__LINE__, "%s: %s, expected a failure", #call, nt_status_name(got_)); \
    } while (0)

// ---------------------------------------------------------------------------
// Processes.

// The process list as the last list_processes or find_process read it.
#define PLIST_MAX 256
extern struct sys_process_info plist[PLIST_MAX];

// Fills plist; returns how many entries are valid (0 when the call fails; a
// list longer than plist comes back cut to plist's size).
uint32_t list_processes(void);

// pid's entry in a fresh list (a pointer into plist); NULL when it is gone.
struct sys_process_info *find_process(uint32_t pid);

// Whether this process holds the system-profile privilege.
int privileged(void);

// Spawns `self --child name arg` (arg may be NULL) with SysSpawn's flags.
// SysSpawn gives a handle; SysProcessId gives the pid behind it, which
// SysKill and the process list speak.
NTSTATUS spawn_child(uint32_t flags, HANDLE *h, const char *name, const char *arg);

// ---------------------------------------------------------------------------
// A suite's table of tests.

enum outcome { EXITS_0, KILLED }; // KILLED: a fault test, which the kernel must kill

struct child_test {
    const char *name;
    void (*run)(void);    // the test itself, in the child
    enum outcome outcome; // how the child must end for the test to pass
    uint32_t flags; // SysSpawn's; SPAWN_PRIVILEGED: run privileged (skipped when the driver is not)
};

// A table's rows, each naming its test once: test_NAME, run as "NAME", must
// exit 0 (CHILD_TEST), the same run privileged (CHILD_TEST_PRIVILEGED), or
// fault_NAME, run as "fault_NAME", must be killed (CHILD_FAULT).
// clang-format off
#define CHILD_TEST(name)            {#name, test_##name, EXITS_0, 0}
#define CHILD_TEST_PRIVILEGED(name) {#name, test_##name, EXITS_0, SPAWN_PRIVILEGED}
#define CHILD_FAULT(name)           {"fault_" #name, fault_##name, KILLED, 0}
// clang-format on

// The child's side: runs the test called name as test_name. Returns the
// child's exit status (0 when every check passed), or -1 when no test has
// that name.
int run_in_child(const struct child_test *tests, size_t n, const char *name);

// A helper: what a test spawns (`self --child NAME ARG`) for a process of its
// own that does NAME with ARG (exit with a status, spin, sleep, ...).
struct child_helper {
    const char *name;
    int (*run)(const char *arg); // ARG, "" when there is none; returns the exit status
};

// A helpers table's row: helper_NAME, spawned as NAME.
// clang-format off
#define CHILD_HELPER(name) {#name, helper_##name}
// clang-format on

// The child's whole command line, `self --child NAME [ARG...]`, for a helper
// or test that reads more than ARG.
extern int child_argc;
extern char **child_argv;

// ---------------------------------------------------------------------------
// The driver's side.

struct driver {
    // Set by the suite:
    const struct child_test *tests;
    size_t ntests;
    char **names;         // run the tests whose names contain one of these
    int nnames;           // (every test when there are none)
    uint64_t timeout_ms;  // a test child still running after this is killed
    const char *arg;      // given to every test child after its name; NULL for none
    const char *skip_why; // the SKIP reason of a privileged test when the driver is not;
                          // NULL: "needs the privilege (try sudo SUITE)"
    int timed;            // print "# NAME: N ms" once each test child has ended
    void (*note)(const struct driver *d); // prints the suite's "#" lines after the plan; or NULL
    // Kept by driver_start and driver_run:
    int privileged;               // whether the driver holds the privilege
    NTSTATUS before_status;       // SysSelfCheck's answer at the start, and
    struct sys_self_check before; // the leak counters it gave
    int n, passed, failed;        // the KTAP lines so far (a skip is a pass)
};

// Prints the KTAP plan ("KTAP version 1", "1..N": the selected tests and the
// leak check) and reads the leak counters, having first touched the stack
// the driver may use later and run one child outside the count: neither
// pages mapped on demand nor what the kernel allocates once, for a parent's
// first child, are leaks. That child is `self --child exit 0`: the suite
// needs an "exit" helper.
void driver_start(struct driver *d);

// Runs each selected test in a child and prints its KTAP line: "ok N name",
// or "# ..." lines saying why and "not ok N name", or "ok N name # SKIP why"
// when it needs the privilege the driver lacks. Then the leak check's line
// (the counters must come back to where driver_start found them) and
// "suite: N passed, N failed". Returns the driver's exit status.
int driver_run(struct driver *d, const char *suite);

// ---------------------------------------------------------------------------
// Leak counters: free pages, heap bytes, live processes, live objects,
// pinned pages (SysSelfCheck).

// Whether a and b agree on them; with report, prints a "# leak: ..." line for
// each that differs.
int same_counters(const struct sys_self_check *a, const struct sys_self_check *b, int report);

// Whether they come back to *before. The kernel may finish releasing a dead
// process a little after SysWait returns (on another CPU), so this gives them
// up to two seconds, then reports those that differ.
int counters_settled(const struct sys_self_check *before);

// ---------------------------------------------------------------------------
// A suite: one program in both roles.

struct suite {
    const char *name; // the program's, and the KTAP summary's
    const struct child_helper *helpers;
    size_t nhelpers;
    struct driver driver; // the tests and the driver's settings (names come from argv)
};

// What every suite sets, its name, arrays of helpers and tests and the
// test children's timeout: the first initializers of its struct suite (the
// others are optional).
#define SUITE(suite_name, h, t, timeout) \
    .name = (suite_name), .helpers = (h), .nhelpers = sizeof(h) / sizeof(h)[0], \
    .driver.tests = (t), .driver.ntests = sizeof(t) / sizeof(t)[0], .driver.timeout_ms = (timeout)

// A suite's main. Sets self (argv[0], else the suite's name). As
// `self --child NAME [ARG...]`: runs the helper called NAME with ARG, else the
// test called NAME (run_in_child's status), else prints "# SUITE: no test or
// helper called NAME" and returns 2 (2 too without a NAME). Otherwise the
// driver over the tests named on the command line: driver_start, the note,
// driver_run.
int suite_main(int argc, char **argv, struct suite *s);

// The main of a suite that needs nothing before suite_main.
#define SUITE_MAIN(s) \
    int main(int argc, char **argv) \
    { \
        return suite_main(argc, argv, &(s)); \
    }
