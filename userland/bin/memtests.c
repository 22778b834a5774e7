// memtests: the memory limits and the bound on interrupts-off time, from ring 3
// (lib/abi/syscalls.h: MEM_COMMIT_DIVISOR, MEM_RESERVE_DIVISOR,
// MAP_REGIONS_MAX, SysIrqoffLongest), run as init (privileged).
//
// Bound: no system call may keep interrupts off longer than
// IRQOFF_SPIN_MAX_US, whatever its arguments. Each step (a 384 MiB SysMap, a
// profile over it, its start, which pins every page, its stop, the SysUnmap,
// and a process that exits with a big mapping and a started profile) runs
// after the kernel's tracker is reset, and each CPU's longest section since
// then must be under the bound. Booted with -icount (tests/run), guest time
// counts instructions, so a host that deschedules a vCPU cannot stretch a
// section.
//
// Limits: an unprivileged child is refused with STATUS_COMMITMENT_LIMIT at its
// limit, keeps running, and is charged for pinned pages it unmapped until
// the profile stops; the privileged reserve holds against an unprivileged
// process and gives way to a privileged one, for mappings, log rings and /tmp
// files alike; the mapping count has its cap; a big log and /tmp file are
// made when free memory is all in small pieces.
// Every page comes back.
//
//   memtests                   every test, KTAP lines, "memtests: N passed, N failed"
//   memtests --child big MIB   map MIB, start a profile over it, wait to be killed
//   memtests --child quota     the commit limit, as an unprivileged process
//   memtests --child reserve_holder   (privileged) take all but the reserve, then
//                              spawn `reserve` unprivileged and privileged
//   memtests --child reserve WHO      map 512 pages: refused unless privileged
//   memtests --child regions   one-page mappings up to the cap
//   memtests --child pieces    (privileged) free memory left in 4-page pieces,
//                              then a big log and /tmp file; spawns
//   memtests --child pieces_refused   the same refused below the reserve
#include <ktapcheck.h>
#include <nt.h>
#include <stdarg.h>
#include <process.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define PAGE    ((uint64_t)4096)
#define MIB     ((uint64_t)1 << 20)
#define BIG_MIB 384 // the mapping of the finding: 3 s with interrupts off once

int checks, failed;
static const char *self = "memtests";
static struct sys_info info;

#define CHECK(cond, ...) ktap_check(!!(cond), " - ", __VA_ARGS__)

// A check inside a child: a "#" line, counted in failed, which makes the
// child's exit status; the driver's line for the child is the KTAP one.
static __attribute__((format(printf, 2, 3))) void expect(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# %s: ", ok ? "ok" : "FAILED");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failed += !ok;
}

static void *map(uint64_t bytes, uint32_t prot, NTSTATUS *s)
{
    void *p = NULL;
    *s = SysMap(&p, bytes, prot);
    return NT_SUCCESS(*s) ? p : NULL;
}

// A process-scope ProfileTime profile of this program's code, counting into
// the buffer [buf, buf + bytes).
static NTSTATUS profile(HANDLE *h, void *buf, uint64_t bytes)
{
    return NtCreateProfile(h, NtCurrentProcess(), (void *)0x400000, 0x10000, 4, buf, (ULONG)bytes,
                           ProfileTime, (KAFFINITY)-1);
}

static int run_child(const char *name, const char *arg, uint32_t flags)
{
    const char *argv[] = {self, "--child", name, arg, NULL};
    int status = -1000;
    NTSTATUS s = run_program(self, argv, flags, &status);
    return NT_SUCCESS(s) ? status : -1001;
}

// --- the bound -------------------------------------------------------------------

static struct sys_irqoff_longest rows[64];

static void tracker_reset(void)
{
    uint32_t n = 0;
    NTSTATUS s = SysIrqoffLongest(rows, 0, &n, IRQOFF_RESET);
    if (!NT_SUCCESS(s))
        printf("# SysIrqoffLongest(IRQOFF_RESET): %s\n", nt_status_name(s));
}

// Every CPU's longest section since the reset against the bound; the worst
// one is named in the line.
static void check_bound(const char *step)
{
    uint32_t n = 0, worst = 0;
    NTSTATUS s = SysIrqoffLongest(rows, 64, &n, 0);
    for (uint32_t i = 1; i < n; i++)
        if (rows[i].tsc > rows[worst].tsc)
            worst = i;
    uint64_t us = n && info.tsc_hz ? rows[worst].tsc * 1000000 / info.tsc_hz : 0;
    CHECK(NT_SUCCESS(s) && n == info.ncpus && us < IRQOFF_SPIN_MAX_US,
          "%s: longest interrupts-off section %lu.%03lu ms, cpu %u at %s (bound %u ms)", step,
          us / 1000, us % 1000, worst, n && rows[worst].where[0] ? rows[worst].where : "-",
          IRQOFF_SPIN_MAX_US / 1000);
}

