// Profile objects: start, stop, and the profile sets the sample fan-out
// (ke/sample.c) counts buckets with.
#include "pmc/ke/profile.h"

#include "lib/memlayout.h"
#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/addrspace.h"
#include "core/grace.h"
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
#include "pmc/ke/plan_epoch.h"

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
#define PIN_BATCH              16   // buffer pages pinned per section with interrupts off

// Start, stop and statistics of one scope are serialized by its mutex: the
// system's own, or the one its process hashes to, so unrelated processes'
// profiles rarely wait for each other and never for the system's.
static struct mutex system_mutex = MUTEX_INIT("system profiles");
static struct mutex process_mutexes[SCOPE_LOCKS];
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
    sample_plans_forget_here();
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
    sample_plans_forget_here();
}

// After p's scope's set was published: a grace period over the CPUs that
// may still read the old one — all of them, each running on_cpu, for the
// system; for a process, only those running it now (none, when it is not
// running). The CPUs not reached see the new set at their next sample.
static void set_wait(struct kprofile *p, void (*on_cpu)(void *))
{
    if (!p->process)
        smp_call_all(on_cpu, p); // each call's answer is its CPU's quiescent state
    else
        grace_wait_cpus(sched_cpus_running(p->process));
}

// Counting a process-scope profile's delivered samples exactly, with no
// step per profile when a set is replaced. Each set counts the samples that
// found it, per CPU; a set is retired only after no CPU can still read it
// (set_wait), and then its counts are final and join the next set's
// retired[] (profile_change_retire): set->retired[cpu] + set->samples[cpu]
// is the scope's samples on cpu, every set so far. A sample that finds a set
// holding p, on a CPU of p's affinity, is p's: its bucket if its address is
// in range (p->active is the affinity from before p's first set is published
// until after its last is retired), out of range otherwise. The sets holding
// p are a run: the one its start published to the one its stop replaced. So
// p notes retired[] of its first set once that set's predecessor is retired
// (scope_counting_begins) and, once its last set is retired, adds what the
// counts gained since (samples_since_start); in between, a query reads the
// current set the same way. No sample is in two sets' counts, none is lost.
static void scope_counting_begins(struct kprofile *p, const struct profile_set *set)
{
    for (unsigned cpu = 0; cpu < ncpus; cpu++)
        p->start_samples[cpu] = set->retired[cpu];
}

static uint64_t samples_since_start(const struct kprofile *p, const struct profile_set *set)
{
    uint64_t n = 0;
    for (unsigned cpu = 0; cpu < ncpus; cpu++)
        if (p->affinity & (1ull << cpu))
            n += set->retired[cpu] + READ_ONCE(set->samples[cpu]) - p->start_samples[cpu];
    return n;
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

// Pin pages [p->npages, n) of the buffer at first, in me's address space:
// at most PIN_BATCH under its lock, which is dropped between batches so that
// interrupts are never off long (core/addrspace.h), however big the buffer.
// Each page's entry is read and its frame pinned under the lock, so an unmap
// between batches finds the pinned frames pinned (orphans, core/pin.h) and
// cannot free them under the profile; a page it unmapped before its batch is
// an access violation, as when the whole buffer was checked at once.
static NTSTATUS pin_pages(struct process *me, struct kprofile *p, uint64_t first, uint64_t n)
{
    NTSTATUS s = STATUS_SUCCESS;
    while (NT_SUCCESS(s) && p->npages < n) {
        uint64_t f = spin_lock_irqsave(&me->as.lock);
        for (unsigned b = 0; b < PIN_BATCH && p->npages < n; b++) {
            pte_t *e = vm_walk(me->as.pml4, first + p->npages * PAGE_SIZE, false);
            if (!e || (*e & (PTE_P | PTE_U | PTE_W)) != (PTE_P | PTE_U | PTE_W)) {
                s = STATUS_ACCESS_VIOLATION; // unmapped or read-only buffer
                break;
            }
            p->page_pa[p->npages] = *e & PTE_ADDR;
            if (!pin_page(p->page_pa[p->npages])) {
                s = STATUS_INSUFFICIENT_RESOURCES;
                break;
            }
            p->npages++;
        }
        spin_unlock_irqrestore(&me->as.lock, f);
    }
    return s;
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
    NTSTATUS s = pin_pages(me, p, first, n);
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
    struct profile_change ch;
    struct process *by = process_current(); // NULL: the kernel's own (self-tests)
    if (p->started)
        s = STATUS_PROFILING_NOT_STOPPED;
    else if (by)
        s = charge(by);
    else if (!count_one(&started_count, (uint64_t)PROFILES_PER_CPU_LIMIT * ncpus_online))
        s = STATUS_PROFILING_AT_LIMIT;
    bool counted = NT_SUCCESS(s), pinned = false, referenced = false;
    if (counted)
        pinned = NT_SUCCESS(s = pin_buffer(p));
    if (pinned) // the source first: the set, once made, is published
        referenced = NT_SUCCESS(s = KeReferenceProfileSource(p->source));
    if (referenced)
        s = profile_set_add(*set_of(p), p, &ch);
    if (NT_SUCCESS(s)) {
        if (p->process)
            WRITE_ONCE(p->active, p->affinity);
        sample_publish(set_of(p), ch.set);
        p->start_throttled = pmc_pmi_throttled(p->source);
        set_wait(p, activate_on_cpu);
        profile_change_retire(&ch);
        if (p->process)
            scope_counting_begins(p, ch.set);
        p->started = true;
        p->charged = by;
        if (by)
            object_ref(&by->obj);
    } else {
        if (referenced)
            KeDereferenceProfileSource(p->source);
        if (pinned)
            unpin_buffer(p);
        if (counted)
            uncharge(by);
    }
    mutex_unlock(lock);
    return s;
}

// Stopping cannot fail for want of memory: the smaller set is made of what
// the scope keeps for it (ke/profile_index.h). The profile is stopped
// whatever the HAL answers; its status is returned.
NTSTATUS KeStopProfile(struct kprofile *p)
{
    struct mutex *lock = scope_lock(p);
    mutex_lock(lock);
    if (!p->started) {
        mutex_unlock(lock);
        return STATUS_PROFILING_NOT_STARTED;
    }
    struct profile_change ch;
    profile_set_remove(*set_of(p), p, &ch);
    sample_publish(set_of(p), ch.set); // no plan names p now
    set_wait(p, deactivate_on_cpu);    // no CPU counts into the buffer now
    if (p->process)
        p->delivered += samples_since_start(p, ch.old); // its last set, retired next
    profile_change_retire(&ch);
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
        delivered += samples_since_start(p, *set_of(p));
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
