// The NtPmc* system calls: user memory and handles in, the PMC layer
// (profile/pmc_alloc.c) and the sample log (profile/sample_log.c) behind.
#include "core/handle.h"
#include "core/process.h"
#include "profile/pmc_alloc.h"
#include "profile/sample_log.h"
#include "sys/syscall.h"
#include "core/uaccess.h"

static uint64_t syscalls, syscall_errors; // for NtPmcGetDriverStats

static uint64_t done(NTSTATUS s)
{
    __atomic_fetch_add(&syscalls, 1, __ATOMIC_RELAXED);
    if (!NT_SUCCESS(s))
        __atomic_fetch_add(&syscall_errors, 1, __ATOMIC_RELAXED);
    return (uint64_t)(uint32_t)s;
}

static struct process *me(void)
{
    return process_current();
}

static NTSTATUS lookup_pmc(uint64_t h, struct kpmc **out)
{
    struct object *o;
    NTSTATUS s = handle_lookup(&me()->handles, (HANDLE)h, OBJ_PMC, &o);
    if (NT_SUCCESS(s))
        *out = (struct kpmc *)o;
    return s;
}

// A process handle (NtCurrentProcess() included): a new reference.
static NTSTATUS lookup_process(uint64_t h, struct process **out)
{
    struct object *o;
    NTSTATUS s = handle_lookup(&me()->handles, (HANDLE)h, OBJ_PROCESS, &o);
    if (NT_SUCCESS(s))
        *out = (struct process *)o;
    return s;
}

uint64_t do_NtPmcAllocate(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_alloc p;
    HANDLE h = 0;
    NTSTATUS s = copy_to_user(a[0], &h, sizeof h);
    if (NT_SUCCESS(s))
        s = copy_from_user(&p, a[1], sizeof p);
    struct kpmc *m;
    if (NT_SUCCESS(s))
        s = pmc_allocate(me(), &p, &m);
    if (!NT_SUCCESS(s))
        return done(s);
    s = handle_insert(&me()->handles, &m->obj, &h);
    if (!NT_SUCCESS(s)) {
        object_unref(&m->obj);
        return done(s);
    }
    s = copy_to_user(a[0], &h, sizeof h);
    if (!NT_SUCCESS(s))
        handle_close(&me()->handles, h);
    return done(s);
}

static uint64_t attach_detach(const uint64_t *a, bool attach)
{
    struct kpmc *m;
    struct process *p;
    NTSTATUS s = lookup_pmc(a[0], &m);
    if (!NT_SUCCESS(s))
        return done(s);
    s = lookup_process(a[1], &p);
    if (NT_SUCCESS(s)) {
        s = attach ? pmc_attach(m, me(), p) : pmc_detach(m, p);
        object_unref(&p->obj);
    }
    object_unref(&m->obj);
    return done(s);
}

uint64_t do_NtPmcAttach(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return attach_detach(a, true);
}

uint64_t do_NtPmcDetach(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return attach_detach(a, false);
}

enum op { OP_SET_COUNT, OP_START, OP_STOP, OP_WRITE };

static uint64_t simple(const uint64_t *a, enum op op)
{
    struct kpmc *m;
    NTSTATUS s = lookup_pmc(a[0], &m);
    if (!NT_SUCCESS(s))
        return done(s);
    switch (op) {
    case OP_SET_COUNT: s = pmc_set_count(m, a[1]); break;
    case OP_START: s = pmc_start(m, me()); break;
    case OP_STOP: s = pmc_stop(m); break;
    case OP_WRITE: s = pmc_write(m, a[1]); break;
    }
    object_unref(&m->obj);
    return done(s);
}

uint64_t do_NtPmcSetCount(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return simple(a, OP_SET_COUNT);
}

uint64_t do_NtPmcStart(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return simple(a, OP_START);
}

uint64_t do_NtPmcStop(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return simple(a, OP_STOP);
}

uint64_t do_NtPmcWrite(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return simple(a, OP_WRITE);
}

uint64_t do_NtPmcRead(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint64_t v = 0;
    NTSTATUS s = copy_to_user(a[1], &v, sizeof v);
    struct kpmc *m;
    if (NT_SUCCESS(s))
        s = lookup_pmc(a[0], &m);
    if (!NT_SUCCESS(s))
        return done(s);
    s = pmc_read(m, &v);
    object_unref(&m->obj);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[1], &v, sizeof v);
    return done(s);
}

uint64_t do_NtPmcConfigureLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (!a[0])
        return done(sample_log_release(me()));
    struct pmc_log_config c;
    NTSTATUS s = copy_from_user(&c, a[0], sizeof c);
    if (NT_SUCCESS(s))
        s = sample_log_configure(me(), &c);
    return done(s);
}

uint64_t do_NtPmcFlushLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(a);
    UNUSED(tf);
    return done(sample_log_flush(me()));
}

uint64_t do_NtPmcReadLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    size_t got = 0;
    NTSTATUS s = copy_to_user(a[2], &got, sizeof got);
    if (NT_SUCCESS(s) && !user_range_ok(a[0], a[1]))
        s = STATUS_ACCESS_VIOLATION;
    if (NT_SUCCESS(s))
        s = sample_log_read(me(), a[0], a[1], &got);
    if (got)
        copy_to_user(a[2], &got, sizeof got); // probed above
    return done(s);
}

uint64_t do_NtPmcWriteLog(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    NTSTATUS s = sample_log_owner_status(me());
    if (!NT_SUCCESS(s))
        return done(s);
    struct pmclog_user r = {.h.type = PMCLOG_USER, .pid = me()->pid, .userdata = a[0]};
    sample_log_write(&r.h, sizeof r);
    return done(STATUS_SUCCESS);
}

uint64_t do_NtPmcGetDriverStats(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct pmc_driver_stats st = {0};
    sample_log_stats(&st);
    st.syscalls = READ_ONCE(syscalls) + 1; // this one
    st.syscall_errors = READ_ONCE(syscall_errors);
    NTSTATUS s = copy_to_user(a[0], &st, sizeof st);
    return done(s);
}
