// The NtPmc* system calls: user memory and handles in, the PMC layer
// object (pmc/hwpmc/pmc.c) and the caller's PMC log (pmc/hwpmc/log.c)
// behind. A PMC is called the same way whatever its kind.
#include "core/handle.h"
#include "core/process.h"
#include "core/swevent.h"
#include "core/uaccess.h"

#include "pmc/hwpmc/log.h"
#include "pmc/hwpmc/loggers.h"
#include "pmc/hwpmc/pmc.h"

#include "sys/syscall.h"

#define SYS_CPU_LIMIT 64

static struct process *me(void)
{
    return process_current();
}

// A PMC handle (one kind of object, whatever the PMC's mode): a new reference.
static NTSTATUS lookup_pmc(uint64_t h, struct pmc **out)
{
    struct object *o;
    NTSTATUS s = sys_object(h, OBJ_PMC, &o);
    if (NT_SUCCESS(s))
        *out = pmc_from_object(o);
    return s;
}

uint64_t do_NtPmcAllocate(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_alloc p;
    HANDLE h = 0;
    NTSTATUS s = probe_user_output(a[0], sizeof h);
    if (NT_SUCCESS(s))
        s = copy_from_user(&p, a[1], sizeof p);
    struct object *o;
    if (NT_SUCCESS(s))
        s = pmc_allocate(me(), &p, &o);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = handle_insert(&me()->handles, o, &h);
    if (!NT_SUCCESS(s)) {
        object_unref(o);
        return STATUS(s);
    }
    s = copy_to_user(a[0], &h, sizeof h);
    if (!NT_SUCCESS(s))
        handle_close(&me()->handles, h);
    return STATUS(s);
}

// The calls that take a PMC and a number or a process. Attach and detach
// need rights over the target: itself, its child, or the privilege (as for
// NtCreateProfile on another process).
enum op { OP_ATTACH, OP_DETACH, OP_SET_COUNT, OP_START, OP_STOP, OP_WRITE };

static NTSTATUS with_process(struct pmc *m, uint64_t h, bool attach)
{
    struct process *p;
    NTSTATUS s = sys_process(h, &p);
    if (NT_SUCCESS(s)) {
        s = attach ? pmc_attach(m, me(), p) : pmc_detach(m, me(), p);
        object_unref(&p->obj);
    }
    return s;
}

static uint64_t simple(const uint64_t *a, enum op op)
{
    struct pmc *m;
    NTSTATUS s = lookup_pmc(a[0], &m);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    switch (op) {
    case OP_ATTACH: s = with_process(m, a[1], true); break;
    case OP_DETACH: s = with_process(m, a[1], false); break;
    case OP_SET_COUNT: s = pmc_set_count(m, a[1]); break;
    case OP_START: s = pmc_start(m, me()); break;
    case OP_STOP: s = pmc_stop(m); break;
    case OP_WRITE: s = pmc_write(m, a[1]); break;
    }
    object_unref(&m->obj);
    return STATUS(s);
}

// Their entries in the system-call table, one line each.
#define PMC_CALL(name, op) \
    uint64_t do_##name(const uint64_t *a, struct trapframe *tf) \
    { \
        UNUSED(tf); \
        return simple(a, op); \
    }
PMC_CALL(NtPmcAttach, OP_ATTACH)
PMC_CALL(NtPmcDetach, OP_DETACH)
PMC_CALL(NtPmcSetCount, OP_SET_COUNT)
PMC_CALL(NtPmcStart, OP_START)
PMC_CALL(NtPmcStop, OP_STOP)
PMC_CALL(NtPmcWrite, OP_WRITE)

// NtPmcRead (the value) and NtPmcQuery (with time enabled and running).
static NTSTATUS query(uint64_t h, struct pmc_value *v)
{
    struct pmc *m;
    NTSTATUS s = lookup_pmc(h, &m);
    if (!NT_SUCCESS(s))
        return s;
    s = pmc_read(m, v);
    object_unref(&m->obj);
    return s;
}

uint64_t do_NtPmcRead(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_value v = {0};
    NTSTATUS s = copy_to_user(a[1], &v.value, sizeof v.value);
    if (NT_SUCCESS(s))
        s = query(a[0], &v);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[1], &v.value, sizeof v.value);
    return STATUS(s);
}

uint64_t do_NtPmcQuery(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_value v = {0};
    NTSTATUS s = copy_to_user(a[1], &v, sizeof v);
    if (NT_SUCCESS(s))
        s = query(a[0], &v);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[1], &v, sizeof v);
    return STATUS(s);
}