static uint64_t big_bytes(void)
{
    uint64_t mib = info.total_pages * PAGE / MIB * 2 / 5; // leaves room for the rest
    return (mib < BIG_MIB ? mib : BIG_MIB) * MIB;
}

// The steps of the finding, each measured alone: map, profile (the buffer's
// pages checked), start (pinned), stop (unpinned), unmap.
static void test_bound_steps(void)
{
    uint64_t bytes = big_bytes();
    char step[80];
    NTSTATUS s;
    tracker_reset();
    uint8_t *p = map(bytes, PROT_READ | PROT_WRITE, &s);
    snprintf(step, sizeof step, "SysMap %lu MiB", bytes / MIB);
    CHECK(p, "%s: %s", step, nt_status_name(s));
    check_bound(step);
    if (!p)
        return;
    HANDLE h = 0;
    tracker_reset();
    s = profile(&h, p, bytes);
    CHECK(NT_SUCCESS(s), "NtCreateProfile with a %lu MiB buffer: %s", bytes / MIB,
          nt_status_name(s));
    check_bound("NtCreateProfile (the buffer's pages checked)");
    tracker_reset();
    s = NtStartProfile(h);
    CHECK(NT_SUCCESS(s), "NtStartProfile: %s", nt_status_name(s));
    check_bound("NtStartProfile (every page pinned)");
    tracker_reset();
    s = NtStopProfile(h);
    CHECK(NT_SUCCESS(s), "NtStopProfile: %s", nt_status_name(s));
    check_bound("NtStopProfile (every page unpinned)");
    NtClose(h);
    tracker_reset();
    s = SysUnmap(p, bytes);
    CHECK(NT_SUCCESS(s), "SysUnmap: %s", nt_status_name(s));
    snprintf(step, sizeof step, "SysUnmap %lu MiB", bytes / MIB);
    check_bound(step);
}

// An unprivileged process with a big mapping and a started profile over it,
// which waits to be killed: its exit unpins and frees all of it.
static int helper_big(const char *arg)
{
    uint64_t bytes = strtoul(arg, NULL, 0) * MIB;
    NTSTATUS s;
    void *p = map(bytes, PROT_READ | PROT_WRITE, &s);
    HANDLE h;
    if (!p || !NT_SUCCESS(s = profile(&h, p, bytes)) || !NT_SUCCESS(s = NtStartProfile(h))) {
        printf("# big %s MiB: %s\n", arg, nt_status_name(s));
        return 1;
    }
    for (;;)
        SysSleep(1000);
}

// Only the exit is measured: the tracker is reset once the child's profile
// has pinned its pages, and the child is killed.
static void test_bound_exit(void)
{
    uint64_t limit = info.total_pages / MEM_COMMIT_DIVISOR * PAGE / MIB;
    uint64_t mib = big_bytes() / MIB;
    mib = mib < limit * 9 / 10 ? mib : limit * 9 / 10; // within an unprivileged process's limit
    char arg[24], step[96];
    snprintf(arg, sizeof arg, "%lu", mib);
    snprintf(step, sizeof step, "exit of an unprivileged process with %lu MiB mapped and pinned",
             mib);
    const char *argv[] = {self, "--child", "big", arg, NULL};
    HANDLE h;
    uint32_t pid = 0;
    NTSTATUS s = SysSpawn(self, argv, 0, &h);
    if (!NT_SUCCESS(s) || !NT_SUCCESS(s = SysProcessId(h, &pid))) {
        CHECK(0, "%s: spawn: %s", step, nt_status_name(s));
        return;
    }
    struct sys_self_check c = {0};
    for (int i = 0; i < 600 && c.pinned_pages < mib * MIB / PAGE; i++) {
        SysSleep(100);
        SysSelfCheck(&c);
    }
    int status = 0;
    tracker_reset();
    SysKill(pid);
    SysWait(h, &status);
    NtClose(h);
    CHECK(c.pinned_pages >= mib * MIB / PAGE && status == EXIT_STATUS_KILLED,
          "%s: %lu pages pinned, then killed (exit status %d)", step, c.pinned_pages, status);
    check_bound(step);
}

