// Profile objects: start, stop, and the profile sets the sample fan-out
// (ke/sample.c) counts buckets with.
#include "pmc/ke/profile.h"

#include "lib/memlayout.h"
#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/addrspace.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/pin.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/smp.h"
#include "core/sysmap.h"
#include "core/vm.h"

#include "pmc/hal/hal.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/trace.h"

#include "pmc/ke/profile_index.h"
#include "pmc/ke/profile_state.h"
#include "pmc/ke/sample.h"

// The started-profile limit. NT's is machine-wide, 8,192 x processors
// (STATUS_PROFILING_AT_LIMIT), and NT charges each profile object to its
// process's quota; here a started profile is charged to the process that
// started it, and so that no unprivileged process can hold the limit against
// a privileged user: an unprivileged process may have at most
// PROFILES_PER_PROCESS started (STATUS_QUOTA_EXCEEDED), and the unprivileged
// together at most three quarters of the limit (STATUS_PROFILING_AT_LIMIT):
// the last quarter is the privileged users' reserve.
#define PROFILES_PER_CPU_LIMIT 8192
#define PROFILES_PER_PROCESS   8192 // an unprivileged process's share
#define SCOPE_LOCKS            64   // process scopes share these by hash

// Start, stop and statistics of one scope are serialized by its mutex: the
// system's own, or the one its process hashes to, so unrelated processes'
// profiles rarely wait for each other and never for the system's.
static struct mutex system_mutex = MUTEX_INIT("system profiles");
static struct mutex process_mutexes[SCOPE_LOCKS];
static struct kprofile dead_profile; // stands in for a stopped profile when memory is short
struct profile_slot profile_system_slots[ProfileSourceCount];
static uint64_t started_count;              // every scope's started profiles (atomic)
static uint64_t started_unprivileged_count; // of those, charged to unprivileged processes

static struct mutex *scope_lock(const struct kprofile *p)
{
    if (!p->process)
        return &system_mutex;
    uint64_t h = (uint64_t)(uintptr_t)p->process * 0x9E3779B97F4A7C15ull;
    return &process_mutexes[h >> 58]; // the top 6 bits: SCOPE_LOCKS is 64
}

// --- sets ---------------------------------------------------------------------

static struct profile_set **set_of(const struct kprofile *p)
{
    if (!p->process)
        return &profile_system_slots[p->source].set;
    return &profile_of(p->process)->sets[p->source];
}

// System scope: each CPU, with interrupts off (so no sample is half done
// here), begins or ends counting for the profile and notes where its sample
// counter stood. The one round that runs it is also the barrier after which
// no CPU still reads a replaced set.
static void activate_on_cpu(void *arg)
{
    struct kprofile *p = arg;
    unsigned cpu = cpu_id();
    if (!(p->affinity & (1ull << cpu)))
        return;
    p->start_samples[cpu] = profile_system_slots[p->source].samples[cpu];
    __atomic_fetch_or(&p->active, 1ull << cpu, __ATOMIC_RELEASE);
    sample_plan_forget_here(p->source);
}

static void deactivate_on_cpu(void *arg)
{
    struct kprofile *p = arg;
    unsigned cpu = cpu_id();
    if (!(p->active & (1ull << cpu)))
        return;
    __atomic_fetch_and(&p->active, ~(1ull << cpu), __ATOMIC_RELEASE);
    uint64_t now = profile_system_slots[p->source].samples[cpu];
    __atomic_fetch_add(&p->delivered, now - p->start_samples[cpu], __ATOMIC_RELAXED);
    sample_plan_forget_here(p->source);
}

static void nothing_on_cpu(void *arg)
{
    UNUSED(arg); // the interrupt ran with no sample half done on its CPU
}

// The samples of a process-scope set that count for q: those of q's CPUs.
static uint64_t share_of(const struct profile_set *set, const struct kprofile *q)
{
    uint64_t n = 0;
    for (unsigned cpu = 0; cpu < ncpus; cpu++)
        if (q->affinity & (1ull << cpu))
            n += READ_ONCE(set->samples[cpu]);
    return n;
}

