// ntprofiletests: the NT profile system calls from ring 3, run by `make test`
// (tests/ntprofile-tests) and from the shell.
//
// Like usertests, every test runs in a child process of its own
// (`ntprofiletests --child NAME ROUNDS`); the driver prints one KTAP line per
// test, checks the kernel's leak counters over the whole suite, and ends with
// "ntprofiletests: N passed, N failed". Tests that need the system-profile
// privilege are spawned with SPAWN_PRIVILEGED (skipped when the driver lacks
// it); the privilege-denial tests are spawned without it.
//
// `ntprofiletests [rounds=N] [NAME...]`: N is the number of processes the
// churn test kills or lets exit with profiles started (default CHURN_ROUNDS);
// NAMEs select the tests whose names contain one of them.
//
// What is sampled is the program's own code: busy_a and busy_b below are
// assembly loops whose exact bytes and ends are known.
#include <childtest.h>
#include <clock.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define TEST_TIMEOUT_MS   240000 // a child still running after this is killed: "timeout"
#define CHURN_ROUNDS      1000   // processes ended with profiles started (rounds=N changes it)
#define LIMIT_PER_CPU     8192   // NT: 8,192 started profiles per processor
#define LINK_PROFILES     240    // started profiles per process of the limit chain (256 handles)
#define BUSY_TURNS        20000  // one call of busy_a/busy_b: well under a millisecond
#define SAMPLE_TIMEOUT_MS 20000  // waiting for samples, at any interval
#define DEFAULT_INTERVAL  78125  // ProfileTime's default, 100 ns units (NT's KiProfileTimeInterval)
#define USER_TOP          USER_ADDRESS_LIMIT // the first address past user space (lib/abi/syscalls.h)

static unsigned rounds = CHURN_ROUNDS;

// ---------------------------------------------------------------------------
// The code being profiled.
//
// busy_a(n): a 20-byte head, then n turns (n >= 1) of a one-instruction loop,
// then ret: 23 bytes, so no bucket size from 4 bytes up divides it and the
// whole loop sits in the last, partial bucket for every bucket size. (Under
// QEMU's TCG a sample's address is where a translated block starts: the loop
// instruction itself.) busy_b(n) starts exactly at busy_a_end with its loop:
// its samples fall on the exclusive end of a range over busy_a.

void busy_a(uint64_t turns);
void busy_b(uint64_t turns);
extern const char busy_a_end[], busy_b_end[];

__asm__(".text\n"
        ".p2align 6\n"
        ".globl busy_a, busy_a_end, busy_b, busy_b_end\n"
        ".type busy_a, @function\n"
        "busy_a:\n"
        "    .fill 17, 1, 0x90\n" // [0, 17)  nop
        "    mov %rdi, %rcx\n"    // [17, 20)
        "1:  loop 1b\n"           // [20, 22) the loop
        "    ret\n"               // [22, 23)
        "busy_a_end:\n"
        ".size busy_a, busy_a_end - busy_a\n"
        ".type busy_b, @function\n"
        "busy_b:\n"
        "2:  sub $1, %rdi\n" // busy_a_end + [0, 4)
        "    jnz 2b\n"
        "    ret\n"
        "busy_b_end:\n"
        ".size busy_b, busy_b_end - busy_b\n");

#define BUSY_A      ((uintptr_t)busy_a)
#define BUSY_A_SIZE ((uintptr_t)busy_a_end - (uintptr_t)busy_a)

// Spins in busy_a (or busy_b) for ms milliseconds.
static void spin_ms(void (*fn)(uint64_t), uint64_t ms)
{
    uint64_t end = clock_ns() + ms * 1000000ull;
    while (clock_ns() < end)
        fn(BUSY_TURNS);
}

// ---------------------------------------------------------------------------
// Small tools.

// A live child of parent's, from the process list; 0 when it has none. (For
// a grandchild: we hold no handle to it, so SysProcessId cannot name it.)
static uint32_t child_of(uint32_t parent)
{
    uint32_t n = list_processes();
    for (uint32_t i = 0; i < n; i++)
        if (plist[i].parent == parent && plist[i].state != PROC_ZOMBIE)
            return plist[i].pid;
    return 0;
}

static unsigned online_cpus(void)
{
    static struct sys_cpu_info info[64];
    uint32_t n = 0, online = 0;
    if (!NT_SUCCESS(SysCpuInfo(info, 64, &n)))
        return 0;
    for (uint32_t i = 0; i < n && i < 64; i++)
        online += info[i].online != 0;
    return online;
}

static HANDLE open_self(void)
{
    HANDLE h = NULL;
    NTSTATUS s = SysOpenProcess(SysGetPid(), &h);
    EXPECT(NT_SUCCESS(s), "SysOpenProcess(self): %s", nt_status_name(s));
    return h;
}

// SysProfileSources' row for a source; NULL when the call fails.
static struct sys_profile_source *source_row(KPROFILE_SOURCE source)
{
    static struct sys_profile_source rows[ProfileSourceCount];
    uint32_t n = 0;
    if (!NT_SUCCESS(SysProfileSources(rows, ProfileSourceCount, &n)))
        return NULL;
    for (uint32_t i = 0; i < n && i < ProfileSourceCount; i++)
        if (rows[i].source == (uint32_t)source)
            return &rows[i];
    return NULL;
}

// The first source the HAL says it cannot run, or ProfileSourceCount if none.
static KPROFILE_SOURCE unsupported_source(void)
{
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        struct sys_profile_source *r = source_row((KPROFILE_SOURCE)s);
        if (r && !r->supported)
            return (KPROFILE_SOURCE)s;
    }
    return ProfileSourceCount;
}

// ProfileTime at its minimum interval when we hold the privilege (samples
// come ~64 times faster); returns the interval to restore, 0 for none.
static ULONG fast_sampling(void)
{
    ULONG old = 0;
    struct sys_profile_source *r = source_row(ProfileTime);
    if (!r || !NT_SUCCESS(NtQueryIntervalProfile(ProfileTime, &old)))
        return 0;
    if (!NT_SUCCESS(NtSetIntervalProfile((ULONG)r->min_interval, ProfileTime)))
        return 0;
    return old;
}

static void restore_sampling(ULONG old)
{
    if (old)
        EXPECT_STATUS(NtSetIntervalProfile(old, ProfileTime), STATUS_SUCCESS);
}

static struct sys_profile_stats stats_of(HANDLE prof)
{
    struct sys_profile_stats st = {0};
    NTSTATUS s = SysProfileStats(prof, &st);
    EXPECT(NT_SUCCESS(s), "SysProfileStats: %s", nt_status_name(s));
    return st;
}

static uint64_t sum(const volatile ULONG *buckets, uint64_t n)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++)
        total += buckets[i];
    return total;
}

static uint64_t nbuckets(uint64_t size, unsigned shift)
{
    return (size + (1ull << shift) - 1) >> shift;
}

// Runs fn until the profile has counted `more` samples in range (or, with
// out, out of range) beyond what it had; whether it got them within
// SAMPLE_TIMEOUT_MS.
static int spin_until(HANDLE prof, void (*fn)(uint64_t), uint64_t more, int out)
{
    struct sys_profile_stats st = stats_of(prof);
    uint64_t want = (out ? st.out_of_range : st.in_range) + more;
    uint64_t deadline = clock_ns() + SAMPLE_TIMEOUT_MS * 1000000ull;
    while (clock_ns() < deadline) {
        fn(BUSY_TURNS);
        st = stats_of(prof);
        if ((out ? st.out_of_range : st.in_range) >= want)
            return 1;
    }
    return 0;
}

static int spin_for_samples(HANDLE prof, void (*fn)(uint64_t), uint64_t more)
{
    return spin_until(prof, fn, more, 0);
}

// Spins for a while whether it samples or not: many ticks of ProfileTime at
// its minimum interval.
static void spin_a_while(void (*fn)(uint64_t))
{
    spin_ms(fn, 30);
}

// A process-scope ProfileTime profile over [base, base + size) on every CPU.
static NTSTATUS profile(HANDLE *h, HANDLE process, uintptr_t base, uint64_t size, ULONG shift,
                        void *buffer, ULONG buffer_size)
{
    return NtCreateProfile(h, process, (void *)base, size, shift, buffer, buffer_size, ProfileTime,
                           (KAFFINITY)-1);
}

// Maps pages pages; with holes, unmaps the first and the last so that what
// stays mapped, [*inside, *inside + (pages - 2) * PAGE), lies between holes.
static uint8_t *map_between_holes(size_t pages)
{
    void *p = NULL;
    NTSTATUS s = SysMap(&p, pages * PAGE, PROT_READ | PROT_WRITE);
    EXPECT(NT_SUCCESS(s), "SysMap(%lu pages): %s", pages, nt_status_name(s));
    if (!NT_SUCCESS(s))
        return NULL;
    uint8_t *base = p;
    EXPECT_STATUS(SysUnmap(base, PAGE), STATUS_SUCCESS);
    EXPECT_STATUS(SysUnmap(base + (pages - 1) * PAGE, PAGE), STATUS_SUCCESS);
    return base + PAGE;
}

// ---------------------------------------------------------------------------
// Helpers: what a test's own children run (`ntprofiletests --child HELPER ARG`).

static int helper_exit(const char *arg)
{
    return atoi(arg);
}

static int helper_spin(const char *arg)
{
    spin_ms(busy_a, strtoul(arg, NULL, 0));
    return 0;
}

static int helper_sleep(const char *arg)
{
    SysSleep(strtoul(arg, NULL, 0));
    return 0;
}

// Spawns a child that sleeps for arg milliseconds and waits for it: that
// child is a process the test that spawned us has no rights over.
static int helper_grandparent(const char *arg)
{
    HANDLE h;
    int status = -1;
    if (!NT_SUCCESS(spawn_child(0, &h, "sleep", arg)) || !NT_SUCCESS(SysWait(h, &status)))
        return 1;
    NtClose(h);
    return status;
}