// --- the limits --------------------------------------------------------------------

// Demand mappings of a MiB each until the kernel refuses one; their count.
static unsigned fill(void **chunks, unsigned max, NTSTATUS *last)
{
    unsigned n = 0;
    while (n < max && (chunks[n] = map(MIB, PROT_READ | PROT_WRITE | PROT_DEMAND, last)))
        n++;
    return n;
}

// Pinned pages stay charged after their unmap, until the profile stops.
static void quota_pins(void **chunks, unsigned n)
{
    NTSTATUS s;
    SysUnmap(chunks[--n], MIB); // room for the buffer, and no more
    uint8_t *buf = map(MIB, PROT_READ | PROT_WRITE, &s);
    HANDLE h = 0;
    if (buf && NT_SUCCESS(s = profile(&h, buf, MIB)))
        s = NtStartProfile(h);
    expect(buf && NT_SUCCESS(s), "a profile over the last MiB starts: %s", nt_status_name(s));
    expect(SysUnmap(buf, MIB) == STATUS_SUCCESS, "its buffer unmapped while pinned");
    void *more = map(MIB, PROT_READ | PROT_WRITE | PROT_DEMAND, &s);
    expect(!more && s == STATUS_COMMITMENT_LIMIT,
           "the pinned MiB is still charged: another MiB gets %s", nt_status_name(s));
    NtStopProfile(h);
    NtClose(h);
    more = map(MIB, PROT_READ | PROT_WRITE | PROT_DEMAND, &s);
    expect(more != NULL, "once the profile stops, the MiB can be mapped again: %s",
           nt_status_name(s));
    if (more)
        SysUnmap(more, MIB);
    while (n)
        SysUnmap(chunks[--n], MIB);
}

static int helper_quota(const char *arg)
{
    (void)arg;
    static void *chunks[8192];
    uint64_t limit_mib = info.total_pages / MEM_COMMIT_DIVISOR * PAGE / MIB;
    NTSTATUS s;
    unsigned n = fill(chunks, 8192, &s);
    expect(s == STATUS_COMMITMENT_LIMIT && n + 2 >= limit_mib && n <= limit_mib,
           "unprivileged: %u MiB mapped, then %s (limit %lu MiB)", n, nt_status_name(s), limit_mib);
    if (n)
        ((volatile uint8_t *)chunks[0])[7] = 1; // the process goes on
    void *one = map(PAGE * 512, PROT_READ | PROT_WRITE, &s);
    expect(!one && s == STATUS_COMMITMENT_LIMIT, "2 MiB more, not on demand: %s",
           nt_status_name(s));
    if (n)
        quota_pins(chunks, n);
    return failed != 0;
}

static void test_quota(void)
{
    struct sys_self_check before, after;
    SysSelfCheck(&before);
    int status = run_child("quota", NULL, 0);
    SysSelfCheck(&after);
    CHECK(status == 0, "the unprivileged child at its limit exits 0 (status %d)", status);
    CHECK(after.free_pages == before.free_pages && after.pinned_pages == before.pinned_pages,
          "every page comes back: %lu free before, %lu after", before.free_pages, after.free_pages);
}

// 512 pages, with free memory down to the reserve and 256 pages: refused for
// an unprivileged process, given to a privileged one (WHO says which this is).
static int helper_reserve(const char *arg)
{
    NTSTATUS s;
    void *p = map(512 * PAGE, PROT_READ | PROT_WRITE, &s);
    int refused = !p && s == STATUS_COMMITMENT_LIMIT;
    expect(strcmp(arg, "privileged") == 0 ? p != NULL : refused, "%s: 512 pages: %s", arg,
           nt_status_name(s));
    return failed != 0;
}