// A replaced process-scope set that no CPU reads any more: its samples
// become its profiles' delivered, and it is freed.
static void retire_set(struct profile_set *old)
{
    if (!old)
        return;
    uint64_t all = 0, every_cpu = ncpus == 64 ? ~0ull : (1ull << ncpus) - 1;
    for (unsigned cpu = 0; cpu < ncpus; cpu++)
        all += old->samples[cpu];
    for (unsigned i = 0; i < old->n + old->nwide; i++) {
        struct kprofile *q = old->e[i].p;
        if (q != &dead_profile)
            q->delivered += (q->affinity & every_cpu) == every_cpu ? all : share_of(old, q);
    }
    kfree(old);
}

// After p's scope's set was published in place of old: reach the CPUs that
// may still read old — all of them, each running on_cpu, for the system;
// for a process, only those running it now (none, when it is not running) —
// then free old. The CPUs not reached see the new set at their next sample.
static void set_replaced(struct kprofile *p, struct profile_set *old, void (*on_cpu)(void *))
{
    if (!p->process) {
        smp_call_all(on_cpu, p);
        kfree(old);
        return;
    }
    smp_call_many(sched_cpus_running(p->process), nothing_on_cpu, NULL);
    retire_set(old);
}

// --- the buffer -----------------------------------------------------------------

static void unpin_buffer(struct kprofile *p)
{
    if (p->kbuf)
        sysmap_unmap((void *)ALIGN_DOWN((uintptr_t)p->kbuf, PAGE_SIZE), p->npages);
    for (uint64_t i = 0; i < p->npages; i++)
        unpin_page(p->page_pa[i]);
    kfree(p->page_pa);
    p->page_pa = NULL;
    p->npages = 0;
    p->kbuf = NULL;
}

// Pin every page of the buffer in the caller's address space and map them in
// system space, as NT's KeStartProfile maps the locked buffer: the sample path
// then reaches any bucket with one add and never walks user page tables.
static NTSTATUS pin_buffer(struct kprofile *p)
{
    struct process *me = process_current();
    uint64_t first = ALIGN_DOWN(p->buffer, PAGE_SIZE);
    uint64_t n = (ALIGN_UP(p->buffer + p->buffer_size, PAGE_SIZE) - first) / PAGE_SIZE;
    p->page_pa = kmalloc(n * sizeof *p->page_pa);
    p->npages = 0;
    p->kbuf = NULL;
    if (!p->page_pa)
        return STATUS_INSUFFICIENT_RESOURCES;
    uint64_t f = spin_lock_irqsave(&me->as.lock);
    NTSTATUS s = STATUS_SUCCESS;
    for (uint64_t i = 0; i < n; i++) {
        pte_t *e = vm_walk(me->as.pml4, first + i * PAGE_SIZE, false);
        if (!e || (*e & (PTE_P | PTE_U | PTE_W)) != (PTE_P | PTE_U | PTE_W)) {
            s = STATUS_ACCESS_VIOLATION; // unmapped or read-only buffer
            break;
        }
        p->page_pa[i] = *e & PTE_ADDR;
        if (!pin_page(p->page_pa[i])) {
            s = STATUS_INSUFFICIENT_RESOURCES;
            break;
        }
        p->npages++;
    }
    spin_unlock_irqrestore(&me->as.lock, f);
    uint8_t *map = NT_SUCCESS(s) ? sysmap_map(p->page_pa, n) : NULL;
    if (NT_SUCCESS(s) && !map)
        s = STATUS_INSUFFICIENT_RESOURCES; // no room in system space
    if (!NT_SUCCESS(s)) {
        unpin_buffer(p);
        return s;
    }
    p->kbuf = map + (p->buffer - first);
    return STATUS_SUCCESS;
}

// --- start and stop ---------------------------------------------------------------

static void profile_destroy(struct object *o)
{
    struct kprofile *p = (struct kprofile *)o;
    if (p->started)
        KeStopProfile(p);
    if (p->process)
        object_unref(&p->process->obj);
    kfree(p);
}

NTSTATUS KeInitializeProfile(struct kprofile **out, struct process *process, uint64_t range_base,
                             uint64_t range_size, uint32_t bucket_shift, uint64_t buffer,
                             uint32_t buffer_size, KPROFILE_SOURCE source, uint64_t affinity)
{
    struct kprofile *p = kzalloc(sizeof *p);
    if (!p)
        return STATUS_INSUFFICIENT_RESOURCES;
    object_init(&p->obj, OBJ_PROFILE, profile_destroy);
    if (process)
        object_ref(&process->obj);
    p->process = process;
    p->range_base = range_base;
    p->range_size = range_size;
    p->bucket_shift = bucket_shift;
    p->buffer = buffer;
    p->buffer_size = buffer_size;
    p->source = source;
    p->affinity = affinity;
    *out = p;
    return STATUS_SUCCESS;
}

