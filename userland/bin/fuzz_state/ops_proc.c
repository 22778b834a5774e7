// Processes and handles: children from the ramdisk (spin, calib, primes),
// suspended or not, resumed, killed, waited; a second handle to a process
// from SysOpenProcess; closing anything; and time spent in user mode.
#include "fuzz_state.h"
#include <clock.h>

static const char *const programs[][2] = {
    {"spin", "0"},        {"spin", "1"},      {"calib", "300000"},
    {"calib", "3000000"}, {"primes", "2000"}, {"primes", "20000"},
};
#define NPROGRAMS   (sizeof programs / sizeof programs[0])
#define SPIN_SECOND 1 // programs[1] runs for a second: killed before any wait

static HANDLE spawned;
static int exit_status;

// A child slot: a free one from pick on, or pick's after reaping it.
static unsigned proc_slot(struct fuzzer *f, unsigned pick)
{
    unsigned k = pick % NPROC;
    for (unsigned i = 0; i < NPROC && f->proc[k].live; i++)
        k = (k + 1) % NPROC;
    if (f->proc[k].live)
        proc_reap(f, k);
    return k;
}

// Argument arg of SysSpawn made wrong, in the order the call checks them
// (flags, privilege, path, handle pointer, argv).
static NTSTATUS spawn_mutate(struct fuzzer *f, const struct call *c, uint64_t *path, uint64_t *argv,
                             uint32_t *flags, uint64_t *ph)
{
    static const char *long_argv[MAX_ARGS + 2];
    static const char *kernel_argv[] = {"spin", (const char *)0xFFFFFFFF80100000ull, NULL};
    switch ((c->mutate - 1) % 4 + 1) {
    case 1:
        *path = c->how % 4 == 0   ? 0
                : c->how % 4 == 1 ? 0xFFFFFFFF80100000ull
                : c->how % 4 == 2 ? (uint64_t) "no-such-program"
                                  : (uint64_t) "kernel"; // an ELF, not a user program's
        return c->how % 4 < 2    ? STATUS_ACCESS_VIOLATION
               : c->how % 4 == 2 ? STATUS_OBJECT_NAME_NOT_FOUND
                                 : STATUS_INVALID_IMAGE_FORMAT;
    case 2:
        if (c->how % 3 == 2) {
            for (unsigned i = 0; i <= MAX_ARGS; i++)
                long_argv[i] = "x";
            *argv = (uint64_t)long_argv;
            return STATUS_INVALID_PARAMETER;
        }
        *argv = c->how % 3 == 0 ? 0 : (uint64_t)kernel_argv;
        return STATUS_ACCESS_VIOLATION;
    case 3:
        *flags = c->how & 1 ? SPAWN_PRIVILEGED : 0x80; // 0x80: no SPAWN_ flag
        return c->how & 1 ? (f->privileged ? NO_STATUS : STATUS_PRIVILEGE_NOT_HELD)
                          : STATUS_INVALID_PARAMETER;
    default: *ph = bad_pointer(f, c->how); return STATUS_ACCESS_VIOLATION;
    }
}

void op_spawn(struct fuzzer *f, const struct call *c)
{
    unsigned k = proc_slot(f, c->pick);
    unsigned p = c->variant % NPROGRAMS;
    const char *argv_ok[] = {programs[p][0], programs[p][1], NULL};
    uint64_t path = (uint64_t)programs[p][0], argv = (uint64_t)argv_ok, ph = (uint64_t)&spawned;
    uint32_t flags = (c->variant >> 3) % 3 == 0 ? SPAWN_SUSPENDED : 0;
    if (f->privileged && (c->v & 7) == 0)
        flags |= SPAWN_PRIVILEGED;
    NTSTATUS want = c->mutate ? spawn_mutate(f, c, &path, &argv, &flags, &ph) : NO_STATUS;
    spawned = NULL;
    NTSTATUS s = SysSpawn((const char *)path, (const char *const *)argv, flags, (HANDLE *)ph);
    check(f, c->op, s, want, want != NO_STATUS);
    if (!NT_SUCCESS(s) || ph != (uint64_t)&spawned || !new_handle_ok(f, spawned))
        return;
    struct proc *pr = &f->proc[k];
    *pr = (struct proc){.h = spawned, .live = true};
    pr->suspended = (flags & SPAWN_SUSPENDED) != 0;
    pr->long_spin = p == SPIN_SECOND;
    pr->endless = pr->suspended || pr->long_spin;
    check(f, OP_PROCESS_ID, SysProcessId(spawned, &pr->pid), STATUS_SUCCESS, false);
}