uint64_t do_NtPmcGetMsr(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc *m;
    uint32_t index = 0;
    NTSTATUS s = lookup_pmc(a[0], &m);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = pmc_rdpmc_index(m, me(), &index);
    object_unref(&m->obj);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[1], &index, sizeof index);
    return STATUS(s);
}

uint64_t do_NtPmcConfigureLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (!a[0])
        return STATUS(pmc_log_release(me()));
    struct pmc_log_config c;
    NTSTATUS s = copy_from_user(&c, a[0], sizeof c);
    if (NT_SUCCESS(s))
        s = pmc_log_configure(me(), &c);
    return STATUS(s);
}

uint64_t do_NtPmcFlushLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(a);
    UNUSED(tf);
    return STATUS(pmc_log_flush(me()));
}

uint64_t do_NtPmcReadLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    size_t got = 0;
    NTSTATUS s = copy_to_user(a[2], &got, sizeof got);
    if (NT_SUCCESS(s))
        s = user_buffer_check(a[0], a[1]); // the whole buffer once, not each record
    if (NT_SUCCESS(s))
        s = pmc_log_read(me(), a[0], a[1], &got);
    if (got)
        copy_to_user(a[2], &got, sizeof got); // probed above
    return STATUS(s);
}

uint64_t do_NtPmcWriteLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return STATUS(pmc_log_write_user(me(), a[0]));
}

// The calls hwpmc's driver statistics count (pm_syscalls, pm_syscall_errors).
static const unsigned pmc_calls[] = {
    SYS_NtPmcAllocate,       SYS_NtPmcAttach,     SYS_NtPmcDetach,
    SYS_NtPmcSetCount,       SYS_NtPmcStart,      SYS_NtPmcStop,
    SYS_NtPmcRead,           SYS_NtPmcWrite,      SYS_NtPmcConfigureLog,
    SYS_NtPmcFlushLog,       SYS_NtPmcReadLog,    SYS_NtPmcWriteLog,
    SYS_NtPmcGetDriverStats, SYS_NtPmcQuery,      SYS_NtPmcCswitchLog,
    SYS_NtPmcGetMsr,         SYS_NtPmcCpuCounts,  SYS_NtPmcAdmin,
    SYS_NtPmcGetCpuInfo,     SYS_NtPmcGetPmcInfo, SYS_NtPmcGetModuleVersion,
};

uint64_t do_NtPmcGetDriverStats(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_driver_stats st = {0};
    pmc_log_stats(me(), &st);
    for (unsigned i = 0; i < ARRAY_SIZE(pmc_calls); i++) {
        uint64_t calls, failed;
        syscall_counts(pmc_calls[i], &calls, &failed);
        st.syscalls += calls;
        st.syscall_errors += failed;
    }
    NTSTATUS s = copy_to_user(a[0], &st, sizeof st);
    return STATUS(s);
}

// Counter values at every context switch into the caller's log (privileged:
// every CPU's switches are seen).
uint64_t do_NtPmcCswitchLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t op = (uint32_t)a[0], ev[PMC_CSWITCH_MAX_EVENTS];
    uint64_t buf = a[1], len = a[2];
    if (op != PMC_CSWITCH_START && op != PMC_CSWITCH_STOP)
        return STATUS(STATUS_INVALID_PARAMETER);
    if (!me()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    if (op == PMC_CSWITCH_STOP)
        return STATUS(pmc_logger_cswitch_stop());
    if (len == 0 || len % sizeof(uint32_t) || len > sizeof ev)
        return STATUS(STATUS_INVALID_PARAMETER);
    NTSTATUS s = copy_from_user(ev, buf, len);
    if (NT_SUCCESS(s))
        s = pmc_logger_cswitch_start(me(), ev, (unsigned)(len / sizeof(uint32_t)));
    return STATUS(s);
}

// Every CPU's software-event totals, PMC_SW_COUNT values per CPU.
uint64_t do_NtPmcCpuCounts(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t max = (uint32_t)a[1], n = MIN(ncpus, MIN(max, (uint32_t)SYS_CPU_LIMIT));
    uint64_t v[PMC_SW_COUNT];
    NTSTATUS s = STATUS_SUCCESS;
    for (uint32_t c = 0; c < n && NT_SUCCESS(s); c++) {
        for (unsigned e = 0; e < PMC_SW_COUNT; e++)
            v[e] = swevent_cpu_value(c, (enum pmc_sw_event)e);
        s = copy_to_user(a[0] + (uint64_t)c * sizeof v, v, sizeof v);
    }
    uint32_t count = ncpus;
    if (NT_SUCCESS(s))
        s = copy_to_user(a[2], &count, sizeof count);
    return STATUS(s);
}