// One more on *count, unless it has reached limit.
static bool count_one(uint64_t *count, uint64_t limit)
{
    uint64_t n = __atomic_load_n(count, __ATOMIC_RELAXED);
    do {
        if (n >= limit)
            return false;
    } while (
        !__atomic_compare_exchange_n(count, &n, n + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return true;
}

// Charge one started profile to by (see PROFILES_PER_PROCESS): its share,
// the unprivileged processes' part of the limit, then the limit itself.
static NTSTATUS charge(struct process *by)
{
    uint64_t limit = (uint64_t)PROFILES_PER_CPU_LIMIT * ncpus_online;
    uint32_t *mine = &profile_of(by)->profiles_charged;
    bool shared = !by->privileged;
    if (shared && __atomic_add_fetch(mine, 1, __ATOMIC_RELAXED) > PROFILES_PER_PROCESS) {
        __atomic_fetch_sub(mine, 1, __ATOMIC_RELAXED);
        return STATUS_QUOTA_EXCEEDED;
    }
    if (shared && !count_one(&started_unprivileged_count, limit - limit / 4)) {
        __atomic_fetch_sub(mine, 1, __ATOMIC_RELAXED);
        return STATUS_PROFILING_AT_LIMIT;
    }
    if (!count_one(&started_count, limit)) {
        if (shared) {
            __atomic_fetch_sub(mine, 1, __ATOMIC_RELAXED);
            __atomic_fetch_sub(&started_unprivileged_count, 1, __ATOMIC_RELAXED);
        }
        return STATUS_PROFILING_AT_LIMIT;
    }
    return STATUS_SUCCESS;
}

static void uncharge(struct process *by)
{
    if (by && !by->privileged) {
        __atomic_fetch_sub(&profile_of(by)->profiles_charged, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&started_unprivileged_count, 1, __ATOMIC_RELAXED);
    }
    __atomic_fetch_sub(&started_count, 1, __ATOMIC_RELAXED);
}

NTSTATUS KeStartProfile(struct kprofile *p)
{
    struct mutex *lock = scope_lock(p);
    mutex_lock(lock);
    NTSTATUS s = STATUS_SUCCESS;
    struct profile_set *set = NULL, *old = *set_of(p);
    struct process *by = process_current(); // NULL: the kernel's own (self-tests)
    if (p->started)
        s = STATUS_PROFILING_NOT_STOPPED;
    else if (by)
        s = charge(by);
    else if (!count_one(&started_count, (uint64_t)PROFILES_PER_CPU_LIMIT * ncpus_online))
        s = STATUS_PROFILING_AT_LIMIT;
    bool counted = NT_SUCCESS(s), pinned = false, ok = false;
    if (counted)
        pinned = NT_SUCCESS(s = pin_buffer(p));
    if (pinned) {
        set = profile_set_change(old, p, NULL, &dead_profile, &ok);
        s = ok ? KeReferenceProfileSource(p->source) : STATUS_INSUFFICIENT_RESOURCES;
    }
    if (NT_SUCCESS(s)) {
        if (p->process)
            WRITE_ONCE(p->active, p->affinity);
        sample_publish(set_of(p), set);
        p->start_throttled = pmc_pmi_throttled(p->source);
        set_replaced(p, old, activate_on_cpu);
        p->started = true;
        p->charged = by;
        if (by)
            object_ref(&by->obj);
    } else {
        kfree(set);
        if (pinned)
            unpin_buffer(p);
        if (counted)
            uncharge(by);
    }
    mutex_unlock(lock);
    return s;
}

// Stopping cannot fail for want of memory: without memory for a smaller set,
// the entry is pointed at dead_profile (never active) in place, and dropped at
// the next change. The profile is stopped whatever the HAL answers; its status
// is returned.
NTSTATUS KeStopProfile(struct kprofile *p)
{
    struct mutex *lock = scope_lock(p);
    mutex_lock(lock);
    if (!p->started) {
        mutex_unlock(lock);
        return STATUS_PROFILING_NOT_STARTED;
    }
    bool ok;
    struct profile_set *old = *set_of(p);
    struct profile_set *set = profile_set_change(old, NULL, p, &dead_profile, &ok);
    if (ok) {
        sample_publish(set_of(p), set); // no plan names p now
    } else {
        for (unsigned i = 0; i < old->n + old->nwide; i++)
            if (old->e[i].p == p)
                sample_publish(&old->e[i].p, &dead_profile);
    }
    set_replaced(p, ok ? old : NULL, deactivate_on_cpu); // no CPU counts into the buffer now
    if (!ok && p->process)
        p->delivered += share_of(old, p); // old stays in use, without p
    WRITE_ONCE(p->active, 0);
    p->throttled += pmc_pmi_throttled(p->source) - p->start_throttled;
    unpin_buffer(p);
    p->started = false;
    uncharge(p->charged);
    if (p->charged)
        object_unref(&p->charged->obj);
    p->charged = NULL;
    NTSTATUS s = KeDereferenceProfileSource(p->source); // the source's last user stops it
    mutex_unlock(lock);
    return s;
}

void KeQueryProfileStats(struct kprofile *p, struct sys_profile_stats *out)
{
    struct mutex *lock = scope_lock(p);
    mutex_lock(lock); // a consistent view against start and stop
    uint64_t delivered = p->delivered, throttled = p->throttled;
    if (p->started && p->process) {
        delivered += share_of(*set_of(p), p);
    } else if (p->started) {
        for (unsigned cpu = 0; cpu < ncpus; cpu++)
            if (READ_ONCE(p->active) & (1ull << cpu))
                delivered +=
                    READ_ONCE(profile_system_slots[p->source].samples[cpu]) - p->start_samples[cpu];
    }
    if (p->started)
        throttled += pmc_pmi_throttled(p->source) - p->start_throttled;
    // Read in_range last: a sample counted there was already counted in delivered.
    uint64_t in_range = __atomic_load_n(&p->in_range, __ATOMIC_ACQUIRE);
    mutex_unlock(lock);
    out->delivered = delivered;
    out->in_range = MIN(in_range, delivered);
    out->out_of_range = delivered - out->in_range;
    out->throttled = throttled;
}

uint64_t KeQueryIntervalProfile(KPROFILE_SOURCE source)
{
    struct hal_profile_source_details d;
    if (!NT_SUCCESS(HalQueryProfileSource(source, &d)) || !d.supported)
        return 0;
    return d.interval;
}

NTSTATUS KeSetIntervalProfile(uint64_t interval, KPROFILE_SOURCE source)
{
    if (source == ProfileTime) {
        HalSetProfileInterval(interval);
        return STATUS_SUCCESS;
    }
    HAL_PROFILE_SOURCE_INTERVAL i = {source, interval};
    return HalSetSystemInformation(HalProfileSourceInterval, sizeof i, &i);
}

bool ke_profile_scope_started(struct process *pr, KPROFILE_SOURCE source)
{
    if ((unsigned)source >= ProfileSourceCount)
        return false;
    return READ_ONCE(profile_system_slots[source].set) ||
           (pr && READ_ONCE(profile_of(pr)->sets[source]));
}

void ke_profile_init(void)
{
    process_area_reserve(ALIGN_UP(sizeof(struct profile_process), 8));
    for (unsigned i = 0; i < SCOPE_LOCKS; i++)
        process_mutexes[i] = (struct mutex)MUTEX_INIT("process profiles");
}

// --- sources shared with PMC objects (pmc/hwpmc/pmc.c) ----------------------

// Profile objects and PMCs are users of the same count, the HAL's, so a
// source starts with the first user of either kind and stops with the last.
NTSTATUS KeReferenceProfileSource(KPROFILE_SOURCE source)
{
    return HalStartProfileInterrupt(source, NULL);
}

NTSTATUS KeReferenceProfileSourceLevels(KPROFILE_SOURCE source, unsigned levels)
{
    return HalStartProfileInterruptEx(source, levels, NULL);
}

NTSTATUS KeDereferenceProfileSource(KPROFILE_SOURCE source)
{
    return HalStopProfileInterrupt(source, NULL);
}
