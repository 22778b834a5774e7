// fuzz_users: an attacker beside a victim (make fuzz-users, a slice in make test).
//
//   fuzz_users OPS SEED [ATTACKERS]
//
// The privileged victim (this process, run as init or with sudo) does OPS of
// what a profiling user does, in an order drawn from SEED: a private /tmp
// file written and read back, its own PMC log with a system-scope sampling
// PMC started and read, a system-wide profile, a process-scope profile of
// itself, a counting PMC, memory mapped and touched. Meanwhile ATTACKERS
// (default 3) unprivileged processes grab every shared resource they can:
// the victim's file (read, overwrite, remove), /tmp's room, a PMC log of
// their own, profiles up to their share, memory up to their quota, the
// console's foreground group and input, and the stateful fuzzer's calls
// (fuzz_state) beside them.
//
// Invariants: every victim operation succeeds (it has nothing of its own to
// fail for here, so a failure is a denial an attacker caused); the victim's
// file is never read or changed by an attacker; every attacker's grab of
// something that is the victim's (its file, the console) is refused; the
// stateful fuzzer finds no invariant broken; and once every attacker and the
// fuzzer have exited, the kernel's counters (free pages, heap bytes,
// processes, objects, pinned pages) are back where they were before the
// first one started: nothing leaked. (The fuzzer's own leak check is off:
// the attackers come and go beside it.) The summary: "fuzz-users: N victim
// operations, N attacker calls, N denials caused by attackers, N failures";
// exit status 0 when there is no failure.
#include <childtest.h>
#include <mix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define VICTIM_FILE   "/tmp/fuzz-users-victim"
#define MAX_ATTACKERS 8
#define PAGE_BYTES    4096

static const char secret[] = "the victim's own recording";
static ULONG buckets[1024] __attribute__((aligned(4096)));
static unsigned denials;

static bool victim_ok(const char *what, NTSTATUS s)
{
    if (NT_SUCCESS(s))
        return true;
    struct sys_self_check c = {0};
    SysSelfCheck(&c); // what the machine had left: a denial for want of memory shows it
    printf("fuzz-users: victim: %s: %s (%lu pages free)\n", what, nt_status_name(s), c.free_pages);
    denials++;
    return false;
}

// --- the victim's operations ------------------------------------------------------

static void victim_file(void)
{
    char back[sizeof secret];
    size_t got = 0;
    if (!victim_ok("write its file", SysTmpWrite(VICTIM_FILE, secret, sizeof secret, TMP_TRUNCATE)))
        return;
    if (victim_ok("read its file", SysTmpRead(VICTIM_FILE, 0, back, sizeof back, &got)) &&
        (got != sizeof secret || memcmp(back, secret, sizeof secret) != 0)) {
        printf("fuzz-users: victim: its file was changed\n");
        failures++;
    }
}

static void victim_log(void)
{
    struct pmc_log_config cfg = {0};
    struct pmc_alloc a = {.source = ProfileTime, .mode = PMC_MODE_SS, .cpu = PMC_CPU_ANY};
    HANDLE pmc = NULL;
    static uint8_t records[16384];
    size_t got;
    if (!victim_ok("configure its log", NtPmcConfigureLog(&cfg)))
        return;
    if (victim_ok("allocate a system-scope sampling PMC", NtPmcAllocate(&pmc, &a)) &&
        victim_ok("start it", NtPmcStart(pmc))) {
        SysSleep(2);
        victim_ok("stop it", NtPmcStop(pmc));
        victim_ok("read its log", NtPmcReadLog(records, sizeof records, &got));
    }
    if (pmc)
        NtClose(pmc);
    victim_ok("release its log", NtPmcConfigureLog(NULL));
}

static void victim_profile(bool system)
{
    HANDLE me = NULL, prof;
    if (!system && !victim_ok("open itself", SysOpenProcess(SysGetPid(), &me)))
        return;
    NTSTATUS s = NtCreateProfile(&prof, me, (void *)0x400000, sizeof buckets * 2, 3, buckets,
                                 sizeof buckets, ProfileTime, (KAFFINITY)-1);
    if (victim_ok(system ? "create a system-wide profile" : "create a profile of itself", s)) {
        if (victim_ok("start the profile", NtStartProfile(prof)))
            victim_ok("stop the profile", NtStopProfile(prof));
        NtClose(prof);
    }
    if (me)
        NtClose(me);
}

static void victim_count(void)
{
    struct pmc_alloc a = {
        .source = PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES), .mode = PMC_MODE_SC, .cpu = PMC_CPU_ANY};
    HANDLE pmc;
    uint64_t v;
    if (!victim_ok("allocate a counting PMC", NtPmcAllocate(&pmc, &a)))
        return;
    if (victim_ok("start the count", NtPmcStart(pmc)))
        victim_ok("read the count", NtPmcRead(pmc, &v));
    NtClose(pmc);
}

