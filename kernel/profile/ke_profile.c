// Profile objects: start, stop, and the profile sets the sample fan-out
// (sample_plan.c) counts buckets with.
#include "profile/ke_profile.h"
#include "profile/profile_index.h"
#include "core/addrspace.h"
#include "core/heap.h"
#include "lib/memlayout.h"
#include "core/mutex.h"
#include "arch/x86/percpu.h"
#include "core/pin.h"
#include "pmc/hal.h"
#include "pmc/pmi.h"
#include "pmc/trace.h"
#include "core/process.h"
#include "core/smp.h"
#include "core/sysmap.h"
#include "lib/string.h"
#include "core/vm.h"
#include "profile/profile_state.h"
#include "profile/sample_plan.h"

#define PROFILES_PER_CPU_LIMIT 8192 // NT's STATUS_PROFILING_AT_LIMIT: 8,192 x processors

static struct mutex profile_mutex = MUTEX_INIT("profiles"); // start, stop, set changes
static struct kprofile dead_profile; // stands in for a stopped profile when memory is short
struct profile_slot profile_system_slots[ProfileSourceCount];
static uint64_t started_count;

// --- sets ---------------------------------------------------------------------

static struct profile_slot *slot_of(struct kprofile *p, bool create)
{
    if (!p->process)
        return &profile_system_slots[p->source];
    struct profile_slot **pp = &profile_of(p->process)->slot[p->source];
    if (!*pp && create)
        *pp = kzalloc(sizeof **pp);
    return *pp;
}

// Each CPU, with interrupts off (so no sample is half done here), begins or
// ends counting for the profile and notes where its sample counter stood.
// Running it on every CPU is also the barrier after which no CPU still reads
// a replaced set.
static void activate_on_cpu(void *arg)
{
    struct kprofile *p = arg;
    unsigned cpu = cpu_id();
    if (!(p->affinity & (1ull << cpu)))
        return;
    p->start_samples[cpu] = slot_of(p, false)->samples[cpu];
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
    __atomic_fetch_add(&p->delivered, slot_of(p, false)->samples[cpu] - p->start_samples[cpu],
                       __ATOMIC_RELAXED);
    sample_plan_forget_here(p->source);
}

static void barrier_on_cpu(void *arg)
{
    UNUSED(arg);
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

NTSTATUS KeStartProfile(struct kprofile *p)
{
    mutex_lock(&profile_mutex);
    NTSTATUS s;
    struct profile_slot *slot = NULL;
    struct profile_set *set = NULL;
    if (p->started)
        s = STATUS_PROFILING_NOT_STOPPED;
    else if (started_count >= (uint64_t)PROFILES_PER_CPU_LIMIT * ncpus_online)
        s = STATUS_PROFILING_AT_LIMIT;
    else if (!(slot = slot_of(p, true)))
        s = STATUS_INSUFFICIENT_RESOURCES;
    else
        s = pin_buffer(p);
    bool pinned = NT_SUCCESS(s), ok = false;
    if (pinned) {
        set = profile_set_change(slot->set, p, NULL, &dead_profile, &ok);
        s = ok ? KeReferenceProfileSource(p->source) : STATUS_INSUFFICIENT_RESOURCES;
    }
    if (NT_SUCCESS(s)) {
        struct profile_set *old = slot->set;
        sample_publish(&slot->set, set);
        p->start_throttled = pmc_pmi_throttled(p->source);
        smp_call_all(activate_on_cpu, p); // also the barrier: nobody reads old now
        kfree(old);
        p->started = true;
        started_count++;
    } else {
        kfree(set);
        if (pinned)
            unpin_buffer(p);
    }
    mutex_unlock(&profile_mutex);
    return s;
}

// Stopping cannot fail for want of memory: without memory for a smaller set,
// the entry is pointed at dead_profile (never active) in place, and dropped at
// the next change. The profile is stopped whatever the HAL answers; its status
// is returned.
NTSTATUS KeStopProfile(struct kprofile *p)
{
    mutex_lock(&profile_mutex);
    if (!p->started) {
        mutex_unlock(&profile_mutex);
        return STATUS_PROFILING_NOT_STARTED;
    }
    struct profile_slot *slot = slot_of(p, false);
    bool ok;
    struct profile_set *set = profile_set_change(slot->set, NULL, p, &dead_profile, &ok);
    smp_call_all(deactivate_on_cpu, p); // no CPU counts into the buffer after this
    struct profile_set *old = slot->set;
    if (ok) {
        sample_publish(&slot->set, set); // no plan names p now
    } else {
        for (unsigned i = 0; i < old->n + old->nwide; i++)
            if (old->e[i].p == p)
                sample_publish(&old->e[i].p, &dead_profile);
        old = NULL; // still in use
    }
    smp_call_all(barrier_on_cpu, NULL); // nobody reads old, or p through it, now
    kfree(old);
    p->throttled += pmc_pmi_throttled(p->source) - p->start_throttled;
    unpin_buffer(p);
    p->started = false;
    started_count--;
    NTSTATUS s = KeDereferenceProfileSource(p->source); // the source's last user stops it
    mutex_unlock(&profile_mutex);
    return s;
}

void KeQueryProfileStats(struct kprofile *p, struct sys_profile_stats *out)
{
    mutex_lock(&profile_mutex); // a consistent view against start and stop
    uint64_t delivered = p->delivered, throttled = p->throttled;
    if (p->started) {
        struct profile_slot *slot = slot_of(p, false);
        for (unsigned cpu = 0; cpu < ncpus; cpu++)
            if (READ_ONCE(p->active) & (1ull << cpu))
                delivered += READ_ONCE(slot->samples[cpu]) - p->start_samples[cpu];
        throttled += pmc_pmi_throttled(p->source) - p->start_throttled;
    }
    // Read in_range last: a sample counted there was already counted in delivered.
    uint64_t in_range = __atomic_load_n(&p->in_range, __ATOMIC_ACQUIRE);
    mutex_unlock(&profile_mutex);
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

// A destroyed process's slots: no started profile can name it any more.
static void process_gone(struct process *p, enum process_event event)
{
    if (event != PROCESS_DESTROYED)
        return;
    struct profile_process *pp = profile_of(p);
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        struct profile_slot *slot = pp->slot[s];
        sample_publish(&pp->slot[s], (struct profile_slot *)NULL); // no plan points into it now
        kfree(slot);
    }
}

bool ke_profile_scope_started(struct process *pr, KPROFILE_SOURCE source)
{
    if ((unsigned)source >= ProfileSourceCount)
        return false;
    struct profile_slot *slot = pr ? READ_ONCE(profile_of(pr)->slot[source]) : NULL;
    return READ_ONCE(profile_system_slots[source].set) || (slot && READ_ONCE(slot->set));
}

void ke_profile_init(void)
{
    process_area_reserve(ALIGN_UP(sizeof(struct profile_process), 8));
    process_watch(process_gone);
}

// --- sources shared with PMC objects (profile/pmc_object.c) ----------------------

// Profile objects and PMCs are users of the same count, the HAL's, so a
// source starts with the first user of either kind and stops with the last.
NTSTATUS KeReferenceProfileSource(KPROFILE_SOURCE source)
{
    return HalStartProfileInterrupt(source, NULL);
}

NTSTATUS KeReferenceProfileSourceRings(KPROFILE_SOURCE source, unsigned rings)
{
    return HalStartProfileInterruptEx(source, rings, NULL);
}

NTSTATUS KeDereferenceProfileSource(KPROFILE_SOURCE source)
{
    return HalStopProfileInterrupt(source, NULL);
}
