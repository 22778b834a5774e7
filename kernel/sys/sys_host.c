// SysHostWrite: bytes from a user buffer to the host's recording file
// (kernel/dev/virtio_console.c). The privileged user's only: the file is one
// stream, into which another writer's buffers would go between a recording's
// records (forged samples) and whose lock a long write holds.
#include "sys/syscall.h"

#include "core/addrspace.h"
#include "core/process.h"
#include "core/uaccess.h"
#include "dev/virtio_console.h"

// (const void *buf, size_t len, size_t *written)
uint64_t do_SysHostWrite(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    size_t done = 0;
    NTSTATUS s = copy_to_user(a[2], &done, sizeof done);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (!process_current()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    if (!user_range_ok(a[0], a[1]))
        return STATUS(STATUS_ACCESS_VIOLATION);
    s = virtio_console_write(a[0], a[1], &done);
    NTSTATUS c = copy_to_user(a[2], &done, sizeof done);
    return STATUS(NT_SUCCESS(s) ? c : s);
}
