// User-memory access (see uaccess.h).
#include "core/uaccess.h"

#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"

#include "core/addrspace.h"
#include "core/process.h"

int uaccess_copy(void *dst, const void *src, size_t n);

#define CR4_SMEP (1u << 20)
#define CR4_SMAP (1u << 21)

void uaccess_init_cpu(void)
{
    if (cpuid(0, 0).eax < 7)
        return;
    uint32_t ebx = cpuid(7, 0).ebx;
    uint64_t cr4 = read_cr4();
    if (ebx & CPUID7_EBX_SMEP)
        cr4 |= CR4_SMEP; // the kernel never executes user pages
    if (ebx & CPUID7_EBX_SMAP) {
        cr4 |= CR4_SMAP; // nor touches them outside uaccess_copy
        smap_enabled = true;
    }
    write_cr4(cr4);
}

NTSTATUS copy_from_user(void *dst, uint64_t usrc, size_t n)
{
    if (!user_range_ok(usrc, n))
        return STATUS_ACCESS_VIOLATION;
    if (n && uaccess_copy(dst, (const void *)usrc, n))
        return STATUS_ACCESS_VIOLATION;
    return STATUS_SUCCESS;
}

// A failed copy must not leave part of the user's memory overwritten, so the
// whole destination is checked first (one thread per process: nothing can
// unmap it between the check and the copy). The fault fixup stays as the net.
NTSTATUS copy_to_user(uint64_t udst, const void *src, size_t n)
{
    if (!user_range_ok(udst, n))
        return STATUS_ACCESS_VIOLATION;
    if (n && !as_range_writable(&process_current()->as, udst, n))
        return STATUS_ACCESS_VIOLATION;
    if (n && uaccess_copy((void *)udst, src, n))
        return STATUS_ACCESS_VIOLATION;
    return STATUS_SUCCESS;
}

NTSTATUS user_buffer_check(uint64_t ubuf, size_t len)
{
    if (!user_range_ok(ubuf, len))
        return STATUS_ACCESS_VIOLATION;
    if (len && !as_range_writable(&process_current()->as, ubuf, len))
        return STATUS_ACCESS_VIOLATION;
    return STATUS_SUCCESS;
}

// Inside a buffer user_buffer_check passed (one thread per process: nothing
// unmapped it since); the range test is kept, and the fixup is the net.
NTSTATUS user_sink_copy(void *ubuf, uint64_t pos, const void *src, uint32_t n)
{
    uint64_t udst = (uint64_t)(uintptr_t)ubuf + pos;
    if (!user_range_ok(udst, n) || (n && uaccess_copy((void *)udst, src, n)))
        return STATUS_ACCESS_VIOLATION;
    return STATUS_SUCCESS;
}

NTSTATUS probe_user_output(uint64_t udst, size_t n)
{
    static const uint8_t zeros[64];
    NTSTATUS s = user_buffer_check(udst, n);
    for (size_t at = 0; NT_SUCCESS(s) && at < n; at += sizeof zeros) {
        size_t chunk = n - at < sizeof zeros ? n - at : sizeof zeros;
        if (uaccess_copy((void *)(udst + at), zeros, chunk))
            s = STATUS_ACCESS_VIOLATION;
    }
    return s;
}

NTSTATUS copy_string_from_user(char *dst, uint64_t usrc, size_t max)
{
    size_t got = 0;
    while (got < max) {
        // Up to the end of the page: the next page may be unmapped legitimately.
        size_t chunk = MIN(max - got, 4096 - ((usrc + got) & 4095));
        NTSTATUS s = copy_from_user(dst + got, usrc + got, chunk);
        if (!NT_SUCCESS(s))
            return s;
        for (size_t i = 0; i < chunk; i++)
            if (dst[got + i] == '\0')
                return STATUS_SUCCESS;
        got += chunk;
    }
    dst[max - 1] = '\0';
    return STATUS_INVALID_PARAMETER;
}