// One process of the limit chain; arg is how many profiles the processes
// before it have started. It starts LINK_PROFILES more (fewer when that
// reaches the limit) and passes the count on to a child of its own. The last
// one checks that the next start gives STATUS_PROFILING_AT_LIMIT, exactly at
// LIMIT_PER_CPU x online CPUs. Every process waits for its child, so all
// profiles stay started until the last check; exit status 0 is success.
//
// With arg "uN" the links are unprivileged, and their limit is three
// quarters of NT's (the rest is the privileged users' reserve): the last one
// checks the next start is refused there, then sleeps until it is killed, so
// that test_reserve sees a privileged start succeed meanwhile; a failed
// check ends it at once, with exit status 1.
static int chain_end_unprivileged(HANDLE extra)
{
    NTSTATUS s = NtStartProfile(extra);
    if (s != STATUS_PROFILING_AT_LIMIT) {
        printf("# limit: the unprivileged links' next start: %s, expected "
               "STATUS_PROFILING_AT_LIMIT\n",
               nt_status_name(s));
        return 1;
    }
    SysSleep(600000); // killed by test_reserve
    return 1;
}

// The next link of the chain, after started profiles: its exit status.
static int chain_next(bool unprivileged, uint64_t started)
{
    char next[24];
    snprintf(next, sizeof next, "%s%lu", unprivileged ? "u" : "", started);
    HANDLE child;
    int status = -1000;
    NTSTATUS s = spawn_child(privileged() ? SPAWN_PRIVILEGED : 0, &child, "chain", next);
    if (NT_SUCCESS(s))
        s = SysWait(child, &status);
    if (!NT_SUCCESS(s)) {
        printf("# limit: spawning the link after %lu starts: %s\n", started, nt_status_name(s));
        return 1;
    }
    return status;
}

static int helper_chain(const char *arg)
{
    static ULONG bucket __attribute__((aligned(4096)));
    static HANDLE h[LINK_PROFILES + 1];
    bool unprivileged = arg[0] == 'u';
    uint64_t before = strtoul(arg + unprivileged, NULL, 0),
             limit = (uint64_t)LIMIT_PER_CPU * online_cpus();
    if (unprivileged)
        limit -= limit / 4;
    HANDLE me = open_self();
    uint64_t n = 0;
    for (; n < LINK_PROFILES && before + n < limit; n++) {
        NTSTATUS s = profile(&h[n], me, BUSY_A, 4, 2, &bucket, 4);
        if (NT_SUCCESS(s))
            s = NtStartProfile(h[n]);
        if (!NT_SUCCESS(s)) {
            printf("# limit: start number %lu: %s (the limit is %lu)\n", before + n + 1,
                   nt_status_name(s), limit);
            return 1;
        }
    }
    if (before + n < limit)
        return chain_next(unprivileged, before + n);
    // Exactly at the limit: one more fails; stopping one makes room for it.
    int bad = 0;
    HANDLE extra;
    NTSTATUS s = profile(&extra, me, BUSY_A, 4, 2, &bucket, 4);
    if (!NT_SUCCESS(s)) {
        printf("# limit: creating one more: %s\n", nt_status_name(s));
        return 1;
    }
    if (unprivileged)
        return chain_end_unprivileged(extra);
#define CHAIN_EXPECT(call, want) \
    do { \
        NTSTATUS got_ = (call); \
        if (got_ != (want)) { \
            printf("# limit: %s with %lu started: %s, expected %s\n", #call, limit, \
                   nt_status_name(got_), nt_status_name(want)); \
            bad = 1; \
        } \
    } while (0)
    CHAIN_EXPECT(NtStartProfile(extra), STATUS_PROFILING_AT_LIMIT);
    CHAIN_EXPECT(NtStopProfile(h[0]), STATUS_SUCCESS);
    CHAIN_EXPECT(NtStartProfile(extra), STATUS_SUCCESS);
    CHAIN_EXPECT(NtStartProfile(h[0]), STATUS_PROFILING_AT_LIMIT);
    CHAIN_EXPECT(NtStopProfile(extra), STATUS_SUCCESS);
    CHAIN_EXPECT(NtStartProfile(h[0]), STATUS_SUCCESS);
#undef CHAIN_EXPECT
    printf("# limit: %lu profiles started in %lu processes, then STATUS_PROFILING_AT_LIMIT\n",
           limit, (limit + LINK_PROFILES - 1) / LINK_PROFILES);
    return bad; // exiting stops and closes everything, link by link
}

// How an "ender" process of the churn test ends; the test expects the
// matching exit status.
enum churn_end {
    END_EXIT,      // returns from main with its profiles started
    END_KILLED,    // killed by its parent, sleeping or spinning
    END_KILL_SELF, // SysKill on itself
    END_UNMAP,     // unmaps the buffers, stops one profile, exits with the rest started
    END_CLOSE,     // closes the handles while started, then exits
    END_FAULT,     // killed by the kernel for a page fault
    CHURN_ENDS
};

// Starts profiles on every CPU over its own code, one of them system-wide when
// privileged, their buffers straddling a page boundary; then ends as arg says.
static int helper_ender(const char *arg)
{
    enum churn_end end = (enum churn_end)atoi(arg);
    HANDLE me = open_self(), h[3] = {NULL, NULL, NULL};
    uint8_t *region = NULL;
    if (!NT_SUCCESS(SysMap((void **)&region, 2 * PAGE, PROT_READ | PROT_WRITE)) || !me)
        return 10;
    ULONG *small = (ULONG *)(region + PAGE - 12);  // busy_a in 4-byte buckets: 6
    ULONG *window = (ULONG *)(region + PAGE + 64); // 128 KiB in 256-byte buckets: 512
    GROUP_AFFINITY all = {.Mask = 0};
    NTSTATUS s = profile(&h[0], me, BUSY_A, BUSY_A_SIZE, 2, small, 24);
    if (NT_SUCCESS(s))
        s = NtCreateProfileEx(&h[1], me, (void *)(BUSY_A & ~0xFFFFul), 0x20000, 8, window, 2048,
                              ProfileTime, 0, &all);
    if (NT_SUCCESS(s) && privileged())
        s = NtCreateProfile(&h[2], NULL, (void *)BUSY_A, BUSY_A_SIZE, 2, small, 24, ProfileTime,
                            (KAFFINITY)-1);
    for (int i = 0; i < 3 && NT_SUCCESS(s); i++)
        if (h[i])
            s = NtStartProfile(h[i]);
    if (!NT_SUCCESS(s)) {
        printf("# ender: setting up: %s\n", nt_status_name(s));
        return 11;
    }
    busy_a(BUSY_TURNS);
    switch (end) {
    case END_EXIT: return 0;
    case END_KILLED:
        for (;;) { // the parent kills us once it has seen us sleep
            SysSleep(1);
            busy_a(BUSY_TURNS);
        }
    case END_KILL_SELF: SysKill(SysGetPid()); return 12;
    case END_UNMAP:
        if (!NT_SUCCESS(SysUnmap(region, 2 * PAGE)))
            return 13;
        busy_a(BUSY_TURNS);
        return NT_SUCCESS(NtStopProfile(h[0])) ? 0 : 14;
    case END_CLOSE:
        for (int i = 0; i < 3; i++)
            if (h[i] && !NT_SUCCESS(NtClose(h[i])))
                return 15;
        busy_a(BUSY_TURNS);
        return 0;
    case END_FAULT: *(volatile int *)0 = 1; return 16;
    default: return 17;
    }
}

// arg times: start and stop a profile of its own code on ProfileTime (the
// HAL source of every profile here, so each start may be the source's first
// user and each stop its last). Exits with how many calls failed (at most
// 100), saying what the first failure was.
static int helper_racer(const char *arg)
{
    static ULONG buf[8];
    unsigned n = (unsigned)strtoul(arg, NULL, 0), failed = 0;
    HANDLE me = open_self(), h = NULL;
    if (!me || !NT_SUCCESS(profile(&h, me, BUSY_A, BUSY_A_SIZE, 2, buf, sizeof buf)))
        return 101;
    for (unsigned i = 0; i < n && failed < 100; i++) {
        NTSTATUS start = NtStartProfile(h), stop = NtStopProfile(h);
        if (NT_SUCCESS(start) && NT_SUCCESS(stop))
            continue;
        if (failed++ == 0)
            printf("# racer %u, round %u: NtStartProfile %s, NtStopProfile %s\n", SysGetPid(), i,
                   nt_status_name(start), nt_status_name(stop));
    }
    NtClose(h);
    NtClose(me);
    return (int)failed;
}

static const struct child_helper helpers[] = {
    CHILD_HELPER(exit),  CHILD_HELPER(spin),        CHILD_HELPER(sleep), CHILD_HELPER(chain),
    CHILD_HELPER(ender), CHILD_HELPER(grandparent), CHILD_HELPER(racer),
};

// ---------------------------------------------------------------------------
// Validation: NtCreateProfile's checks, in NT's order, with NT's codes.

static ULONG vbuf[1024] __attribute__((aligned(4096))); // a page of buckets
static const ULONG read_only[16] = {1};
static HANDLE created; // where valid handle pointers point

enum scope { SELF, SYSTEM, BAD_PROCESS };
enum handle_ptr { HP_OK, HP_NULL, HP_KERNEL, HP_READ_ONLY, HP_NON_CANONICAL };