static void victim_memory(void)
{
    void *p = NULL;
    size_t size = 4u << 20;
    if (!victim_ok("map 4 MiB", SysMap(&p, size, PROT_READ | PROT_WRITE)))
        return;
    for (size_t i = 0; i < size; i += PAGE_BYTES)
        ((volatile char *)p)[i] = 1;
    victim_ok("unmap", SysUnmap(p, size));
}

#define VICTIM_OPS 6

static void victim_op(unsigned which)
{
    switch (which % VICTIM_OPS) {
    case 0: victim_file(); break;
    case 1: victim_log(); break;
    case 2: victim_profile(true); break;
    case 3: victim_profile(false); break;
    case 4: victim_count(); break;
    default: victim_memory(); break;
    }
}

// --- the attackers ----------------------------------------------------------------

static unsigned calls, through; // an attacker's calls, and its grabs that got through

static void grab(bool got_through, const char *what)
{
    calls++;
    if (got_through) {
        printf("fuzz-users: attacker %u: %s got through\n", SysGetPid(), what);
        through++;
    }
}

#define FILLS 256 // files an attacker fills /tmp with, at most

static void fill_name(char name[48], unsigned i)
{
    snprintf(name, 48, "/tmp/fill-%u-%u", SysGetPid(), i);
}

// Our first n fill files removed (those that exist).
static void remove_fills(unsigned n)
{
    char name[48];
    for (unsigned i = 0; i < n; i++) {
        fill_name(name, i);
        calls++;
        SysTmpWrite(name, NULL, 0, TMP_REMOVE);
    }
}

static void attack_file(unsigned round)
{
    char buf[64];
    size_t got = 0;
    char name[48];
    grab(NT_SUCCESS(SysTmpRead(VICTIM_FILE, 0, buf, sizeof buf, &got)),
         "reading the victim's file");
    grab(NT_SUCCESS(SysTmpWrite(VICTIM_FILE, "forged", 6, TMP_TRUNCATE)), "forging its file");
    grab(NT_SUCCESS(SysTmpWrite(VICTIM_FILE, "forged", 6, 0)), "appending to its file");
    grab(NT_SUCCESS(SysTmpWrite(VICTIM_FILE, NULL, 0, TMP_REMOVE)), "removing its file");
    // Fill /tmp with files of our own until refused; every other round,
    // leave them for the next rounds to find /tmp full.
    static uint8_t big[256 << 10];
    unsigned n = 0;
    for (; n < FILLS; n++) {
        fill_name(name, n);
        calls++;
        if (!NT_SUCCESS(SysTmpWrite(name, big, sizeof big, TMP_TRUNCATE)))
            break;
    }
    if (round % 2)
        remove_fills(n);
}

static void attack_pmc(void)
{
    struct pmc_log_config cfg = {0};
    calls++;
    NtPmcConfigureLog(&cfg); // a log of our own, kept
    struct pmc_alloc a = {.source = ProfileTime, .mode = PMC_MODE_TS, .cpu = PMC_CPU_ANY};
    HANDLE pmc;
    calls++;
    if (NT_SUCCESS(NtPmcAllocate(&pmc, &a))) {
        calls += 2;
        NtPmcAttach(pmc, NtCurrentProcess());
        NtPmcStart(pmc); // held: closed at our exit
    }
}

static void attack_profiles(void)
{
    static HANDLE h[4096];
    HANDLE me;
    calls++;
    if (!NT_SUCCESS(SysOpenProcess(SysGetPid(), &me)))
        return;
    unsigned n = 0;
    for (; n < 4096; n++) {
        calls += 2;
        if (!NT_SUCCESS(NtCreateProfile(&h[n], me, (void *)0x400000, 4, 2, buckets, 4, ProfileTime,
                                        (KAFFINITY)-1)))
            break;
        if (!NT_SUCCESS(NtStartProfile(h[n]))) {
            NtClose(h[n]);
            break;
        }
    }
    for (unsigned i = 0; i < n; i++)
        NtClose(h[i]);
    NtClose(me);
}

static void attack_memory(void)
{
    void *p[64];
    unsigned n = 0;
    for (; n < 64; n++) {
        p[n] = NULL;
        calls++;
        if (!NT_SUCCESS(SysMap(&p[n], 16u << 20, PROT_READ | PROT_WRITE)))
            break;
    }
    for (unsigned i = 0; i < n; i++)
        SysUnmap(p[i], 16u << 20);
}