// The child slot a process handle belongs to, or -1.
static int find_proc(const struct fuzzer *f, HANDLE h)
{
    for (unsigned k = 0; h && k < NPROC; k++)
        if (f->proc[k].live && (f->proc[k].h == h || f->proc[k].dup == h))
            return (int)k;
    return -1;
}

// A process handle for a call: a child's (either one), or a bad one
// (mutated), or this process when there is no child.
static HANDLE proc_handle(struct fuzzer *f, const struct call *c, int *k)
{
    HANDLE h = NtCurrentProcess();
    int i = c->mutate == 1 ? -1 : live_proc(f, c->pick);
    if (c->mutate == 1)
        h = bad_handle(f, c, HT_PROCESS);
    else if (i >= 0 && f->proc[i].h && (!f->proc[i].dup || (c->variant & 1)))
        h = f->proc[i].h;
    else if (i >= 0)
        h = f->proc[i].dup;
    else if (f->self_h && (c->variant & 2))
        h = f->self_h;
    *k = find_proc(f, h);
    return h;
}

static bool is_self(const struct fuzzer *f, HANDLE h)
{
    return h == NtCurrentProcess() || (h && h == f->self_h);
}

void op_resume(struct fuzzer *f, const struct call *c)
{
    int k;
    HANDLE h = proc_handle(f, c, &k);
    NTSTATUS s = SysResume(h);
    check(f, c->op, s, handle_class(f, h, HT_PROCESS), false);
    if (k >= 0 && NT_SUCCESS(s)) {
        f->proc[k].suspended = false;
        f->proc[k].endless = f->proc[k].long_spin;
    }
}

void op_kill(struct fuzzer *f, const struct call *c)
{
    int k = live_child(f, c->pick);
    uint32_t pid = k >= 0 ? f->proc[k].pid : 0;
    NTSTATUS want = NO_STATUS;
    if (c->variant % 6 == 3 || pid == 0)
        pid = 0, want = STATUS_INVALID_CID; // no such process
    else if (c->variant % 6 == 4)
        pid = 0xFFFFFFF0u, want = STATUS_INVALID_CID;
    else if (c->variant % 6 == 5 && !f->privileged)
        pid = f->parent, want = STATUS_ACCESS_DENIED; // our parent is not ours to kill
    NTSTATUS s = SysKill(pid);
    check(f, c->op, s, want, false);
    if (k >= 0 && pid == f->proc[k].pid && NT_SUCCESS(s))
        f->proc[k].killed = true;
}

// Kills child k if waiting for it could take long (suspended, or the long spin).
static void kill_if_endless(struct fuzzer *f, unsigned k)
{
    struct proc *p = &f->proc[k];
    if (!p->endless || p->killed || p->waited)
        return;
    NTSTATUS s = SysKill(p->pid);
    check(f, OP_KILL, s, NO_STATUS, false);
    if (s != STATUS_SUCCESS && s != STATUS_PROCESS_IS_TERMINATING)
        fuzz_fail(f, FAIL_OTHER, "SysKill of our child %u: %s", p->pid, nt_status_name(s));
    p->killed = true;
}

