// The NT profile system calls: validation in NT's order and with its status
// codes (in the order ntoskrnl checks them; docs/profile.md has the table), then the Ke layer.
//
// Departures from Windows, all stricter: the buffer rule is the corrected one
// (BufferSize / 4 >= ceil(RangeSize / 2^BucketSize)); any range reaching kernel
// space needs the system-profile privilege, like system scope; profiling
// another process needs rights over it (its parent, or the privilege).
//
// The process may be NtCurrentProcess(), (HANDLE)-1, as on NT (handle_lookup
// knows the pseudo-handles); a handle to anything but a process is
// STATUS_OBJECT_TYPE_MISMATCH.
#include "arch/x86/percpu.h"

#include "core/addrspace.h"
#include "core/process.h"
#include "core/uaccess.h"

#include "pmc/hal/hal.h"

#include "pmc/ke/profile.h"

#include "sys/syscall.h"

#define SEGMENTED_LIMIT 0x10000 // BucketSize 0 below this meant a segmented profile (x86)

struct group_affinity { // GROUP_AFFINITY
    uint64_t mask;
    uint16_t group;
    uint16_t reserved[3];
};
_Static_assert(sizeof(struct group_affinity) == 16, "GROUP_AFFINITY");

static uint64_t active_cpus(void)
{
    uint64_t m = 0;
    for (unsigned i = 0; i < ncpus; i++)
        if (cpus[i].online)
            m |= 1ull << i;
    return m;
}

// NtCreateProfile's first eight arguments, named (NtCreateProfileEx has the
// same eight, then GroupCount and GroupAffinity).
struct create_args {
    uint64_t profile_handle; // PHANDLE ProfileHandle
    HANDLE process;          // optional: NULL for system scope
    uint64_t range_base, range_size;
    uint32_t bucket_size; // log2 of the bucket's bytes
    uint64_t buffer;
    uint32_t buffer_size;
    KPROFILE_SOURCE source;
};

static struct create_args create_args(const uint64_t *a)
{
    return (struct create_args){
        a[0],           (HANDLE)a[1], a[2],           a[3],
        (uint32_t)a[4], a[5],         (uint32_t)a[6], (KPROFILE_SOURCE)(uint32_t)a[7]};
}

// Steps 1-9 of the validation, shared by NtCreateProfile and NtCreateProfileEx.
// On success *target holds a process reference (or NULL for system scope).
static NTSTATUS validate(const struct create_args *c, struct process **target)
{
    uint64_t base = c->range_base, size = c->range_size, buffer = c->buffer;
    uint32_t bucket = c->bucket_size, buffer_size = c->buffer_size;
    struct process *me = process_current();
    *target = NULL;

    if (buffer_size == 0)
        return STATUS_INVALID_PARAMETER_7;
    if (bucket == 0 && base < SEGMENTED_LIMIT)
        return STATUS_INVALID_PARAMETER; // a segmented profile: 32-bit x86 only
    if (bucket < 2 || bucket > 31)
        return STATUS_INVALID_PARAMETER;
    if (buffer_size / 4 < profile_buckets(size, bucket))
        return STATUS_BUFFER_TOO_SMALL;
    if (base + size < base || (size && base + size == 0))
        return STATUS_BUFFER_OVERFLOW;
    HANDLE none = 0;
    NTSTATUS s = copy_to_user(c->profile_handle, &none, sizeof none);
    if (!NT_SUCCESS(s))
        return s;
    if (buffer & 3)
        return STATUS_DATATYPE_MISALIGNMENT;
    if (!as_range_writable(&me->as, buffer, buffer_size))
        return STATUS_ACCESS_VIOLATION;
    if (c->process) {
        s = sys_process((uint64_t)c->process, target);
        if (!NT_SUCCESS(s))
            return s;
        if (!process_may_control(me, *target)) {
            s = STATUS_ACCESS_DENIED;
            goto fail;
        }
    }
    if ((!*target || base + size > USER_TOP) && !me->privileged) {
        s = STATUS_PRIVILEGE_NOT_HELD; // system scope, or kernel addresses
        goto fail;
    }
    struct hal_profile_source_details d;
    if (!NT_SUCCESS(HalQueryProfileSource(c->source, &d)) || !d.supported) {
        s = STATUS_NOT_SUPPORTED;
        goto fail;
    }
    return STATUS_SUCCESS;
fail:
    if (*target)
        object_unref(&(*target)->obj);
    *target = NULL;
    return s;
}