// A privileged process maps until the reserve and 256 pages more are all
// that is free; then an unprivileged process may not take 512 of them, and
// a privileged one may. Both are loaded before (suspended), when there is
// room for their images.
static int helper_reserve_holder(const char *arg)
{
    (void)arg;
    const char *unpriv[] = {self, "--child", "reserve", "unprivileged", NULL};
    const char *priv[] = {self, "--child", "reserve", "privileged", NULL};
    HANDLE hu = 0, hp = 0;
    NTSTATUS s = SysSpawn(self, unpriv, SPAWN_SUSPENDED, &hu);
    if (NT_SUCCESS(s))
        s = SysSpawn(self, priv, SPAWN_SUSPENDED | SPAWN_PRIVILEGED, &hp);
    expect(NT_SUCCESS(s), "two suspended children: %s", nt_status_name(s));
    SysInfo(&info);
    uint64_t reserve = info.total_pages / MEM_RESERVE_DIVISOR;
    uint64_t take = info.free_pages > reserve + 1024 ? info.free_pages - reserve - 256 : 0;
    s = STATUS_NO_MEMORY;
    void *p = take ? map(take * PAGE, PROT_READ | PROT_WRITE, &s) : NULL;
    expect(p != NULL, "privileged: %lu pages, down to the reserve (%lu pages) and 256 more: %s",
           take, reserve, nt_status_name(s));
    int su = -1000, sp = -1000;
    if (hu && NT_SUCCESS(SysResume(hu)))
        SysWait(hu, &su);
    if (hp && NT_SUCCESS(SysResume(hp)))
        SysWait(hp, &sp);
    expect(su == 0, "an unprivileged process cannot take 512 of them (status %d)", su);
    expect(sp == 0, "a privileged one can (status %d)", sp);
    NtClose(hu);
    NtClose(hp);
    return failed != 0;
}

static void test_reserve(void)
{
    struct sys_self_check before, after;
    SysSelfCheck(&before);
    int status = run_child("reserve_holder", NULL, SPAWN_PRIVILEGED);
    SysSelfCheck(&after);
    CHECK(status == 0, "the privileged reserve (status %d)", status);
    CHECK(after.free_pages == before.free_pages,
          "every page comes back: %lu free before, %lu after", before.free_pages, after.free_pages);
}

// --- memory in pieces ----------------------------------------------------------

#define PIECE_PAGES  4         // a hole left in the pieces' mapping
#define PIECE_STRIDE 16        // one hole every 16 pages
#define PIECES_RING  (4 * MIB) // a log ring per CPU: 1,025 pages each
#define PIECES_FILE  (2 * MIB) // and a /tmp file of 512 pages
#define PIECES_NAME  "/tmp/memtests-pieces"

// Unprivileged, with free memory below the reserve: a log's rings and a
// /tmp file would take the reserve, so both are refused.
static int helper_pieces_refused(const char *arg)
{
    (void)arg;
    struct pmc_log_config cfg = {PMC_LOG_RING_MIN, 0};
    NTSTATUS s = NtPmcConfigureLog(&cfg);
    expect(s == STATUS_COMMITMENT_LIMIT, "unprivileged: a log of 4 KiB a CPU: %s",
           nt_status_name(s));
    s = SysTmpWrite(PIECES_NAME "-unprivileged", "x", 1, TMP_TRUNCATE);
    expect(s == STATUS_COMMITMENT_LIMIT, "unprivileged: a /tmp file of 1 byte: %s",
           nt_status_name(s));
    return failed != 0;
}

// A privileged process takes all but 1,024 free pages, then gives back 4
// pages in every 16 of its mapping: free memory is in pieces of at most
// 1,024 pages, most of them 4. A log with rings of 1,025 pages a CPU and a
// /tmp file of 512 pages are still made (their pages need not be
// contiguous), while an unprivileged process is refused both (the reserve).
static int helper_pieces(const char *arg)
{
    (void)arg;
    const char *refused[] = {self, "--child", "pieces_refused", NULL};
    HANDLE h = 0;
    NTSTATUS s = SysSpawn(self, refused, SPAWN_SUSPENDED, &h); // loaded while there is room
    expect(NT_SUCCESS(s), "an unprivileged child, suspended: %s", nt_status_name(s));
    SysInfo(&info);
    uint64_t ring_pages = PIECES_RING / PAGE + 1, file_pages = PIECES_FILE / PAGE;
    uint64_t holes = (info.ncpus * (ring_pages + 1) + file_pages + 256) / PIECE_PAGES + 1;
    uint64_t take = info.free_pages > 1024 ? info.free_pages - 1024 : 0;
    uint64_t holed = holes * PIECE_STRIDE * PAGE; // then the file's bytes, still mapped
    uint8_t *p =
        take * PAGE >= holed + PIECES_FILE ? map(take * PAGE, PROT_READ | PROT_WRITE, &s) : NULL;
    expect(p != NULL, "%lu pages, all but 1,024 free: %s", take, nt_status_name(s));
    for (uint64_t i = 0; p && i < holes; i++)
        SysUnmap(p + i * PIECE_STRIDE * PAGE, PIECE_PAGES * PAGE);
    int status = -1000;
    if (h && NT_SUCCESS(SysResume(h)))
        SysWait(h, &status);
    expect(status == 0, "the unprivileged child is refused both (status %d)", status);
    NtClose(h);
    struct pmc_log_config cfg = {PIECES_RING, 0};
    s = NtPmcConfigureLog(&cfg);
    expect(NT_SUCCESS(s), "a log of %lu pages a CPU in %lu pieces of %u pages: %s", ring_pages,
           holes, PIECE_PAGES, nt_status_name(s));
    uint8_t *data = p ? p + holed : NULL;
    for (uint64_t i = 0; data && i < PIECES_FILE; i++)
        data[i] = (uint8_t)(i * 7 + 1);
    s = data ? SysTmpWrite(PIECES_NAME, data, PIECES_FILE, TMP_TRUNCATE) : STATUS_NO_MEMORY;
    expect(NT_SUCCESS(s), "a /tmp file of %lu pages: %s", file_pages, nt_status_name(s));
    uint8_t back[64];
    size_t got = 0;
    s = SysTmpRead(PIECES_NAME, PIECES_FILE - sizeof back, back, sizeof back, &got);
    expect(NT_SUCCESS(s) && got == sizeof back &&
               memcmp(back, data + PIECES_FILE - sizeof back, sizeof back) == 0,
           "its last bytes read back: %s", nt_status_name(s));
    SysTmpWrite(PIECES_NAME, NULL, 0, TMP_REMOVE);
    NtPmcConfigureLog(NULL);
    return failed != 0;
}