void op_wait(struct fuzzer *f, const struct call *c)
{
    int k;
    HANDLE h = proc_handle(f, c, &k);
    uint64_t out = (uint64_t)&exit_status;
    NTSTATUS want = handle_class(f, h, HT_PROCESS);
    if (want == STATUS_SUCCESS && is_self(f, h))
        want = STATUS_INVALID_PARAMETER; // it would wait for ever
    if (c->mutate == 2) {
        out = bad_pointer(f, c->how);
        want = STATUS_ACCESS_VIOLATION; // probed before anything
    }
    if (k >= 0)
        kill_if_endless(f, (unsigned)k);
    NTSTATUS s = SysWait(h, (int *)out);
    check(f, c->op, s, want, false);
    if (k >= 0 && NT_SUCCESS(s))
        f->proc[k].waited = true;
}

// Closes child k's handle (its spawn handle, or with dup its second one).
static void proc_close_handle(struct fuzzer *f, unsigned k, bool dup)
{
    HANDLE *slot = dup ? &f->proc[k].dup : &f->proc[k].h, h = *slot;
    if (!h)
        return;
    NTSTATUS s = NtClose(h);
    check(f, OP_CLOSE, s, STATUS_SUCCESS, false);
    *slot = NULL;
    forget_handle(f, h);
    static uint32_t pid;
    check(f, OP_PROCESS_ID, SysProcessId(h, &pid), STATUS_INVALID_HANDLE, false);
    f->last = s;
}

void self_close(struct fuzzer *f)
{
    HANDLE h = f->self_h;
    if (!h)
        return;
    NTSTATUS s = NtClose(h);
    check(f, OP_CLOSE, s, STATUS_SUCCESS, false);
    f->self_h = NULL;
    forget_handle(f, h);
    static uint32_t pid;
    check(f, OP_PROCESS_ID, SysProcessId(h, &pid), STATUS_INVALID_HANDLE, false);
    f->last = s;
}

// What SysOpenProcess is asked for: a child's pid (slot *k), ours, none, our parent's.
static uint32_t open_pid(const struct fuzzer *f, const struct call *c, int *k, NTSTATUS *want)
{
    int i = live_child(f, c->pick);
    *k = -1;
    *want = STATUS_SUCCESS;
    if (c->variant % 5 <= 1 && i >= 0) {
        *k = i;
        *want = NO_STATUS; // gone when it ended with no handle left
        return f->proc[i].pid;
    }
    if (c->variant % 5 == 3) {
        *want = STATUS_INVALID_CID;
        return 0;
    }
    if (c->variant % 5 == 4 && !f->privileged) {
        *want = STATUS_ACCESS_DENIED;
        return f->parent;
    }
    return f->pid;
}

void op_open(struct fuzzer *f, const struct call *c)
{
    static HANDLE opened;
    int k;
    NTSTATUS want;
    uint32_t pid = open_pid(f, c, &k, &want);
    uint64_t ph = (uint64_t)&opened;
    if (c->mutate) {
        ph = bad_pointer(f, c->how);
        want = STATUS_ACCESS_VIOLATION; // probed first
    }
    if (k >= 0)
        proc_close_handle(f, (unsigned)k, true);
    else if (pid == f->pid)
        self_close(f);
    opened = NULL;
    NTSTATUS s = SysOpenProcess(pid, (HANDLE *)ph);
    check(f, c->op, s, want, c->mutate != 0);
    if (!NT_SUCCESS(s) || ph != (uint64_t)&opened || !new_handle_ok(f, opened))
        return;
    if (k >= 0)
        f->proc[k].dup = opened;
    else if (pid == f->pid)
        f->self_h = opened;
    else
        fuzz_fail(f, FAIL_OTHER, "SysOpenProcess(%u) opened a process not ours", pid);
}