static const struct create_case {
    const char *what;
    enum handle_ptr handle;
    enum scope scope;
    uint64_t base, size;
    ULONG shift;
    uintptr_t buffer;
    ULONG buffer_size;
    KPROFILE_SOURCE source;
    KAFFINITY affinity;
    NTSTATUS want;
} create_cases[] = {
#define B ((uintptr_t)vbuf)
#define U 0x400000ull // user addresses (where the program is linked)
    {"BufferSize 0", HP_OK, SELF, U, 64, 2, B, 0, ProfileTime, 1, STATUS_INVALID_PARAMETER_7},
    {"BufferSize 0 before everything", HP_KERNEL, BAD_PROCESS, ~0ull, ~0ull, 0, 1, 0, 0x7777, 0,
     STATUS_INVALID_PARAMETER_7},
    {"BucketSize 0, RangeBase < 64 KiB", HP_OK, SELF, 0x1000, 64, 0, B, 4096, ProfileTime, 1,
     STATUS_INVALID_PARAMETER},
    {"BucketSize 0, RangeBase 64 KiB", HP_OK, SELF, 0x10000, 64, 0, B, 4096, ProfileTime, 1,
     STATUS_INVALID_PARAMETER},
    {"BucketSize 1", HP_OK, SELF, U, 64, 1, B, 4096, ProfileTime, 1, STATUS_INVALID_PARAMETER},
    {"BucketSize 2", HP_OK, SELF, U, 64, 2, B, 64, ProfileTime, 1, STATUS_SUCCESS},
    {"BucketSize 31", HP_OK, SELF, U, 64, 31, B, 4, ProfileTime, 1, STATUS_SUCCESS},
    {"BucketSize 32", HP_OK, SELF, U, 64, 32, B, 4096, ProfileTime, 1, STATUS_INVALID_PARAMETER},
    {"BucketSize ~0", HP_OK, SELF, U, 64, ~0u, B, 4096, ProfileTime, 1, STATUS_INVALID_PARAMETER},
    {"BucketSize 32 before a small buffer", HP_OK, SELF, U, 1 << 20, 32, B, 4, ProfileTime, 1,
     STATUS_INVALID_PARAMETER},
    {"RangeSize 9/BucketSize 3/BufferSize 4", HP_OK, SELF, U, 9, 3, B, 4, ProfileTime, 1,
     STATUS_BUFFER_TOO_SMALL},
    {"RangeSize 9/BucketSize 3/BufferSize 7", HP_OK, SELF, U, 9, 3, B, 7, ProfileTime, 1,
     STATUS_BUFFER_TOO_SMALL},
    {"RangeSize 9/BucketSize 3/BufferSize 8", HP_OK, SELF, U, 9, 3, B, 8, ProfileTime, 1,
     STATUS_SUCCESS},
    {"RangeSize 8/BucketSize 3/BufferSize 4", HP_OK, SELF, U, 8, 3, B, 4, ProfileTime, 1,
     STATUS_SUCCESS},
    {"RangeSize 64/BucketSize 2/BufferSize 63", HP_OK, SELF, U, 64, 2, B, 63, ProfileTime, 1,
     STATUS_BUFFER_TOO_SMALL},
    {"RangeSize 2^31+1/BucketSize 31/BufferSize 4", HP_OK, SELF, U, (1ull << 31) + 1, 31, B, 4,
     ProfileTime, 1, STATUS_BUFFER_TOO_SMALL},
    {"RangeSize 2^31+1/BucketSize 31/BufferSize 8", HP_OK, SELF, U, (1ull << 31) + 1, 31, B, 8,
     ProfileTime, 1, STATUS_SUCCESS},
    {"RangeSize 2^40/BucketSize 31/BufferSize 2044", HP_OK, SELF, U, 1ull << 40, 31, B, 2044,
     ProfileTime, 1, STATUS_BUFFER_TOO_SMALL},
    {"RangeSize 2^40/BucketSize 31/BufferSize 2048", HP_OK, SELF, U, 1ull << 40, 31, B, 2048,
     ProfileTime, 1, STATUS_SUCCESS},
    {"RangeSize ~0/BucketSize 31: 2^33 buckets", HP_OK, SELF, 0, ~0ull, 31, B, 4096, ProfileTime, 1,
     STATUS_BUFFER_TOO_SMALL},
    {"wrap", HP_OK, SELF, ~0xFFFull, 0x2000, 12, B, 8, ProfileTime, 1, STATUS_BUFFER_OVERFLOW},
    {"end exactly 2^64", HP_OK, SELF, ~0xFFFull, 0x1000, 12, B, 4, ProfileTime, 1,
     STATUS_BUFFER_OVERFLOW},
    {"wrap by one byte", HP_OK, SELF, ~0ull, 1, 2, B, 4, ProfileTime, 1, STATUS_BUFFER_OVERFLOW},
    {"wrap after a small buffer", HP_OK, SELF, ~0xFFFull, 0x2000, 12, B, 4, ProfileTime, 1,
     STATUS_BUFFER_TOO_SMALL},
    {"wrap before a bad handle pointer", HP_KERNEL, SELF, ~0xFFFull, 0x2000, 12, B, 8, ProfileTime,
     1, STATUS_BUFFER_OVERFLOW},
    {"no wrap: last byte of the address space", HP_OK, SELF, ~0xFFFull, 0xFFF, 12, B, 4,
     ProfileTime, 1, STATUS_PRIVILEGE_NOT_HELD},
    {"handle pointer NULL", HP_NULL, SELF, U, 64, 2, B, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"handle pointer in the kernel", HP_KERNEL, SELF, U, 64, 2, B, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"handle pointer read-only", HP_READ_ONLY, SELF, U, 64, 2, B, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"handle pointer non-canonical", HP_NON_CANONICAL, SELF, U, 64, 2, B, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"handle pointer before misalignment", HP_NULL, SELF, U, 64, 2, B + 1, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"buffer + 1", HP_OK, SELF, U, 64, 2, B + 1, 64, ProfileTime, 1, STATUS_DATATYPE_MISALIGNMENT},
    {"buffer + 2", HP_OK, SELF, U, 64, 2, B + 2, 64, ProfileTime, 1, STATUS_DATATYPE_MISALIGNMENT},
    {"buffer + 3", HP_OK, SELF, U, 64, 2, B + 3, 64, ProfileTime, 1, STATUS_DATATYPE_MISALIGNMENT},
    {"misaligned before unmapped", HP_OK, SELF, U, 64, 2, 0x1001, 64, ProfileTime, 1,
     STATUS_DATATYPE_MISALIGNMENT},
    {"buffer NULL", HP_OK, SELF, U, 64, 2, 0, 64, ProfileTime, 1, STATUS_ACCESS_VIOLATION},
    {"buffer unmapped", HP_OK, SELF, U, 64, 2, 0x1000, 64, ProfileTime, 1, STATUS_ACCESS_VIOLATION},
    {"buffer in the direct map", HP_OK, SELF, U, 64, 2, KERNEL_DIRECT_MAP, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"buffer in the kernel image", HP_OK, SELF, U, 64, 2, KERNEL_IMAGE, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"buffer non-canonical", HP_OK, SELF, U, 64, 2, NON_CANONICAL, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"buffer ending in the kernel", HP_OK, SELF, U, 64, 2, USER_TOP - 64, 128, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"buffer read-only", HP_OK, SELF, U, 64, 2, (uintptr_t)read_only, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"buffer in code", HP_OK, SELF, U, 64, 2, 0x400000, 64, ProfileTime, 1,
     STATUS_ACCESS_VIOLATION},
    {"bad process handle", HP_OK, BAD_PROCESS, U, 64, 2, B, 64, ProfileTime, 1,
     STATUS_INVALID_HANDLE},
    {"source 0x20", HP_OK, SELF, U, 64, 2, B, 64, ProfileSourceCount, 1, STATUS_NOT_SUPPORTED},
    {"source ~0", HP_OK, SELF, U, 64, 2, B, 64, (KPROFILE_SOURCE)-1, 1, STATUS_NOT_SUPPORTED},
    {"Affinity 0", HP_OK, SELF, U, 64, 2, B, 64, ProfileTime, 0, STATUS_INVALID_PARAMETER},
    {"Affinity -1", HP_OK, SELF, U, 64, 2, B, 64, ProfileTime, ~0ull, STATUS_SUCCESS},
    {"system scope unprivileged", HP_OK, SYSTEM, U, 64, 2, B, 64, ProfileTime, 1,
     STATUS_PRIVILEGE_NOT_HELD},
#undef B
#undef U
};

// Runs NtCreateProfile; a success is closed again (after checking the handle).
static NTSTATUS try_create(HANDLE *ptr, HANDLE process, uint64_t base, uint64_t size, ULONG shift,
                           uintptr_t buffer, ULONG buffer_size, KPROFILE_SOURCE source,
                           KAFFINITY affinity)
{
    created = NULL;
    NTSTATUS s = NtCreateProfile(ptr, process, (void *)base, size, shift, (ULONG *)buffer,
                                 buffer_size, source, affinity);
    if (NT_SUCCESS(s)) {
        EXPECT(created != NULL, "a successful NtCreateProfile left the handle NULL");
        EXPECT_STATUS(NtStartProfile(created), STATUS_SUCCESS);
        EXPECT_STATUS(NtStopProfile(created), STATUS_SUCCESS);
        EXPECT_STATUS(NtClose(created), STATUS_SUCCESS);
    }
    return s;
}