static void attack_console(void)
{
    char c[8];
    size_t got = 0;
    grab(NT_SUCCESS(SysConsoleForeground(0)), "clearing the console's foreground group");
    grab(NT_SUCCESS(SysRead(0 | SYS_READ_NOWAIT, c, sizeof c, &got)), "reading the console");
}

static int attacker(unsigned rounds, unsigned index)
{
    for (unsigned r = 0; r < rounds; r++) {
        switch ((r + index) % 5) {
        case 0: attack_file(r); break;
        case 1: attack_pmc(); break;
        case 2: attack_profiles(); break;
        case 3: attack_memory(); break;
        default: attack_console(); break;
        }
        SysYield();
    }
    remove_fills(FILLS); // what we leave behind is ours to remove, not a leak
    printf("fuzz-users: attacker %u: %u calls, %u got through\n", SysGetPid(), calls, through);
    return through ? -1 : (int)calls; // the driver adds the calls
}

// --- the driver -------------------------------------------------------------------

// Spawns n attackers of rounds rounds each into h: how many started.
static unsigned spawn_attackers(HANDLE *h, unsigned n, unsigned rounds)
{
    char r[16];
    snprintf(r, sizeof r, "%u", rounds);
    for (unsigned i = 0; i < n; i++)
        if (!victim_ok("spawn an attacker", spawn_child(0, &h[i], "attacker", r)))
            return i;
    return n;
}

// Waits for each of the n processes of h.
static void reap_all(HANDLE *h, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        int status;
        SysWait(h[i], &status);
        NtClose(h[i]);
    }
}

static int drive(unsigned ops, uint64_t seed, unsigned nattackers)
{
    HANDLE h[MAX_ATTACKERS + 1];
    char fuzz_calls[16], fuzz_seed[24];
    // The console is ours (its owner): no attacker may take it.
    victim_ok("own the console", SysConsoleForeground(0));
    victim_file();
    // What the kernel allocates once stays allocated (our handle table grown
    // to hold every child, a program's first load, what each operation
    // first needs), so the counters are read after each victim operation
    // has run once and attackers of no rounds have come and gone.
    for (unsigned i = 0; i < VICTIM_OPS; i++)
        victim_op(i);
    reap_all(h, spawn_attackers(h, nattackers + 1, 0));
    struct sys_self_check before;
    SysSelfCheck(&before);
    unsigned n = spawn_attackers(h, nattackers, ops / 4 + 1);
    snprintf(fuzz_calls, sizeof fuzz_calls, "%u", ops * 10);
    snprintf(fuzz_seed, sizeof fuzz_seed, "%lu", seed);
    const char *fuzz_argv[] = {"fuzz_state", fuzz_calls, fuzz_seed, "1", "--beside", NULL};
    bool fuzzing = victim_ok("spawn the fuzzer", SysSpawn("fuzz_state", fuzz_argv, 0, &h[n]));
    for (unsigned i = 0; i < ops; i++)
        victim_op((unsigned)stream_seed(seed, i));
    unsigned attacker_calls = fuzzing ? ops * 10 : 0;
    for (unsigned i = 0; i < n + fuzzing; i++) {
        int status = -1;
        SysWait(h[i], &status);
        NtClose(h[i]);
        if (i < n && status < 0)
            failures++; // an attacker got through (it said what)
        else if (i < n)
            attacker_calls += (unsigned)status;
        else if (status != 0) {
            printf("fuzz-users: the stateful fuzzer failed (status %d)\n", status);
            failures++;
        }
    }
    victim_file();                    // still the victim's, unchanged
    if (!counters_settled(&before)) { // it printed a "# leak:" line for each
        printf("fuzz-users: the attackers and the fuzzer leaked\n");
        failures++;
    }
    failures += denials;
    printf("fuzz-users: %u victim operations, %u attacker calls, %u denials caused by attackers, "
           "%d failures\n",
           ops + 2 + VICTIM_OPS, attacker_calls, denials, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    self = "fuzz_users";
    if (argc >= 4 && strcmp(argv[1], "--child") == 0)
        return attacker((unsigned)strtoul(argv[3], NULL, 0), SysGetPid());
    if (argc < 3) {
        printf("usage: fuzz_users OPS SEED [ATTACKERS]\n");
        return 2;
    }
    if (!privileged()) {
        printf("fuzz_users: the victim needs the privilege: run it as 'sudo fuzz_users'\n");
        return 2;
    }
    unsigned attackers = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 3;
    return drive((unsigned)strtoul(argv[1], NULL, 0), strtoul(argv[2], NULL, 0),
                 MIN(attackers, (unsigned)MAX_ATTACKERS));
}