static void test_pieces(void)
{
    int status = run_child("pieces", NULL, SPAWN_PRIVILEGED);
    CHECK(status == 0, "big buffers from memory in pieces (status %d)", status);
}

static int helper_regions(const char *arg)
{
    (void)arg;
    static void *pages[MAP_REGIONS_MAX + 1];
    NTSTATUS s = STATUS_SUCCESS;
    unsigned n = 0;
    while (n <= MAP_REGIONS_MAX && (pages[n] = map(PAGE, PROT_READ | PROT_WRITE, &s)))
        n++;
    expect(s == STATUS_QUOTA_EXCEEDED && n < MAP_REGIONS_MAX,
           "%u one-page mappings, then %s (at most %u in all)", n, nt_status_name(s),
           MAP_REGIONS_MAX);
    if (n) {
        SysUnmap(pages[--n], PAGE);
        pages[n] = map(PAGE, PROT_READ | PROT_WRITE, &s);
        expect(pages[n] != NULL, "one unmapped, one more can be mapped: %s", nt_status_name(s));
        n += pages[n] != NULL;
    }
    while (n)
        SysUnmap(pages[--n], PAGE);
    return failed != 0;
}

static void test_regions(void)
{
    int status = run_child("regions", NULL, 0);
    CHECK(status == 0, "the mapping count's cap (status %d)", status);
}

int main(int argc, char **argv)
{
    self = argc > 0 && argv[0][0] ? argv[0] : self;
    SysInfo(&info);
    if (argc >= 3 && strcmp(argv[1], "--child") == 0) {
        const char *arg = argc > 3 ? argv[3] : "";
        if (strcmp(argv[2], "big") == 0)
            return helper_big(arg);
        if (strcmp(argv[2], "quota") == 0)
            return helper_quota(arg);
        if (strcmp(argv[2], "reserve") == 0)
            return helper_reserve(arg);
        if (strcmp(argv[2], "reserve_holder") == 0)
            return helper_reserve_holder(arg);
        if (strcmp(argv[2], "regions") == 0)
            return helper_regions(arg);
        if (strcmp(argv[2], "pieces") == 0)
            return helper_pieces(arg);
        if (strcmp(argv[2], "pieces_refused") == 0)
            return helper_pieces_refused(arg);
        return 2;
    }
    test_bound_steps();
    // From here every test's memory is a child's: all of it comes back (the
    // driver keeps the page tables its own big mapping made).
    struct sys_self_check before, after;
    SysSelfCheck(&before);
    test_bound_exit();
    test_quota();
    test_reserve();
    test_regions();
    test_pieces();
    SysSelfCheck(&after);
    CHECK(after.free_pages == before.free_pages && after.live_objects == before.live_objects &&
              after.pinned_pages == before.pinned_pages,
          "nothing left: %lu free pages before, %lu after; %lu objects, %lu", before.free_pages,
          after.free_pages, before.live_objects, after.live_objects);
    printf("memtests: %d passed, %d failed\n", checks - failed, failed);
    return failed != 0;
}
