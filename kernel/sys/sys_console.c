// System calls for the console: write to fd 1 and 2, read from fd 0, the
// foreground process group and the interrupt mode (Ctrl-C, lib/abi/syscalls.h).
#include "arch/x86/cpu.h"

#include "core/console.h"
#include "core/process.h"
#include "core/uaccess.h"

#include "sys/syscall.h"

#define CHUNK 256

uint64_t do_SysWrite(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (a[0] != 1 && a[0] != 2)
        return STATUS(STATUS_INVALID_HANDLE);
    if (!user_range_ok(a[1], a[2]))
        return STATUS(STATUS_ACCESS_VIOLATION);
    char buf[CHUNK];
    for (uint64_t done = 0; done < a[2];) {
        size_t n = MIN(a[2] - done, (uint64_t)CHUNK);
        NTSTATUS s = copy_from_user(buf, a[1] + done, n);
        if (!NT_SUCCESS(s))
            return STATUS(s);
        console_write(buf, n);
        done += n;
    }
    return STATUS(STATUS_SUCCESS);
}

uint64_t do_SysRead(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if ((a[0] & ~(uint64_t)SYS_READ_NOWAIT) != 0)
        return STATUS(STATUS_INVALID_HANDLE);
    bool nowait = (a[0] & SYS_READ_NOWAIT) != 0;
    size_t got = 0;
    NTSTATUS s = copy_to_user(a[3], &got, sizeof got); // probe before blocking
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (a[2] == 0)
        return STATUS(STATUS_SUCCESS);
    // Check the buffer before taking input: input taken from the console must not be lost.
    if (!user_range_ok(a[1], a[2]) ||
        !as_range_writable(&process_current()->as, a[1], MIN(a[2], (uint64_t)CHUNK)))
        return STATUS(STATUS_ACCESS_VIOLATION);
    char buf[CHUNK];
    struct process *p = process_current();
    for (;;) {
        if (!console_may_read(p))
            return STATUS(STATUS_ACCESS_DENIED); // a background read: the input is not its own
        got = console_read(buf, MIN(a[2], (uint64_t)CHUNK));
        if (got || p->killed || nowait)
            break;
        if (p->alerted)
            return STATUS(STATUS_ALERTED);
        uint64_t f = irq_save();
        sleep_alertable((const void *)&console_has_input, &console_has_input, 0, WAIT_CONSOLE);
        irq_restore(f);
    }
    s = copy_to_user(a[1], buf, got);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[3], &got, sizeof got);
    return STATUS(s);
}

uint64_t do_SysConsoleForeground(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (a[0] > UINT32_MAX)
        return STATUS(STATUS_INVALID_CID);
    return STATUS(console_set_foreground(process_current(), (uint32_t)a[0]));
}

uint64_t do_SysInterruptMode(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct process *p = process_current();
    if (a[0] != INTERRUPT_END && a[0] != INTERRUPT_NOTIFY)
        return STATUS(STATUS_INVALID_PARAMETER);
    uint32_t pending = 0;
    if (a[1]) {
        NTSTATUS s = copy_to_user(a[1], &pending, sizeof pending); // probe before taking it
        if (!NT_SUCCESS(s))
            return STATUS(s);
        pending = __atomic_exchange_n(&p->alerted, false, __ATOMIC_ACQ_REL);
    }
    p->interrupt_notify = a[0] == INTERRUPT_NOTIFY;
    return STATUS(a[1] ? copy_to_user(a[1], &pending, sizeof pending) : STATUS_SUCCESS);
}
