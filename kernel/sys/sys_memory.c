// System calls for program memory: anonymous mappings.
#include "core/process.h"
#include "core/uaccess.h"

#include "sys/syscall.h"

#define MAX_MAP (1ull << 32) // one mapping at most 4 GiB

uint64_t do_SysMap(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct process *p = process_current();
    uint64_t addr, size = a[1];
    uint32_t prot = (uint32_t)a[2];
    NTSTATUS s = copy_from_user(&addr, a[0], sizeof addr);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (size == 0 || size > MAX_MAP ||
        (prot & ~(uint32_t)(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_DEMAND)))
        return STATUS(STATUS_INVALID_PARAMETER);
    size = ALIGN_UP(size, PAGE_SIZE);
    if (!addr && !(addr = as_find_free(&p->as, size)))
        return STATUS(STATUS_NO_MEMORY);
    s = as_map(&p->as, addr, size, prot);
    if (NT_SUCCESS(s)) {
        s = copy_to_user(a[0], &addr, sizeof addr);
        if (!NT_SUCCESS(s))
            as_unmap(&p->as, addr, size);
    }
    return STATUS(s);
}

uint64_t do_SysUnmap(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return STATUS(as_unmap(&process_current()->as, a[0], a[1]));
}
