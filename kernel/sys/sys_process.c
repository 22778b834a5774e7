// System calls about processes: spawn, resume, wait, kill, exit, handles.
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"

#include "core/heap.h"
#include "core/process.h"
#include "core/uaccess.h"

#include "sys/syscall.h"

static struct process *me(void)
{
    return process_current();
}

uint64_t do_SysExit(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    cli();
    process_exit_current((int)a[0]);
}

// Copy argv (a NULL-terminated array of user strings) into one kernel block.
static NTSTATUS copy_argv(uint64_t uargv, char **block, const char **argv, int *argc)
{
    if (!uargv)
        return STATUS_ACCESS_VIOLATION; // argv is required, argv[0] included
    char *buf = kmalloc(MAX_ARG_BYTES);
    if (!buf)
        return STATUS_NO_MEMORY;
    size_t used = 0;
    int n = 0;
    NTSTATUS s = STATUS_SUCCESS;
    for (; NT_SUCCESS(s); n++) {
        uint64_t ptr;
        s = copy_from_user(&ptr, uargv + (uint64_t)n * 8, 8);
        if (!NT_SUCCESS(s) || !ptr)
            break;
        if (n == MAX_ARGS || used >= MAX_ARG_BYTES) {
            s = STATUS_INVALID_PARAMETER;
            break;
        }
        s = copy_string_from_user(buf + used, ptr, MAX_ARG_BYTES - used);
        if (NT_SUCCESS(s)) {
            argv[n] = buf + used;
            used += strlen(buf + used) + 1;
        }
    }
    if (!NT_SUCCESS(s)) {
        kfree(buf);
        return s;
    }
    *block = buf;
    *argc = n;
    return STATUS_SUCCESS;
}

uint64_t do_SysSpawn(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    char path[64];
    const char *argv[MAX_ARGS + 1];
    char *block;
    int argc;
    uint32_t flags = (uint32_t)a[2];
    HANDLE h = 0;
    if (flags & ~(uint32_t)(SPAWN_SUSPENDED | SPAWN_PRIVILEGED | SPAWN_NEW_GROUP))
        return STATUS(STATUS_INVALID_PARAMETER);
    if ((flags & SPAWN_PRIVILEGED) && !me()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    NTSTATUS s = copy_string_from_user(path, a[0], sizeof path);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = probe_user_output(a[3], sizeof h);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = copy_argv(a[1], &block, argv, &argc);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    struct process *child;
    bool privileged =
        (flags & SPAWN_PRIVILEGED) || (me()->privileged && process_privilege_inherited);
    s = process_spawn(path, argv, argc, flags, me()->pid, privileged, &child);
    kfree(block);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = handle_insert(&me()->handles, &child->obj, &h);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[3], &h, sizeof h);
    if (!NT_SUCCESS(s)) { // nobody can name it: stop it, drop our reference
        process_kill(child->pid);
        if (h)
            handle_close(&me()->handles, h);
        else
            object_unref(&child->obj);
    }
    return STATUS(s);
}

uint64_t do_SysResume(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct process *p;
    NTSTATUS s = sys_process(a[0], &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    process_resume(p);
    object_unref(&p->obj);
    return STATUS(STATUS_SUCCESS);
}

uint64_t do_SysWait(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct process *p;
    int status = 0;
    // Probe the result pointer first so a bad one fails without waiting.
    NTSTATUS s = copy_to_user(a[1], &status, sizeof status);
    if (NT_SUCCESS(s))
        s = sys_process(a[0], &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (p == me()) {
        object_unref(&p->obj);
        return STATUS(STATUS_INVALID_PARAMETER); // would wait forever
    }
    status = process_wait(p);
    bool done = p->exited;
    object_unref(&p->obj);
    if (!done && me()->alerted && !me()->killed)
        return STATUS(STATUS_ALERTED); // a console interrupt, INTERRUPT_NOTIFY
    if (!done)
        return STATUS(STATUS_PROCESS_IS_TERMINATING); // we were killed while waiting
    return STATUS(copy_to_user(a[1], &status, sizeof status));
}

uint64_t do_SysProcessId(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t pid = 0;
    NTSTATUS s = copy_to_user(a[1], &pid, sizeof pid);
    struct process *p;
    if (NT_SUCCESS(s))
        s = sys_process(a[0], &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    pid = p->pid;
    object_unref(&p->obj);
    return STATUS(copy_to_user(a[1], &pid, sizeof pid));
}

uint64_t do_SysKill(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return STATUS(process_kill((uint32_t)a[0]));
}

uint64_t do_SysGetPid(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(a);
    UNUSED(tf);
    return me()->pid;
}

uint64_t do_SysOpenProcess(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    HANDLE h = 0;
    NTSTATUS s = probe_user_output(a[1], sizeof h);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    struct process *p = process_by_pid((uint32_t)a[0]);
    if (!p)
        return STATUS(STATUS_INVALID_CID);
    if (!process_may_control(me(), p)) {
        object_unref(&p->obj);
        return STATUS(STATUS_ACCESS_DENIED);
    }
    s = handle_insert(&me()->handles, &p->obj, &h);
    if (!NT_SUCCESS(s)) {
        object_unref(&p->obj);
        return STATUS(s);
    }
    s = copy_to_user(a[1], &h, sizeof h);
    if (!NT_SUCCESS(s))
        handle_close(&me()->handles, h);
    return STATUS(s);
}

uint64_t do_NtClose(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return STATUS(handle_close(&me()->handles, (HANDLE)a[0]));
}

// In small batches on the stack: listing processes allocates nothing, so it
// cannot disturb another program's leak check.
uint64_t do_SysProcessList(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t max = (uint32_t)a[1], n = 0;
    struct sys_process_info batch[8];
    NTSTATUS s = STATUS_SUCCESS;
    while (n < max && NT_SUCCESS(s)) {
        unsigned got = process_list(batch, n, MIN(max - n, (uint32_t)ARRAY_SIZE(batch)));
        if (!got)
            break;
        s = copy_to_user(a[0] + (uint64_t)n * sizeof batch[0], batch, got * sizeof batch[0]);
        n += got;
    }
    if (NT_SUCCESS(s))
        s = copy_to_user(a[2], &n, sizeof n);
    return STATUS(s);
}

uint64_t do_SysYield(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(a);
    UNUSED(tf);
    uint64_t f = irq_save();
    schedule();
    irq_restore(f);
    return STATUS(STATUS_SUCCESS);
}

uint64_t do_SysSleep(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint64_t deadline = clock_ns() + a[0] * 1000000ull;
    uint64_t f = irq_save();
    while (clock_ns() < deadline && !me()->killed && !me()->alerted)
        sleep_alertable(me(), NULL, deadline, WAIT_SLEEP);
    irq_restore(f);
    return STATUS(me()->alerted ? STATUS_ALERTED : STATUS_SUCCESS);
}
