// hwpmc's administration and information operations as system calls
// (FreeBSD sys/sys/pmc.h: PMC_OP_PMCADMIN, PMC_OP_GETCPUINFO,
// PMC_OP_GETPMCINFO, PMC_OP_GETMODULEVERSION; pmccontrol(8) is their user):
// user memory in and out, the privilege; the rows are pmc/hal/rows.h's and
// pmc/hwpmc/admin.c decides.
#include "core/heap.h"
#include "core/process.h"
#include "core/uaccess.h"

#include "pmc/hal/rows.h"

#include "pmc/hwpmc/admin.h"

#include "sys/syscall.h"

// (cpu, row, state): only with the system-profile privilege, as hwpmc needs
// PRIV_PMC_MANAGE; the row changes for every process.
uint64_t do_NtPmcAdmin(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (!process_current()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    return STATUS(pmc_admin((uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2]));
}

uint64_t do_NtPmcGetCpuInfo(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_cpuinfo ci;
    pmc_cpuinfo(&ci);
    return STATUS(copy_to_user(a[0], &ci, sizeof ci));
}

// (cpu, buf, len, needed): *needed gets the bytes the rows take whenever
// the CPU is valid; a shorter len is STATUS_BUFFER_TOO_SMALL (NT's status for
// a buffer that cannot hold the answer), and buf is left alone.
uint64_t do_NtPmcGetPmcInfo(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t need = pmc_row_count() * (uint32_t)sizeof(struct pmc_rowinfo);
    struct pmc_rowinfo *out = kmalloc(need);
    if (!out)
        return STATUS(STATUS_INSUFFICIENT_RESOURCES);
    NTSTATUS s = pmc_rows_info((uint32_t)a[0], out);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[3], &need, sizeof need);
    if (NT_SUCCESS(s) && (uint32_t)a[2] < need)
        s = STATUS_BUFFER_TOO_SMALL;
    if (NT_SUCCESS(s))
        s = copy_to_user(a[1], out, need);
    kfree(out);
    return STATUS(s);
}

uint64_t do_NtPmcGetModuleVersion(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t v = PMC_MODULE_VERSION;
    return STATUS(copy_to_user(a[0], &v, sizeof v));
}