static void test_create_validation(void)
{
    HANDLE me = open_self();
    for (size_t i = 0; i < sizeof create_cases / sizeof create_cases[0]; i++) {
        const struct create_case *c = &create_cases[i];
        HANDLE *ptr = c->handle == HP_OK          ? &created
                      : c->handle == HP_NULL      ? NULL
                      : c->handle == HP_KERNEL    ? (HANDLE *)KERNEL_IMAGE
                      : c->handle == HP_READ_ONLY ? (HANDLE *)read_only
                                                  : (HANDLE *)NON_CANONICAL;
        HANDLE process = c->scope == SELF ? me : c->scope == SYSTEM ? NULL : (HANDLE)0x1234;
        NTSTATUS s = try_create(ptr, process, c->base, c->size, c->shift, c->buffer, c->buffer_size,
                                c->source, c->affinity);
        EXPECT(s == c->want, "%s: %s, expected %s", c->what, nt_status_name(s),
               nt_status_name(c->want));
    }

    // Cases that need values known only at run time.
    unsigned n = online_cpus();
    EXPECT(n >= 1, "no online CPU");
    KAFFINITY every = n >= 64 ? ~0ull : (1ull << n) - 1; // KAFFINITY is 64 bits: MAX_CPUS
    EXPECT_STATUS(try_create(&created, me, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, every),
                  STATUS_SUCCESS);
    if (n < 64) { // a CPU past the online ones: the first, and the last KAFFINITY can name
        EXPECT_STATUS(
            try_create(&created, me, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1ull << n),
            STATUS_INVALID_PARAMETER);
        EXPECT_STATUS(
            try_create(&created, me, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1ull << 63),
            STATUS_INVALID_PARAMETER);
    }
    KPROFILE_SOURCE bad = unsupported_source();
    if (bad == ProfileSourceCount) {
        printf("# %s: every source is supported here: no STATUS_NOT_SUPPORTED check\n", test_name);
    } else {
        struct sys_profile_source *r = source_row(bad);
        printf("# %s: unsupported source %s (%s)\n", test_name, r ? r->name : "?",
               r ? r->reason : "?");
        EXPECT_STATUS(try_create(&created, me, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, bad, 1),
                      STATUS_NOT_SUPPORTED);
        // The privilege check comes first (step 8 before step 9).
        EXPECT_STATUS(try_create(&created, NULL, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, bad, 1),
                      STATUS_PRIVILEGE_NOT_HELD);
    }
    // Handles of the wrong type or closed are not processes.
    HANDLE prof = NULL, closed = open_self();
    EXPECT_STATUS(profile(&prof, me, BUSY_A, 64, 2, vbuf, 64), STATUS_SUCCESS);
    EXPECT_STATUS(try_create(&created, prof, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1),
                  STATUS_OBJECT_TYPE_MISMATCH);
    EXPECT_STATUS(NtClose(prof), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(closed), STATUS_SUCCESS);
    EXPECT_STATUS(try_create(&created, closed, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1),
                  STATUS_INVALID_HANDLE);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// NtCreateProfileEx with each GroupCount and GROUP_AFFINITY of a table: the
// status each must give; a profile that was created is started and closed.
static void create_ex_affinities(HANDLE me)
{
    unsigned n = online_cpus();
    uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;
    struct {
        const char *what;
        USHORT count;
        GROUP_AFFINITY g;
        NTSTATUS want;
    } cases[] = {
        {"GroupCount 0: every CPU", 0, {.Mask = 0}, STATUS_SUCCESS},
        {"GroupCount 1, CPU 0", 1, {.Mask = 1}, STATUS_SUCCESS},
        {"GroupCount 1, every CPU", 1, {.Mask = all}, STATUS_SUCCESS},
        {"GroupCount 2", 2, {.Mask = 1}, STATUS_INVALID_PARAMETER},
        {"GroupCount 0xFFFF", 0xFFFF, {.Mask = 1}, STATUS_INVALID_PARAMETER},
        {"Group 1", 1, {.Mask = 1, .Group = 1}, STATUS_INVALID_PARAMETER},
        {"empty Mask", 1, {.Mask = 0}, STATUS_INVALID_PARAMETER},
        {"Mask with an inactive CPU",
         1,
         {.Mask = all | (n < 64 ? 1ull << n : 0)},
         n < 64 ? STATUS_INVALID_PARAMETER : STATUS_SUCCESS},
        {"Mask CPU 63 only",
         1,
         {.Mask = 1ull << 63},
         n < 64 ? STATUS_INVALID_PARAMETER : STATUS_SUCCESS},
        {"Reserved[0]", 1, {.Mask = 1, .Reserved = {1, 0, 0}}, STATUS_INVALID_PARAMETER},
        {"Reserved[1]", 1, {.Mask = 1, .Reserved = {0, 1, 0}}, STATUS_INVALID_PARAMETER},
        {"Reserved[2]", 1, {.Mask = 1, .Reserved = {0, 0, 0x8000}}, STATUS_INVALID_PARAMETER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        HANDLE h = NULL;
        NTSTATUS s = NtCreateProfileEx(&h, me, (void *)BUSY_A, 64, 2, vbuf, 64, ProfileTime,
                                       cases[i].count, &cases[i].g);
        EXPECT(s == cases[i].want, "%s: %s, expected %s", cases[i].what, nt_status_name(s),
               nt_status_name(cases[i].want));
        if (NT_SUCCESS(s)) {
            EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
            EXPECT_STATUS(NtClose(h), STATUS_SUCCESS); // closing a started profile stops it
        }
    }
}

// NtCreateProfileEx: GroupCount and GROUP_AFFINITY, after the common checks.
static void test_create_ex_validation(void)
{
    HANDLE me = open_self(), h = NULL;
    create_ex_affinities(me);
    // GroupAffinity is read only when GroupCount is 1.
    EXPECT_STATUS(NtCreateProfileEx(&h, me, (void *)BUSY_A, 64, 2, vbuf, 64, ProfileTime, 0, NULL),
                  STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    static const uintptr_t bad_ptrs[] = {
        0, 0x1000, KERNEL_IMAGE, KERNEL_DIRECT_MAP, NON_CANONICAL, USER_TOP - 8};
    for (size_t i = 0; i < sizeof bad_ptrs / sizeof bad_ptrs[0]; i++) {
        h = NULL;
        NTSTATUS s = NtCreateProfileEx(&h, me, (void *)BUSY_A, 64, 2, vbuf, 64, ProfileTime, 1,
                                       (GROUP_AFFINITY *)bad_ptrs[i]);
        EXPECT(s == STATUS_ACCESS_VIOLATION, "GroupAffinity %p: %s", (void *)bad_ptrs[i],
               nt_status_name(s));
        if (NT_SUCCESS(s))
            NtClose(h);
    }
    // The common checks come first.
    GROUP_AFFINITY bad = {.Mask = 0};
    EXPECT_STATUS(NtCreateProfileEx(&h, me, (void *)BUSY_A, 64, 2, vbuf, 0, ProfileTime, 2, &bad),
                  STATUS_INVALID_PARAMETER_7);
    EXPECT_STATUS(NtCreateProfileEx(&h, me, (void *)BUSY_A, 64, 2, vbuf, 4, ProfileTime, 2, &bad),
                  STATUS_BUFFER_TOO_SMALL);
    EXPECT_STATUS(
        NtCreateProfileEx(&h, NULL, (void *)BUSY_A, 64, 2, vbuf, 64, ProfileTime, 0, NULL),
        STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// Start, stop and close: bad and closed handles, and the order of operations.
static void test_start_stop(void)
{
    static const uintptr_t bad[] = {
        0, 4, 0x1234, 0x7fffffff, (uintptr_t)-3, KERNEL_DIRECT_MAP, KERNEL_IMAGE};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        HANDLE h = (HANDLE)bad[i];
        EXPECT(NtStartProfile(h) == STATUS_INVALID_HANDLE, "NtStartProfile(%p)", h);
        EXPECT(NtStopProfile(h) == STATUS_INVALID_HANDLE, "NtStopProfile(%p)", h);
        EXPECT(NtClose(h) == STATUS_INVALID_HANDLE, "NtClose(%p)", h);
    }
    HANDLE me = open_self(), h = NULL;
    EXPECT_STATUS(NtStartProfile(me), STATUS_OBJECT_TYPE_MISMATCH); // a process is not a profile
    EXPECT_STATUS(NtStopProfile(me), STATUS_OBJECT_TYPE_MISMATCH);
    EXPECT_STATUS(profile(&h, me, BUSY_A, 64, 2, vbuf, 64), STATUS_SUCCESS);
    EXPECT_STATUS(NtStopProfile(h), STATUS_PROFILING_NOT_STARTED);
    EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(h), STATUS_PROFILING_NOT_STOPPED);
    EXPECT_STATUS(NtStopProfile(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtStopProfile(h), STATUS_PROFILING_NOT_STARTED);
    for (int i = 0; i < 3; i++) { // an object starts again and again
        EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
        EXPECT_STATUS(NtStopProfile(h), STATUS_SUCCESS);
    }
    EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS); // started: closing stops it
    EXPECT_STATUS(NtStartProfile(h), STATUS_INVALID_HANDLE);
    EXPECT_STATUS(NtStopProfile(h), STATUS_INVALID_HANDLE);
    EXPECT_STATUS(NtClose(h), STATUS_INVALID_HANDLE);
    struct sys_profile_stats st;
    EXPECT_STATUS(SysProfileStats(h, &st), STATUS_INVALID_HANDLE);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// ProfileTime's row of SysProfileSources (a failed check when there is none).
static struct sys_profile_source *time_row(void)
{
    struct sys_profile_source *r = source_row(ProfileTime);
    EXPECT(r != NULL, "SysProfileSources has no ProfileTime row");
    return r;
}

// A source the HAL cannot run is queried like any other: success, interval 0.
static void expect_no_interval(KPROFILE_SOURCE source, const char *what)
{
    ULONG v = 0xDEADBEEF;
    EXPECT_STATUS(NtQueryIntervalProfile(source, &v), STATUS_SUCCESS);
    EXPECT(v == 0, "%s: interval %u, expected 0", what, v);
}

// NtQueryIntervalProfile: the HAL's interval; 0 (with success) when unsupported.
// The interval in force is whatever the system has (the shell sets 1,221 at
// start): only its agreement with the HAL and its range are checked here;
// test_set_interval sets the default and reads it back.
static void test_query_interval(void)
{
    struct sys_profile_source *r = time_row();
    if (!r)
        return;
    uint64_t row_interval = r->interval, row_default = r->default_interval;
    uint64_t min = r->min_interval, max = r->max_interval;
    EXPECT(r->supported, "ProfileTime unsupported: %s", r->reason);
    EXPECT(row_default == DEFAULT_INTERVAL, "ProfileTime's default interval %lu, expected %u",
           row_default, DEFAULT_INTERVAL);
    ULONG v = 0xDEADBEEF;
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &v), STATUS_SUCCESS);
    EXPECT(v == row_interval, "ProfileTime interval %u, the HAL says %lu", v, row_interval);
    EXPECT(v >= min && v <= max, "ProfileTime interval %u outside %lu..%lu", v, min, max);
    // ProfileMaximum ends the source table: no row, and queried like any
    // source the HAL cannot run (success, interval 0).
    EXPECT(source_row(ProfileMaximum) == NULL, "SysProfileSources lists ProfileMaximum");
    expect_no_interval(ProfileMaximum, "ProfileMaximum");
    KPROFILE_SOURCE bad = unsupported_source();
    if (bad != ProfileSourceCount) {
        char what[40];
        snprintf(what, sizeof what, "unsupported source %u", bad);
        expect_no_interval(bad, what);
    }
    expect_no_interval(ProfileSourceCount, "unknown source");
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, NULL), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, (ULONG *)KERNEL_IMAGE),
                  STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, (ULONG *)read_only), STATUS_ACCESS_VIOLATION);
}