// A handle no object has: closing it fails (pseudo-handles are in no table).
static void close_nothing(struct fuzzer *f, const struct call *c)
{
    HANDLE h = c->variant & 8 ? NtCurrentProcess() : (HANDLE)(uintptr_t)(4 * (1000 + c->v % 60000));
    if (f->nstale && (c->variant & 16))
        h = f->stale[c->v % (f->nstale < NSTALE ? f->nstale : NSTALE)];
    if (h != NtCurrentProcess() && handle_class(f, h, HT_PROFILE) != STATUS_INVALID_HANDLE)
        h = NtCurrentThread(); // a stale value that names something again
    check(f, c->op, NtClose(h), STATUS_INVALID_HANDLE, false);
}

void op_close(struct fuzzer *f, const struct call *c)
{
    int k;
    switch (c->variant % 6) {
    case 0:
        if ((k = live_prof(f, c->pick)) >= 0)
            return prof_close(f, (unsigned)k);
        break;
    case 1:
        if ((k = live_pmc(f, c->pick)) >= 0)
            return pmc_close(f, (unsigned)k);
        break;
    case 2:
    case 3:
        if ((k = live_proc(f, c->pick)) >= 0)
            return proc_close_handle(f, (unsigned)k,
                                     !f->proc[k].h || (c->variant % 6 == 3 && f->proc[k].dup));
        break;
    case 4:
        if (f->self_h)
            return self_close(f);
        break;
    default: break;
    }
    close_nothing(f, c);
}

void op_process_id(struct fuzzer *f, const struct call *c)
{
    static uint32_t pid;
    int k;
    HANDLE h = proc_handle(f, c, &k);
    uint64_t out = c->mutate == 2 ? bad_pointer(f, c->how) : (uint64_t)&pid;
    NTSTATUS want = c->mutate == 2 ? STATUS_ACCESS_VIOLATION : handle_class(f, h, HT_PROCESS);
    pid = 0;
    NTSTATUS s = SysProcessId(h, (uint32_t *)out);
    check(f, c->op, s, want, false);
    uint32_t expected = k >= 0 ? f->proc[k].pid : is_self(f, h) ? f->pid : pid;
    if (NT_SUCCESS(s) && out == (uint64_t)&pid && pid != expected)
        fuzz_fail(f, FAIL_HANDLE, "SysProcessId gave pid %u, the handle is of %u", pid, expected);
}

// Time in user mode, where profiles of this process take their samples.
void op_burn(struct fuzzer *f, const struct call *c)
{
    uint64_t end = clock_ns() + (c->v % 3000) * 1000;
    volatile uint64_t x = c->v;
    while (clock_ns() < end)
        for (int i = 0; i < 2000; i++)
            x = x * 6364136223846793005ull + 1;
    f->last = STATUS_SUCCESS;
}

void op_sleep(struct fuzzer *f, const struct call *c)
{
    check(f, c->op, SysSleep(c->v % 3), STATUS_SUCCESS, false);
}

// Child k reaped: killed (if it still runs), waited for, its handles closed.
// Without a handle (both closed) it is opened again by pid, if it is still there.
void proc_reap(struct fuzzer *f, unsigned k)
{
    struct proc *p = &f->proc[k];
    HANDLE h = p->h ? p->h : p->dup, temp = NULL;
    if (!p->waited && !h) {
        NTSTATUS s = SysOpenProcess(p->pid, &temp);
        check(f, OP_OPEN, s, NO_STATUS, false);
        if (NT_SUCCESS(s) && new_handle_ok(f, temp))
            h = p->dup = temp;
    }
    if (!p->waited && h) {
        if (!p->killed) {
            NTSTATUS s = SysKill(p->pid);
            check(f, OP_KILL, s, NO_STATUS, false);
            if (s != STATUS_SUCCESS && s != STATUS_PROCESS_IS_TERMINATING)
                fuzz_fail(f, FAIL_OTHER, "SysKill of our child %u: %s", p->pid, nt_status_name(s));
        }
        check(f, OP_WAIT, SysWait(h, &exit_status), STATUS_SUCCESS, false);
    }
    proc_close_handle(f, k, false);
    proc_close_handle(f, k, true);
    *p = (struct proc){0};
}