// Create the object and hand out its handle. Consumes the target reference.
static NTSTATUS create(const struct create_args *c, struct process *target, uint64_t affinity)
{
    struct process *me = process_current();
    struct kprofile *p;
    NTSTATUS s = KeInitializeProfile(&p, target, c->range_base, c->range_size, c->bucket_size,
                                     c->buffer, c->buffer_size, c->source, affinity);
    if (target)
        object_unref(&target->obj); // the profile holds its own reference
    if (!NT_SUCCESS(s))
        return s;
    HANDLE h;
    s = handle_insert(&me->handles, &p->obj, &h);
    if (!NT_SUCCESS(s)) {
        object_unref(&p->obj);
        return s;
    }
    s = copy_to_user(c->profile_handle, &h, sizeof h);
    if (!NT_SUCCESS(s))
        handle_close(&me->handles, h);
    return s;
}

uint64_t do_NtCreateProfileEx(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct create_args c = create_args(a);
    uint16_t group_count = (uint16_t)a[8];
    uint64_t group_affinity = a[9];
    struct process *target;
    NTSTATUS s = validate(&c, &target);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    uint64_t affinity = active_cpus();
    if (group_count > 1) { // one processor group here
        s = STATUS_INVALID_PARAMETER;
    } else if (group_count == 1) {
        struct group_affinity g;
        s = copy_from_user(&g, group_affinity, sizeof g);
        if (NT_SUCCESS(s) && (g.group != 0 || g.mask == 0 || (g.mask & ~affinity) ||
                              g.reserved[0] || g.reserved[1] || g.reserved[2]))
            s = STATUS_INVALID_PARAMETER;
        affinity = g.mask;
    }
    if (!NT_SUCCESS(s)) {
        if (target)
            object_unref(&target->obj);
        return STATUS(s);
    }
    return STATUS(create(&c, target, affinity));
}

uint64_t do_NtCreateProfile(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct create_args c = create_args(a);
    uint64_t affinity = a[8], active = active_cpus(); // KAFFINITY Affinity
    struct process *target;
    NTSTATUS s = validate(&c, &target);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (affinity == ~0ull)
        affinity = active; // KAFFINITY -1: every active processor
    if (affinity == 0 || (affinity & ~active)) {
        if (target)
            object_unref(&target->obj);
        return STATUS(STATUS_INVALID_PARAMETER);
    }
    return STATUS(create(&c, target, affinity));
}

static NTSTATUS lookup(uint64_t h, struct kprofile **out)
{
    struct object *o;
    NTSTATUS s = sys_object(h, OBJ_PROFILE, &o);
    if (NT_SUCCESS(s))
        *out = (struct kprofile *)o;
    return s;
}

static uint64_t start_stop(uint64_t h, bool start)
{
    struct kprofile *p;
    NTSTATUS s = lookup(h, &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    s = start ? KeStartProfile(p) : KeStopProfile(p);
    object_unref(&p->obj);
    return STATUS(s);
}

uint64_t do_NtStartProfile(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return start_stop(a[0], true);
}

uint64_t do_NtStopProfile(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    return start_stop(a[0], false);
}

uint64_t do_NtQueryIntervalProfile(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t interval;
    NTSTATUS s = probe_user_output(a[1], sizeof interval);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    uint64_t v = KeQueryIntervalProfile((KPROFILE_SOURCE)(uint32_t)a[0]); // 0: unsupported
    interval = v > 0xFFFFFFFFull ? 0xFFFFFFFFu : (uint32_t)v;
    return STATUS(copy_to_user(a[1], &interval, sizeof interval));
}

uint64_t do_NtSetIntervalProfile(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (!process_current()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    return STATUS(KeSetIntervalProfile((uint32_t)a[0], (KPROFILE_SOURCE)(uint32_t)a[1]));
}

uint64_t do_SysProfileStats(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct sys_profile_stats st = {0};
    NTSTATUS s = copy_to_user(a[1], &st, sizeof st);
    struct kprofile *p;
    if (NT_SUCCESS(s))
        s = lookup(a[0], &p);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    KeQueryProfileStats(p, &st);
    object_unref(&p->obj);
    return STATUS(copy_to_user(a[1], &st, sizeof st));
}