// NtSetIntervalProfile with the privilege: set, clamp to the HAL's range, restore.
static void test_set_interval(void)
{
    struct sys_profile_source *r = time_row();
    if (!r)
        return;
    uint64_t min = r->min_interval, max = r->max_interval;
    ULONG old = 0, v = 0;
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &old), STATUS_SUCCESS);
    EXPECT_STATUS(NtSetIntervalProfile(1221, ProfileTime), STATUS_SUCCESS);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &v), STATUS_SUCCESS);
    EXPECT(v == (min > 1221 ? min : 1221), "set 1221, got %u (min %lu)", v, min);
    EXPECT_STATUS(NtSetIntervalProfile(1, ProfileTime), STATUS_SUCCESS);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &v), STATUS_SUCCESS);
    EXPECT(v == min, "set 1, got %u, expected the minimum %lu", v, min);
    EXPECT_STATUS(NtSetIntervalProfile(0xFFFFFFFF, ProfileTime), STATUS_SUCCESS);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &v), STATUS_SUCCESS);
    EXPECT(v == (max < 0xFFFFFFFF ? max : 0xFFFFFFFF), "set 2^32-1, got %u (max %lu)", v, max);
    EXPECT_STATUS(NtSetIntervalProfile(DEFAULT_INTERVAL, ProfileTime), STATUS_SUCCESS);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &v), STATUS_SUCCESS);
    EXPECT(v == DEFAULT_INTERVAL, "set the default %u, got %u", DEFAULT_INTERVAL, v);
    EXPECT_STATUS(NtSetIntervalProfile(old, ProfileTime), STATUS_SUCCESS);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &v), STATUS_SUCCESS);
    EXPECT(v == old, "restored %u, got %u", old, v);
}

