// The counting-PMC system calls (numbers 70-79): argument checks and handles;
// the PMCs themselves are in profile/vcounter.c.
#include "heap.h"
#include "process.h"
#include "profile/swevent.h"
#include "profile/vcounter.h"
#include "syscall.h"
#include "uaccess.h"

#define STATUS(s)     ((uint64_t)(uint32_t)(s))
#define LOG_READ_MAX  (64 * 1024) // bytes one SysPmcLog read copies at most
#define SYS_CPU_LIMIT 64

static NTSTATUS lookup(uint64_t h, struct pmc **out)
{
    struct object *o;
    NTSTATUS s = handle_lookup(&process_current()->handles, (HANDLE)h, OBJ_COUNTING_PMC, &o);
    if (NT_SUCCESS(s))
        *out = vcounter_from_object(o);
    return s;
}

static void put(struct pmc *p)
{
    object_unref(vcounter_object(p));
}

uint64_t do_SysPmcAllocate(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_alloc in;
    NTSTATUS s = copy_from_user(&in, a[0], sizeof in);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    HANDLE h = 0;
    s = copy_to_user(a[1], &h, sizeof h); // a bad output pointer fails before anything exists
    if (!NT_SUCCESS(s))
        return STATUS(s);
    struct process *me = process_current();
    struct pmc *p;
    s = vcounter_allocate(&in, me, &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = handle_insert(&me->handles, vcounter_object(p), &h);
    if (!NT_SUCCESS(s)) {
        put(p);
        return STATUS(s);
    }
    s = copy_to_user(a[1], &h, sizeof h);
    if (!NT_SUCCESS(s))
        handle_close(&me->handles, h);
    return STATUS(s);
}

// Attach and detach need rights over the target: its parent, itself, or the
// privilege (as for NtCreateProfile on another process).
static uint64_t attach_detach(const uint64_t *a, bool attach)
{
    struct process *me = process_current();
    struct pmc *p;
    NTSTATUS s = lookup(a[0], &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    struct object *o;
    s = handle_lookup(&me->handles, (HANDLE)a[1], OBJ_PROCESS, &o);
    if (NT_SUCCESS(s)) {
        struct process *target = (struct process *)o;
        if (!me->privileged && target != me && target->parent != me->pid)
            s = STATUS_ACCESS_DENIED;
        else
            s = attach ? vcounter_attach(p, target) : vcounter_detach(p, target);
        object_unref(o);
    }
    put(p);
    return STATUS(s);
}

uint64_t do_SysPmcAttach(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return attach_detach(a, true);
}

uint64_t do_SysPmcDetach(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return attach_detach(a, false);
}

uint64_t do_SysPmcStart(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc *p;
    NTSTATUS s = lookup(a[0], &p);
    if (NT_SUCCESS(s)) {
        s = vcounter_start(p);
        put(p);
    }
    return STATUS(s);
}

uint64_t do_SysPmcStop(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc *p;
    NTSTATUS s = lookup(a[0], &p);
    if (NT_SUCCESS(s)) {
        s = vcounter_stop(p);
        put(p);
    }
    return STATUS(s);
}

uint64_t do_SysPmcRead(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc *p;
    struct pmc_value v;
    NTSTATUS s = lookup(a[0], &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = vcounter_read(p, &v);
    put(p);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[1], &v, sizeof v);
    return STATUS(s);
}

uint64_t do_SysPmcWrite(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc *p;
    NTSTATUS s = lookup(a[0], &p);
    if (NT_SUCCESS(s)) {
        s = vcounter_write(p, a[1]);
        put(p);
    }
    return STATUS(s);
}

uint64_t do_SysPmcGetMsr(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc *p;
    uint32_t index = 0;
    NTSTATUS s = lookup(a[0], &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = vcounter_rdpmc_index(p, process_current(), &index);
    put(p);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[1], &index, sizeof index);
    return STATUS(s);
}

uint64_t do_SysPmcLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t op = (uint32_t)a[0];
    uint64_t buf = a[1], len = a[2], got_ptr = a[3];
    switch (op) {
    case PMC_LOG_CSWITCH_START: {
        uint32_t ev[PMC_CSWITCH_MAX_EVENTS];
        if (!process_current()->privileged)
            return STATUS(STATUS_PRIVILEGE_NOT_HELD);
        if (len == 0 || len % sizeof(uint32_t) || len > sizeof ev)
            return STATUS(STATUS_INVALID_PARAMETER);
        NTSTATUS s = copy_from_user(ev, buf, len);
        if (!NT_SUCCESS(s))
            return STATUS(s);
        return STATUS(vcounter_cswitch_start(ev, (unsigned)(len / sizeof(uint32_t))));
    }
    case PMC_LOG_CSWITCH_STOP:
        if (!process_current()->privileged)
            return STATUS(STATUS_PRIVILEGE_NOT_HELD);
        return STATUS(vcounter_cswitch_stop());
    case PMC_LOG_READ: {
        uint64_t first;
        NTSTATUS s = copy_from_user(&first, got_ptr, sizeof first);
        if (!NT_SUCCESS(s))
            return STATUS(s);
        size_t n = MIN(len, (uint64_t)LOG_READ_MAX), done = 0;
        void *k = n ? kmalloc(n) : NULL;
        if (n && !k)
            return STATUS(STATUS_NO_MEMORY);
        s = vcounter_log_read(first, k, n, &done);
        if (NT_SUCCESS(s) && done)
            s = copy_to_user(buf, k, done);
        kfree(k);
        uint64_t out = done;
        if (NT_SUCCESS(s))
            s = copy_to_user(got_ptr, &out, sizeof out);
        return STATUS(s);
    }
    default: return STATUS(STATUS_INVALID_PARAMETER);
    }
}

// Every CPU's software-event totals, PMC_SW_COUNT values per CPU.
uint64_t do_SysPmcCpuCounts(const uint64_t *a, struct trapframe *tf)
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