// NT's pseudo-handles: NtCurrentProcess() is the caller wherever a process
// handle is taken (code written for Windows passes it to NtCreateProfile);
// NtCurrentThread(), a profile handle, or a process handle where a profile is
// wanted are objects of the wrong type: STATUS_OBJECT_TYPE_MISMATCH.
static void test_pseudo_handles(void)
{
    HANDLE h = NULL, me = open_self();
    uint32_t pid = 0;
    EXPECT_STATUS(SysProcessId(NtCurrentProcess(), &pid), STATUS_SUCCESS);
    EXPECT(pid == SysGetPid(), "NtCurrentProcess() is pid %u, the caller %u", pid, SysGetPid());
    EXPECT_STATUS(SysProcessId(NtCurrentThread(), &pid), STATUS_OBJECT_TYPE_MISMATCH);

    // NtCreateProfile(NtCurrentProcess()) profiles the caller: its samples
    // land in the buckets over its own code.
    static ULONG b[8];
    uint64_t n = nbuckets(BUSY_A_SIZE, 2);
    memset(b, 0, sizeof b);
    EXPECT_STATUS(NtCreateProfile(&h, NtCurrentProcess(), (void *)BUSY_A, BUSY_A_SIZE, 2, b,
                                  (ULONG)(n * 4), ProfileTime, (KAFFINITY)-1),
                  STATUS_SUCCESS);
    if (h) {
        EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
        EXPECT(spin_for_samples(h, busy_a, 3), "no samples in busy_a through NtCurrentProcess()");
        EXPECT_STATUS(NtStopProfile(h), STATUS_SUCCESS);
        struct sys_profile_stats st = stats_of(h);
        EXPECT(sum(b, n) == st.in_range && st.in_range >= 3,
               "buckets hold %lu, %lu counted in range", sum(b, n), st.in_range);
        EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    }
    GROUP_AFFINITY all = {.Mask = 0};
    EXPECT_STATUS(NtCreateProfileEx(&h, NtCurrentProcess(), (void *)BUSY_A, BUSY_A_SIZE, 2, b,
                                    (ULONG)(n * 4), ProfileTime, 0, &all),
                  STATUS_SUCCESS);
    if (h) {
        EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
        EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    }

    // Objects of the wrong type.
    EXPECT_STATUS(
        try_create(&created, NtCurrentThread(), BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1),
        STATUS_OBJECT_TYPE_MISMATCH);
    EXPECT_STATUS(NtCreateProfileEx(&h, NtCurrentThread(), (void *)BUSY_A, 64, 2, vbuf, 64,
                                    ProfileTime, 0, &all),
                  STATUS_OBJECT_TYPE_MISMATCH);
    HANDLE pseudo[] = {NtCurrentProcess(), NtCurrentThread(), me};
    struct sys_profile_stats st;
    for (size_t i = 0; i < sizeof pseudo / sizeof pseudo[0]; i++) {
        EXPECT(NtStartProfile(pseudo[i]) == STATUS_OBJECT_TYPE_MISMATCH, "NtStartProfile(%p)",
               pseudo[i]);
        EXPECT(NtStopProfile(pseudo[i]) == STATUS_OBJECT_TYPE_MISMATCH, "NtStopProfile(%p)",
               pseudo[i]);
        EXPECT(SysProfileStats(pseudo[i], &st) == STATUS_OBJECT_TYPE_MISMATCH,
               "SysProfileStats(%p)", pseudo[i]);
    }
    // The earlier checks come first: a bad buffer with a good pseudo-handle.
    EXPECT_STATUS(
        NtCreateProfile(&h, NtCurrentProcess(), (void *)BUSY_A, 64, 2, vbuf, 0, ProfileTime, 1),
        STATUS_INVALID_PARAMETER_7);
    // A pseudo-handle is in no table: closing one closes nothing.
    EXPECT_STATUS(NtClose(NtCurrentProcess()), STATUS_INVALID_HANDLE);
    EXPECT_STATUS(SysProcessId(NtCurrentProcess(), &pid), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// ---------------------------------------------------------------------------
// Privilege and rights, from an unprivileged child.

// Without the privilege: no system scope, no kernel range (the boundary is
// USER_TOP), no change of the system's interval.
static void denied_scopes_and_interval(HANDLE me)
{
    HANDLE h = NULL;
    GROUP_AFFINITY g = {.Mask = 1};
    // System scope.
    EXPECT_STATUS(try_create(&created, NULL, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1),
                  STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(NtCreateProfileEx(&h, NULL, (void *)BUSY_A, 64, 2, vbuf, 64, ProfileTime, 1, &g),
                  STATUS_PRIVILEGE_NOT_HELD);
    // Kernel ranges in a process-scope profile, and the boundary at USER_TOP.
    EXPECT_STATUS(
        try_create(&created, me, KERNEL_BASE, 1 << 20, 12, (uintptr_t)vbuf, 1024, ProfileTime, 1),
        STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(
        try_create(&created, me, KERNEL_DIRECT_MAP, 4096, 12, (uintptr_t)vbuf, 4, ProfileTime, 1),
        STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(try_create(&created, me, USER_TOP - 4, 8, 2, (uintptr_t)vbuf, 8, ProfileTime, 1),
                  STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(try_create(&created, me, USER_TOP - 4, 4, 2, (uintptr_t)vbuf, 4, ProfileTime, 1),
                  STATUS_SUCCESS);
    EXPECT_STATUS(try_create(&created, me, USER_TOP - 0x10000, 0x20000, 16, (uintptr_t)vbuf, 8,
                             ProfileTime, 1),
                  STATUS_PRIVILEGE_NOT_HELD);
    // The interval is the system's.
    ULONG before = 0, after = 0;
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &before), STATUS_SUCCESS);
    EXPECT_STATUS(NtSetIntervalProfile(1221, ProfileTime), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(NtSetIntervalProfile(before, ProfileTime), STATUS_PRIVILEGE_NOT_HELD);
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &after), STATUS_SUCCESS);
    EXPECT(after == before, "the interval changed from %u to %u", before, after);
}

// Rights over other processes: our parent (the driver) and a grandchild are
// not ours to open; our child is, and we may profile it.
static void rights_over_others(void)
{
    struct sys_process_info *mine = find_process(SysGetPid());
    uint32_t parent = mine ? mine->parent : 0;
    HANDLE other = NULL;
    EXPECT_STATUS(SysOpenProcess(parent, &other), STATUS_ACCESS_DENIED);
    HANDLE child = NULL;
    EXPECT_STATUS(spawn_child(0, &child, "grandparent", "1000"), STATUS_SUCCESS);
    uint32_t child_pid = 0, grandchild = 0;
    EXPECT_STATUS(SysProcessId(child, &child_pid), STATUS_SUCCESS);
    for (int i = 0; i < 500 && child_pid && !grandchild; i++) {
        SysSleep(10);
        grandchild = child_of(child_pid);
    }
    EXPECT(grandchild != 0, "the grandchild did not appear");
    if (grandchild) {
        EXPECT_STATUS(SysOpenProcess(grandchild, &other), STATUS_ACCESS_DENIED);
        EXPECT_STATUS(SysKill(grandchild), STATUS_ACCESS_DENIED);
    }
    EXPECT_STATUS(try_create(&created, child, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1),
                  STATUS_SUCCESS);
    int status = -1000;
    EXPECT_STATUS(SysWait(child, &status), STATUS_SUCCESS); // after its own child
    EXPECT(status == 0, "the grandparent helper: exit status %d", status);
    NtClose(child);
}

static void test_privilege_denied(void)
{
    EXPECT(!privileged(), "spawned without SPAWN_PRIVILEGED but privileged");
    if (privileged())
        return;
    HANDLE me = open_self();
    denied_scopes_and_interval(me);
    rights_over_others();
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// The same calls with the privilege succeed: the denials above are about it.
static void test_privilege_granted(void)
{
    EXPECT(privileged(), "spawned with SPAWN_PRIVILEGED but not privileged");
    HANDLE me = open_self();
    GROUP_AFFINITY g = {.Mask = 1};
    HANDLE h = NULL;
    EXPECT_STATUS(try_create(&created, NULL, BUSY_A, 64, 2, (uintptr_t)vbuf, 64, ProfileTime, 1),
                  STATUS_SUCCESS);
    EXPECT_STATUS(NtCreateProfileEx(&h, NULL, (void *)BUSY_A, 64, 2, vbuf, 64, ProfileTime, 1, &g),
                  STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT_STATUS(
        try_create(&created, me, KERNEL_BASE, 1 << 20, 12, (uintptr_t)vbuf, 1024, ProfileTime, 1),
        STATUS_SUCCESS);
    EXPECT_STATUS(try_create(&created, NULL, KERNEL_BASE, 1 << 20, 12, (uintptr_t)vbuf, 1024,
                             ProfileTime, ~0ull),
                  STATUS_SUCCESS);
    EXPECT_STATUS(try_create(&created, me, USER_TOP - 4, 8, 2, (uintptr_t)vbuf, 8, ProfileTime, 1),
                  STATUS_SUCCESS);
    // Any process, not only our children. (Created, not started: starting
    // would give the driver per-source state that lives as long as it does,
    // which the suite's leak check would count.)
    struct sys_process_info *mine = find_process(SysGetPid());
    HANDLE parent = NULL;
    EXPECT_STATUS(SysOpenProcess(mine ? mine->parent : 0, &parent), STATUS_SUCCESS);
    EXPECT_STATUS(NtCreateProfile(&h, parent, (void *)BUSY_A, 64, 2, vbuf, 64, ProfileTime, 1),
                  STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(parent), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// ---------------------------------------------------------------------------
// Guard pages: the buffer between two holes, flush with either end of the
// mapped area or straddling its page boundary, for bucket sizes 4 to 256
// bytes over busy_a (23 bytes: the last bucket is partial and hot). Samples
// at busy_b, the range's exclusive end, must count nowhere. Every byte of
// the mapped area outside the buffer keeps its pattern, and every counted
// sample is in a bucket.

#define GUARD_BYTE 0xA5

static void guard_case(uint8_t *area, size_t area_size, unsigned shift, int where)
{
    static const char *const names[] = {"at the start", "at the end", "across the pages"};
    uint64_t n = nbuckets(BUSY_A_SIZE, shift);
    ULONG size = (ULONG)(n * 4);
    uint8_t *buf = where == 0   ? area
                   : where == 1 ? area + area_size - size
                                : area + PAGE - ((size / 2) & ~3u);
    memset(area, GUARD_BYTE, area_size);
    memset(buf, 0, size);
    HANDLE me = open_self(), h = NULL;

    // One bucket too far either way reaches a hole.
    if (where == 0)
        EXPECT_STATUS(try_create(&created, me, BUSY_A, BUSY_A_SIZE, shift, (uintptr_t)buf - 4, size,
                                 ProfileTime, ~0ull),
                      STATUS_ACCESS_VIOLATION);
    if (where == 1)
        EXPECT_STATUS(try_create(&created, me, BUSY_A, BUSY_A_SIZE, shift, (uintptr_t)buf + 4, size,
                                 ProfileTime, ~0ull),
                      STATUS_ACCESS_VIOLATION);
    // One byte short of the last partial bucket is too small.
    EXPECT_STATUS(try_create(&created, me, BUSY_A, BUSY_A_SIZE, shift, (uintptr_t)buf, size - 1,
                             ProfileTime, ~0ull),
                  STATUS_BUFFER_TOO_SMALL);

    NTSTATUS s = profile(&h, me, BUSY_A, BUSY_A_SIZE, shift, (ULONG *)buf, size);
    EXPECT(NT_SUCCESS(s), "shift %u %s: NtCreateProfile: %s", shift, names[where],
           nt_status_name(s));
    if (!NT_SUCCESS(s)) {
        NtClose(me);
        return;
    }
    EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
    int got = spin_for_samples(h, busy_a, 10);
    EXPECT(got, "shift %u %s: fewer than 10 samples in busy_a", shift, names[where]);
    uint64_t in_a = stats_of(h).in_range;
    EXPECT(spin_until(h, busy_b, 10, 1), // samples at the range's end and past it
           "shift %u %s: fewer than 10 samples in busy_b", shift, names[where]);
    EXPECT_STATUS(NtStopProfile(h), STATUS_SUCCESS);
    struct sys_profile_stats st = stats_of(h);
    const ULONG *b = (const ULONG *)buf;
    uint64_t total = sum(b, n);
    EXPECT(total == st.in_range, "shift %u %s: buckets hold %lu, %lu counted in range", shift,
           names[where], total, st.in_range);
    EXPECT(st.in_range + st.out_of_range == st.delivered, "shift %u %s: %lu + %lu != %lu", shift,
           names[where], st.in_range, st.out_of_range, st.delivered);
    EXPECT(b[n - 1] > 0, "shift %u %s: the last (partial, hot) bucket is 0", shift, names[where]);
    EXPECT(st.in_range == in_a, "shift %u %s: %lu samples counted while spinning past the end",
           shift, names[where], st.in_range - in_a);
    size_t off = (size_t)(buf - area);
    for (size_t i = 0; i < area_size; i++)
        if ((i < off || i >= off + size) && area[i] != GUARD_BYTE) {
            failf(__LINE__, "shift %u %s: byte %ld from the buffer changed to %#x", shift,
                  names[where], (long)i - (long)off, area[i]);
            break;
        }
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// A range of whole buckets ending where busy_a's loop begins: every sample
// of the loop is at the exclusive end, one bucket past the buffer (which sits
// at either end of the area). Nothing may be counted or written.
static void guard_end_case(uint8_t *area, size_t area_size, unsigned shift, int at_end)
{
    uint64_t loop = BUSY_A_SIZE - 3, size = loop & ~((1ull << shift) - 1);
    if (size != loop)
        return; // the loop's offset is not a multiple of this bucket size
    ULONG bytes = (ULONG)(nbuckets(size, shift) * 4);
    uint8_t *buf = at_end ? area + area_size - bytes : area;
    memset(area, GUARD_BYTE, area_size);
    memset(buf, 0, bytes);
    HANDLE me = open_self(), h = NULL;
    EXPECT_STATUS(profile(&h, me, BUSY_A, size, shift, (ULONG *)buf, bytes), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
    EXPECT(spin_until(h, busy_a, 10, 1), "end case, shift %u: no samples out of range", shift);
    EXPECT_STATUS(NtStopProfile(h), STATUS_SUCCESS);
    struct sys_profile_stats st = stats_of(h);
    uint64_t total = sum((const ULONG *)buf, bytes / 4);
    EXPECT(st.in_range == total, "end case, shift %u: buckets %lu, in range %lu", shift, total,
           st.in_range);
    EXPECT(st.in_range <= 2, "end case, shift %u: %lu samples counted at the range's end", shift,
           st.in_range); // (only the head, if ever sampled, belongs to the range)
    for (size_t i = 0; i < area_size; i++)
        if ((area + i < buf || area + i >= buf + bytes) && area[i] != GUARD_BYTE) {
            failf(__LINE__, "end case, shift %u: byte %ld from the buffer changed to %#x", shift,
                  (long)(area + i - buf), area[i]);
            break;
        }
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

static void test_guard_pages(void)
{
    ULONG old = fast_sampling();
    uint8_t *area = map_between_holes(4); // two pages between holes
    if (area) {
        for (unsigned shift = 2; shift <= 8; shift++) {
            for (int where = 0; where < 3; where++)
                guard_case(area, 2 * PAGE, shift, where);
            for (int at_end = 0; at_end < 2; at_end++)
                guard_end_case(area, 2 * PAGE, shift, at_end);
        }
        SysUnmap(area, 2 * PAGE);
    }
    restore_sampling(old);
}

// ---------------------------------------------------------------------------
// Buffers and handles going away while started.

static struct sys_self_check self_check(void)
{
    struct sys_self_check c = {0};
    EXPECT_STATUS(SysSelfCheck(&c), STATUS_SUCCESS);
    return c;
}

// Unmapping the buffer while started: the profile keeps counting into the
// pinned frame, never into what is mapped there next; stop unpins it.
static void test_unmap_while_started(void)
{
    ULONG old = fast_sampling();
    HANDLE me = open_self(), h = NULL;
    uint64_t pinned = self_check().pinned_pages;
    void *p = NULL;
    EXPECT_STATUS(SysMap(&p, PAGE, PROT_READ | PROT_WRITE), STATUS_SUCCESS);
    uint64_t n = nbuckets(BUSY_A_SIZE, 2);
    EXPECT_STATUS(profile(&h, me, BUSY_A, BUSY_A_SIZE, 2, p, (ULONG)(n * 4)), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
    EXPECT(self_check().pinned_pages == pinned + 1, "starting did not pin one page");
    EXPECT(spin_for_samples(h, busy_a, 5), "no samples before the unmap");
    EXPECT_STATUS(SysUnmap(p, PAGE), STATUS_SUCCESS);
    uint64_t before = stats_of(h).in_range;
    EXPECT(spin_for_samples(h, busy_a, 5), "no samples after the unmap");
    void *again = p;
    EXPECT_STATUS(SysMap(&again, PAGE, PROT_READ | PROT_WRITE), STATUS_SUCCESS);
    EXPECT(again == p, "could not map the same address again");
    EXPECT(spin_for_samples(h, busy_a, 5), "no samples with a new page there");
    const volatile ULONG *fresh = again;
    EXPECT(sum(fresh, PAGE / 4) == 0, "the page mapped after the unmap was written to");
    EXPECT_STATUS(NtStopProfile(h), STATUS_SUCCESS);
    EXPECT(stats_of(h).in_range > before, "counting stopped at the unmap");
    EXPECT(self_check().pinned_pages == pinned, "pinned pages %lu after stop, %lu before",
           self_check().pinned_pages, pinned);
    EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS); // the new page is the buffer now
    EXPECT(spin_for_samples(h, busy_a, 5), "no samples after restarting");
    EXPECT(sum(fresh, n) > 0, "the restarted profile counts into nothing");
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT(self_check().pinned_pages == pinned, "closing left pages pinned");
    // Unmapped while stopped: starting cannot pin what is not there.
    EXPECT_STATUS(profile(&h, me, BUSY_A, BUSY_A_SIZE, 2, again, (ULONG)(n * 4)), STATUS_SUCCESS);
    EXPECT_STATUS(SysUnmap(again, PAGE), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(h), STATUS_ACCESS_VIOLATION);
    EXPECT_STATUS(NtStopProfile(h), STATUS_PROFILING_NOT_STARTED);
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
    restore_sampling(old);
}

// Closing the handle of a started profile stops it: no write after the close.
static void test_close_while_started(void)
{
    ULONG old = fast_sampling();
    static ULONG buf[8];
    HANDLE me = open_self(), h = NULL;
    uint64_t pinned = self_check().pinned_pages, n = nbuckets(BUSY_A_SIZE, 2);
    EXPECT_STATUS(profile(&h, me, BUSY_A, BUSY_A_SIZE, 2, buf, (ULONG)(n * 4)), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(h), STATUS_SUCCESS);
    EXPECT(spin_for_samples(h, busy_a, 5), "no samples");
    EXPECT_STATUS(NtClose(h), STATUS_SUCCESS);
    uint64_t at_close = sum(buf, n);
    spin_a_while(busy_a);
    EXPECT(sum(buf, n) == at_close, "buckets went from %lu to %lu after the close", at_close,
           sum(buf, n));
    EXPECT(self_check().pinned_pages == pinned, "closing left pages pinned");
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
    restore_sampling(old);
}

// The counters once the last process has been released (they stop changing).
static struct sys_self_check quiet_counters(void)
{
    struct sys_self_check a = self_check(), b;
    for (int tries = 0; tries < 100; tries++, a = b) {
        SysSleep(20);
        b = self_check();
        if (same_counters(&a, &b, 0))
            break;
    }
    return a;
}

// One churn process, ended the given way; returns whether it ended as expected.
static int churn_once(enum churn_end end, uint32_t flags, unsigned round)
{
    char arg[8];
    snprintf(arg, sizeof arg, "%d", (int)end);
    HANDLE h;
    NTSTATUS s = spawn_child(flags, &h, "ender", arg);
    if (!NT_SUCCESS(s)) {
        printf("# churn: spawn: %s\n", nt_status_name(s));
        return 0;
    }
    if (end == END_KILLED) {
        uint32_t pid = 0;
        SysProcessId(h, &pid);
        struct sys_process_info *p = NULL;
        uint64_t deadline = clock_ns() + 5000000000ull;
        while (pid && clock_ns() < deadline && (p = find_process(pid)) &&
               p->state != PROC_SLEEPING && p->state != PROC_ZOMBIE)
            SysYield();
        for (unsigned i = 0; i < round % 5; i++) // kill it asleep or spinning
            SysYield();
        if (pid)
            SysKill(pid);
    }
    int status = -1000;
    s = SysWait(h, &status);
    NtClose(h);
    int want =
        end == END_KILLED || end == END_KILL_SELF || end == END_FAULT ? EXIT_STATUS_KILLED : 0;
    if (!NT_SUCCESS(s) || status != want) {
        printf("# churn: ending %d: %s, exit status %d, expected %d\n", (int)end, nt_status_name(s),
               status, want);
        return 0;
    }
    return 1;
}

// Processes exit, are killed, fault, unmap or close with profiles started on
// every CPU (system-wide ones too when privileged): `rounds` times, then the
// kernel's counters must be back where they were.
static void test_churn(void)
{
    if (child_argc > 3) // the driver's rounds
        rounds = (unsigned)strtoul(child_argv[3], NULL, 0);
    uint32_t flags[2] = {0, privileged() ? SPAWN_PRIVILEGED : 0};
    for (int e = 0; e < 2 * CHURN_ENDS; e++) // warm up: first-time allocations are not leaks
        churn_once((enum churn_end)(e % CHURN_ENDS), flags[e / CHURN_ENDS], (unsigned)e);
    struct sys_self_check before = quiet_counters();
    uint64_t start = clock_ns();
    unsigned bad = 0, r;
    for (r = 0; r < rounds && bad < 5; r++)
        bad += !churn_once((enum churn_end)(r % CHURN_ENDS), flags[r / CHURN_ENDS % 2], r);
    EXPECT(bad == 0, "%u of %u processes ended unexpectedly", bad, r);
    EXPECT(counters_settled(&before), "the kernel's counters did not come back after %u processes",
           r);
    printf("# %s: %u processes in %lu ms\n", test_name, r, (clock_ns() - start) / 1000000);
}

// ---------------------------------------------------------------------------
// The limit: LIMIT_PER_CPU x online CPUs started profiles (see helper_chain).

static void test_limit(void)
{
    HANDLE h;
    int status = -1000;
    EXPECT_STATUS(spawn_child(SPAWN_PRIVILEGED, &h, "chain", "0"), STATUS_SUCCESS);
    EXPECT_STATUS(SysWait(h, &status), STATUS_SUCCESS);
    NtClose(h);
    EXPECT(status == 0, "the chain of processes failed (exit status %d)", status);
    // Everything was stopped on the way out: starting works again.
    HANDLE me = open_self(), prof = NULL;
    EXPECT_STATUS(profile(&prof, me, BUSY_A, 4, 2, vbuf, 4), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(prof), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(prof), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

// The links of an unprivileged chain alive now (pid above ours, named as we
// are); *last_asleep: whether the newest of them sleeps (its check is done).
#define CHAIN_LINKS_MAX 1024 // 410 links on 16 CPUs (the 64-CPU run leaves the limits out)

static unsigned chain_links(uint32_t *pids, unsigned max, bool *last_asleep)
{
    static struct sys_process_info list[CHAIN_LINKS_MAX + 8];
    uint32_t count = 0, me = SysGetPid(), newest = 0;
    unsigned n = 0;
    *last_asleep = false;
    SysProcessList(list, CHAIN_LINKS_MAX + 8, &count);
    for (uint32_t i = 0; i < count && i < CHAIN_LINKS_MAX + 8; i++)
        if (list[i].pid > me && strcmp(list[i].name, "ntprofiletests") == 0 &&
            list[i].state != PROC_ZOMBIE && n < max) {
            pids[n++] = list[i].pid;
            if (list[i].pid > newest) {
                newest = list[i].pid;
                *last_asleep = list[i].state == PROC_SLEEPING;
            }
        }
    return n;
}

// Unprivileged processes hold all the started profiles they may (three
// quarters of NT's limit): a privileged start still succeeds.
static void test_reserve(void)
{
    uint64_t cap = (uint64_t)LIMIT_PER_CPU * online_cpus();
    unsigned want = (unsigned)((cap - cap / 4 + LINK_PROFILES - 1) / LINK_PROFILES);
    static uint32_t pids[CHAIN_LINKS_MAX];
    bool asleep = false;
    unsigned links = 0;
    HANDLE h;
    EXPECT_STATUS(spawn_child(0, &h, "chain", "u0"), STATUS_SUCCESS);
    unsigned most = 0;
    for (unsigned waited = 0; waited < 3000; waited++) { // 150 s at most
        links = chain_links(pids, CHAIN_LINKS_MAX, &asleep);
        most = MAX(most, links);
        if ((links == want && asleep) || (most && !links))
            break; // at the limit, or the chain ended early (a failed check)
        SysSleep(50);
    }
    EXPECT(links == want && asleep, "%u of %u unprivileged links at their limit", links, want);
    HANDLE me = open_self(), prof = NULL;
    EXPECT_STATUS(profile(&prof, me, BUSY_A, 4, 2, vbuf, 4), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(prof), STATUS_SUCCESS);
    NtClose(prof);
    NtClose(me);
    for (unsigned i = 0; i < links; i++)
        SysKill(pids[i]);
    int status = 0;
    SysWait(h, &status);
    NtClose(h);
    EXPECT(status == EXIT_STATUS_KILLED, "the unprivileged chain ended with %d, not killed",
           status);
    printf("# reserve: %u unprivileged links held %lu profiles; a privileged start "
           "succeeded\n",
           links, cap - cap / 4);
}

// ---------------------------------------------------------------------------
// Counting.

// Two profiles on one source: stopping one leaves the other counting, for
// two process-scope profiles and (privileged) a system-wide and a process one.
static void two_profiles(HANDLE first_process, const char *what)
{
    static ULONG a[8], b[8];
    uint64_t n = nbuckets(BUSY_A_SIZE, 2);
    HANDLE me = open_self(), ha = NULL, hb = NULL;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    EXPECT_STATUS(profile(&ha, first_process, BUSY_A, BUSY_A_SIZE, 2, a, (ULONG)(n * 4)),
                  STATUS_SUCCESS);
    EXPECT_STATUS(profile(&hb, me, BUSY_A, BUSY_A_SIZE, 2, b, (ULONG)(n * 4)), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(ha), STATUS_SUCCESS);
    EXPECT_STATUS(NtStartProfile(hb), STATUS_SUCCESS);
    EXPECT(spin_for_samples(ha, busy_a, 10) && spin_for_samples(hb, busy_a, 10),
           "%s: both started, no samples", what);
    EXPECT_STATUS(NtStopProfile(ha), STATUS_SUCCESS);
    uint64_t a_stopped = sum(a, n), b_stopped = sum(b, n);
    EXPECT(spin_for_samples(hb, busy_a, 20), "%s: the second stopped counting with the first",
           what);
    EXPECT(sum(b, n) >= b_stopped + 20, "%s: the second's buckets went from %lu only to %lu", what,
           b_stopped, sum(b, n));
    EXPECT(sum(a, n) == a_stopped, "%s: the stopped one went on counting (%lu to %lu)", what,
           a_stopped, sum(a, n));
    // And the other way round: the first restarts, the second stops.
    EXPECT_STATUS(NtStartProfile(ha), STATUS_SUCCESS);
    EXPECT_STATUS(NtStopProfile(hb), STATUS_SUCCESS);
    b_stopped = sum(b, n);
    EXPECT(spin_for_samples(ha, busy_a, 20), "%s: the first did not count after restarting", what);
    EXPECT(sum(b, n) == b_stopped, "%s: the stopped second went on counting", what);
    EXPECT_STATUS(NtClose(ha), STATUS_SUCCESS);
    struct sys_profile_stats st = stats_of(hb);
    EXPECT(sum(b, n) == st.in_range, "%s: buckets %lu, in range %lu", what, sum(b, n), st.in_range);
    EXPECT_STATUS(NtClose(hb), STATUS_SUCCESS);
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
}

static void test_two_profiles(void)
{
    ULONG old = fast_sampling();
    HANDLE me = open_self();
    two_profiles(me, "two process profiles");
    if (privileged())
        two_profiles(NULL, "a system and a process profile");
    EXPECT_STATUS(NtClose(me), STATUS_SUCCESS);
    restore_sampling(old);
}

// One system profile over 128 KiB of our code, hit by every CPU: one spinning
// child per CPU in busy_a, ProfileTime at its minimum interval. Afterwards the
// buckets plus the out-of-range samples are exactly the samples delivered, and
// busy_a has most of the buckets' samples. One more system profile per CPU,
// affine to it alone, shows that each CPU delivered samples in busy_a. The
// spinners are spawned suspended and then resumed together, so that all of
// them are runnable at once and every CPU takes one (spawned running, on an
// emulator with fewer host cores than CPUs the first ones could end before
// the last began, and a CPU could be left with none); they run 1.5 s for
// every 16 CPUs.
#define SYSTEM_SPIN_MS_PER_16 1500
#define WINDOW                (128 * 1024)
#define WINDOW_SHIFT          4

// The profiles started, one spinning child per CPU run to its end, the
// profiles stopped.
static void spin_every_cpu(HANDLE all, HANDLE *one, unsigned ncpu)
{
    HANDLE child[64] = {NULL};
    EXPECT_STATUS(NtStartProfile(all), STATUS_SUCCESS);
    for (unsigned c = 0; c < ncpu; c++)
        EXPECT_STATUS(NtStartProfile(one[c]), STATUS_SUCCESS);
    char ms[16];
    snprintf(ms, sizeof ms, "%u", SYSTEM_SPIN_MS_PER_16 * ((ncpu + 15) / 16));
    for (unsigned c = 0; c < ncpu; c++)
        EXPECT_STATUS(spawn_child(SPAWN_SUSPENDED, &child[c], "spin", ms), STATUS_SUCCESS);
    for (unsigned c = 0; c < ncpu; c++)
        EXPECT_STATUS(SysResume(child[c]), STATUS_SUCCESS);
    for (unsigned c = 0; c < ncpu; c++) {
        int status = -1000;
        EXPECT_STATUS(SysWait(child[c], &status), STATUS_SUCCESS);
        EXPECT(status == 0, "spinner %u: exit status %d", c, status);
        NtClose(child[c]);
    }
    EXPECT_STATUS(NtStopProfile(all), STATUS_SUCCESS);
    for (unsigned c = 0; c < ncpu; c++)
        EXPECT_STATUS(NtStopProfile(one[c]), STATUS_SUCCESS);
}

// The window's buckets and statistics: every sample accounted for, most in busy_a.
static void check_window(HANDLE all, const ULONG *window, uintptr_t base)
{
    struct sys_profile_stats st = stats_of(all);
    uint64_t total = sum(window, WINDOW >> WINDOW_SHIFT);
    uint64_t first = (BUSY_A - base) >> WINDOW_SHIFT,
             last = ((uintptr_t)busy_a_end - 1 - base) >> WINDOW_SHIFT;
    uint64_t hot = sum(window + first, last - first + 1);
    printf("# %s: delivered %lu, in range %lu, out of range %lu, throttled %lu, busy_a %lu\n",
           test_name, st.delivered, st.in_range, st.out_of_range, st.throttled, hot);
    EXPECT(st.delivered > 0, "no sample delivered");
    EXPECT(total + st.out_of_range == st.delivered,
           "buckets %lu + out of range %lu = %lu, but %lu delivered", total, st.out_of_range,
           total + st.out_of_range, st.delivered);
    EXPECT(total == st.in_range, "buckets %lu, in range %lu", total, st.in_range);
    EXPECT(hot * 2 > total, "busy_a has %lu of the window's %lu samples", hot, total);
}

static void test_system_all_cpus(void)
{
    static ULONG window[WINDOW >> WINDOW_SHIFT];
    static ULONG per_cpu[64][8];
    unsigned ncpu = online_cpus();
    EXPECT(ncpu >= 1 && ncpu <= 64, "%u CPUs online", ncpu);
    if (ncpu < 1 || ncpu > 64)
        return;
    ULONG old = fast_sampling();
    ULONG interval = 0;
    NtQueryIntervalProfile(ProfileTime, &interval);
    printf("# %s: %u CPUs, ProfileTime interval %u\n", test_name, ncpu, interval);
    uintptr_t base = BUSY_A & ~(uintptr_t)0xFFFF;
    uint64_t small = nbuckets(BUSY_A_SIZE, 2);
    HANDLE all = NULL, one[64] = {NULL};
    EXPECT_STATUS(NtCreateProfile(&all, NULL, (void *)base, WINDOW, WINDOW_SHIFT, window,
                                  sizeof window, ProfileTime, (KAFFINITY)-1),
                  STATUS_SUCCESS);
    for (unsigned c = 0; c < ncpu; c++)
        EXPECT_STATUS(NtCreateProfile(&one[c], NULL, (void *)BUSY_A, BUSY_A_SIZE, 2, per_cpu[c],
                                      (ULONG)(small * 4), ProfileTime, 1ull << c),
                      STATUS_SUCCESS);
    spin_every_cpu(all, one, ncpu);
    check_window(all, window, base);
    for (unsigned c = 0; c < ncpu; c++) {
        struct sys_profile_stats sc = stats_of(one[c]);
        uint64_t t = sum(per_cpu[c], small);
        EXPECT(t > 0, "CPU %u: no sample in busy_a", c);
        EXPECT(t + sc.out_of_range == sc.delivered, "CPU %u: %lu + %lu != %lu delivered", c, t,
               sc.out_of_range, sc.delivered);
        printf("# %s: CPU %u: %lu in busy_a of %lu delivered\n", test_name, c, t, sc.delivered);
        EXPECT_STATUS(NtClose(one[c]), STATUS_SUCCESS);
    }
    EXPECT_STATUS(NtClose(all), STATUS_SUCCESS);
    restore_sampling(old);
}

// ---------------------------------------------------------------------------
// Starts and stops racing interval changes.
//
// RACE_RACERS processes start and stop profiles of ProfileTime (helper_racer)
// while this one sets ProfileTime's interval in a loop: on -smp 4 the HAL's
// first start, last stop and reprogramming of a running ProfileTime overlap.
// Every start and stop must succeed (none may find the HAL busy). Once all
// have stopped, the source must have no user and not run: SysProfileSources
// says stopped with 0 users, no CPU's ProfileTime expiries advance, and the
// interval is the last one set.
#define RACE_RACERS 3
#define RACE_ROUNDS "60" // start/stop pairs per racer (the old HAL failed within 2)

// Whether the process behind h has ended (it is gone or a zombie).
static int ended(HANDLE h)
{
    uint32_t pid = 0;
    struct sys_process_info *p;
    return !NT_SUCCESS(SysProcessId(h, &pid)) || !(p = find_process(pid)) ||
           p->state == PROC_ZOMBIE;
}

// Every CPU's ProfileTime expiries, summed.
static uint64_t profile_ticks(void)
{
    static struct sys_cpu_info info[64];
    uint32_t n = 0;
    uint64_t total = 0;
    EXPECT_STATUS(SysCpuInfo(info, 64, &n), STATUS_SUCCESS);
    for (uint32_t i = 0; i < n && i < 64; i++)
        total += info[i].profile_ticks;
    return total;
}

static void test_hal_race(void)
{
    static const ULONG intervals[] = {1221, 2500, 5000, 10000, 1500};
    struct sys_profile_source *r = source_row(ProfileTime);
    EXPECT(r && !r->started && r->users == 0, "ProfileTime in use before the race");
    ULONG old = 0, last = 0;
    EXPECT_STATUS(NtQueryIntervalProfile(ProfileTime, &old), STATUS_SUCCESS);
    HANDLE racer[RACE_RACERS] = {NULL};
    for (unsigned i = 0; i < RACE_RACERS; i++)
        EXPECT_STATUS(spawn_child(0, &racer[i], "racer", RACE_ROUNDS), STATUS_SUCCESS);
    unsigned sets = 0, running = RACE_RACERS;
    while (running) {
        last = intervals[sets++ % (sizeof intervals / sizeof intervals[0])];
        EXPECT_STATUS(NtSetIntervalProfile(last, ProfileTime), STATUS_SUCCESS);
        running = 0;
        for (unsigned i = 0; i < RACE_RACERS; i++)
            running += racer[i] && !ended(racer[i]);
    }
    for (unsigned i = 0; i < RACE_RACERS; i++) {
        int status = -1000;
        EXPECT_STATUS(SysWait(racer[i], &status), STATUS_SUCCESS);
        EXPECT(status == 0, "racer %u: %d start/stop calls failed", i, status);
        NtClose(racer[i]);
    }
    r = source_row(ProfileTime);
    EXPECT(r && !r->started && r->users == 0,
           "after every stop ProfileTime is %s with %lu users, expected stopped with 0",
           r && r->started ? "started" : "stopped", r ? r->users : 0);
    EXPECT(r && r->interval == last, "interval %lu, the last one set was %u", r ? r->interval : 0,
           last);
    uint64_t ticks = profile_ticks();
    SysSleep(50);
    uint64_t later = profile_ticks();
    EXPECT(later == ticks, "ProfileTime still ticks after every stop: %lu expiries in 50 ms",
           later - ticks);
    printf("# %s: %u interval changes while %d racers started and stopped %s times each\n",
           test_name, sets, RACE_RACERS, RACE_ROUNDS);
    EXPECT_STATUS(NtSetIntervalProfile(old, ProfileTime), STATUS_SUCCESS);
}

// ---------------------------------------------------------------------------
// The table of tests.

static const struct child_test tests[] = {
    CHILD_TEST(query_interval),
    CHILD_TEST(create_validation),
    CHILD_TEST(create_ex_validation),
    CHILD_TEST(start_stop),
    CHILD_TEST(pseudo_handles),
    CHILD_TEST(privilege_denied),
    CHILD_TEST_PRIVILEGED(privilege_granted),
    CHILD_TEST_PRIVILEGED(set_interval),
    CHILD_TEST_PRIVILEGED(guard_pages),
    CHILD_TEST_PRIVILEGED(unmap_while_started),
    CHILD_TEST_PRIVILEGED(close_while_started),
    CHILD_TEST_PRIVILEGED(two_profiles),
    CHILD_TEST_PRIVILEGED(system_all_cpus),
    CHILD_TEST_PRIVILEGED(hal_race),
    CHILD_TEST_PRIVILEGED(limit),
    CHILD_TEST_PRIVILEGED(reserve),
    CHILD_TEST_PRIVILEGED(churn),
};

// `ntprofiletests [rounds=N] [NAME...]`: after the plan, the CPUs and rounds.
static void note(const struct driver *d)
{
    printf("# ntprofiletests: %u CPUs online, %u churn rounds%s\n", online_cpus(), rounds,
           d->privileged ? "" : ", unprivileged");
}

static char rounds_arg[16]; // every test child's ARG: the rounds

static struct suite suite = {
    SUITE("ntprofiletests", helpers, tests, TEST_TIMEOUT_MS),
    .driver.arg = rounds_arg,
    .driver.timed = 1,
    .driver.note = note,
};

// rounds=N is ours (a test child's arguments never look like it); the NAMEs
// that select tests are gathered at the front of argv.
int main(int argc, char **argv)
{
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "rounds=", 7) == 0)
            rounds = (unsigned)strtoul(argv[i] + 7, NULL, 0);
        else
            argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    snprintf(rounds_arg, sizeof rounds_arg, "%u", rounds);
    return suite_main(kept, argv, &suite);
}
