// Profile objects: start, stop, and the sample path into the buckets.
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
#include "profile/pmc_alloc.h"

#define PROFILES_PER_CPU_LIMIT 8192 // NT's STATUS_PROFILING_AT_LIMIT: 8,192 x processors

static struct mutex profile_mutex = MUTEX_INIT("profiles"); // start, stop, set changes
static struct kprofile dead_profile; // stands in for a stopped profile when memory is short
static struct profile_slot system_slots[ProfileSourceCount];
static uint64_t started_count;

// --- the sample path --------------------------------------------------------
//
// A sample looks at two profile sets: the system's and the current process's,
// for its source. Looking them up costs a hash probe each; but samples come in
// runs at nearby addresses, so each CPU keeps, per source, a plan: the answer
// of its last lookups, valid for an address interval. While nothing changed
// since (profile_generation), the same process runs and the sample lands in the
// interval, the plan says everything: which two per-CPU sample counters to
// increment and which profiles (at most one per scope, already known to count
// on this CPU) to count the address in.

// A CPU's plan for one source (one cache line; only its CPU reads or writes
// it, with interrupts off).
struct sample_plan {
    uint64_t generation;        // profile_generation it was made at; 0: none
    const struct process *proc; // the process it was made for (NULL: none)
    uint64_t lo, span;          // it holds for ip in [lo, lo + span]
    uint64_t *samples[2];       // this CPU's counters of the system and process slots
    struct kprofile *count[2];  // the profile each scope counts ip in; NULL: none
    const struct pmc_plan *pmc; // the PMCs sampling here (pmc_alloc.h); NULL: none
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct sample_plan) == 128, "a plan is two cache lines, the PMCs' second");

static struct sample_plan plans[MAX_CPUS][ProfileSourceCount];
// Bumped after every change a plan may have seen: a set replaced, a stopped
// profile retired in place, a process's slots freed. Odd values only, from 1:
// a plan's 0 never matches.
static uint64_t profile_generation = 1;
// A process without a slot counts its samples here (per CPU, never read).
static uint64_t samples_sink[MAX_CPUS][8] __attribute__((aligned(64)));

static void generation_bump(void)
{
    __atomic_fetch_add(&profile_generation, 2, __ATOMIC_SEQ_CST);
}

void ke_profile_replan(void)
{
    generation_bump();
}

// This CPU's plans for source are stale: it begins or ends counting a profile.
static void plan_forget(unsigned cpu, KPROFILE_SOURCE source)
{
    plans[cpu][source].generation = 0;
}

static inline void count_bucket(struct kprofile *p, uint64_t ip)
{
    uint32_t *bucket = (uint32_t *)p->kbuf + ((ip - p->range_base) >> p->bucket_shift);
    __atomic_fetch_add(bucket, 1, __ATOMIC_RELAXED); // every CPU may hit the same bucket
    __atomic_fetch_add(&p->in_range, 1, __ATOMIC_RELAXED);
}

// Count ip, which e covers, in e's profile if it counts on this CPU (bit);
// `pmc trace` sees it.
static void count_entry(const struct profile_set_entry *e, uint64_t ip, uint64_t bit)
{
    struct kprofile *p = READ_ONCE(e->p);
    if (READ_ONCE(p->active) & bit) {
        count_bucket(p, ip);
        PMC_TRACE_BUCKET(p->source, (ip - p->range_base) >> p->bucket_shift, p->range_base);
    }
}

// One scope's lookup at ip: counts ip in every profile of set covering it
// and narrows plan to the interval over which the answer holds. False when the
// answer cannot be kept (overlapping or wide ranges).
static bool plan_scope(struct sample_plan *plan, unsigned scope, const struct profile_set *set,
                       uint64_t ip, uint64_t bit)
{
    plan->count[scope] = NULL;
    if (!set)
        return true;
    for (unsigned i = set->n; i < set->n + set->nwide; i++)
        if (set->e[i].base <= ip && ip < set->e[i].end)
            count_entry(&set->e[i], ip, bit);
    struct profile_answer a;
    profile_set_lookup(set, ip, count_entry, bit, &a);
    uint64_t hi = plan->lo + plan->span;
    plan->lo = MAX(plan->lo, a.lo);
    plan->span = MIN(hi, a.hi) - plan->lo;
    if (a.entry && (READ_ONCE(a.entry->p->active) & bit))
        plan->count[scope] = a.entry->p;
    return a.reusable;
}

// A sample the plan does not answer: both lookups, which count it, and a new
// plan. The slots' per-CPU sample counters count every sample, a set published
// or not: they are read only as differences between a profile's activation
// and deactivation on a CPU (see activate_on_cpu).
static __attribute__((noinline)) void sample_and_plan(KPROFILE_SOURCE source,
                                                      const struct intr_frame *f, unsigned cpu)
{
    uint64_t generation = __atomic_load_n(&profile_generation, __ATOMIC_ACQUIRE);
    struct process *pr = percpu_read(current_process);
    struct profile_slot *sys = &system_slots[source];
    struct profile_slot *own = pr ? READ_ONCE(pr->profile_slot[source]) : NULL;
    struct sample_plan *plan = &plans[cpu][source];
    uint64_t ip = f->rip, bit = 1ull << cpu;
    plan->generation = 0;
    plan->proc = pr;
    plan->lo = 0;
    plan->span = UINT64_MAX;
    plan->samples[0] = &sys->samples[cpu];
    plan->samples[1] = own ? &own->samples[cpu] : &samples_sink[cpu][0];
    (*plan->samples[0])++; // only this CPU writes its counters
    (*plan->samples[1])++;
    bool sys_ok = plan_scope(plan, 0, __atomic_load_n(&sys->set, __ATOMIC_ACQUIRE), ip, bit);
    bool own_ok =
        plan_scope(plan, 1, own ? __atomic_load_n(&own->set, __ATOMIC_ACQUIRE) : NULL, ip, bit);
    bool pmc_ok = pmc_plan_make(source, pr, cpu, &plan->pmc);
    // While `pmc trace` is on no plan is kept: every sample comes here, where
    // count_entry traces its buckets (ke_profile_replan drops the plans).
    if (sys_ok && own_ok && pmc_ok && !pmc_trace_on)
        plan->generation = generation;
    if (!pmc_ok)
        pmc_sample_interrupt(source, f);
    else if (plan->pmc)
        pmc_plan_sample(plan->pmc, f);
}

// The HAL's sample callback, in interrupt context: the system-scope profiles
// of the source, then the current process's, then the PMCs of the allocation
// API that sample here (the plan's PMC plan). When this CPU's plan answers,
// the sample is counted here without a call; anything else goes the general
// way (sample_and_plan).
void KeProfileInterruptWithSource(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    struct sample_plan *plan = percpu_read(sample_plans) + source; // the HAL's sources only
    uint64_t ip = f->rip;
    if (plan->generation != READ_ONCE(profile_generation) ||
        plan->proc != percpu_read(current_process) || ip - plan->lo > plan->span) {
        sample_and_plan(source, f, cpu_id()); // a tail call: the fast path saves no register
        return;
    }
    struct kprofile *sys_p = plan->count[0], *own_p = plan->count[1];
    (*plan->samples[0])++;
    (*plan->samples[1])++;
    if (sys_p)
        count_bucket(sys_p, ip);
    if (own_p)
        count_bucket(own_p, ip);
    if (plan->pmc)
        pmc_plan_sample(plan->pmc, f); // PMCs and the sample log (profile/pmc_alloc.c)
}

// --- sets ---------------------------------------------------------------------

static struct profile_slot *slot_of(struct kprofile *p, bool create)
{
    if (!p->process)
        return &system_slots[p->source];
    struct profile_slot **pp = &p->process->profile_slot[p->source];
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
    plan_forget(cpu, p->source);
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
    plan_forget(cpu, p->source);
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
        __atomic_store_n(&slot->set, set, __ATOMIC_RELEASE);
        generation_bump();
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
        __atomic_store_n(&slot->set, set, __ATOMIC_RELEASE);
    } else {
        for (unsigned i = 0; i < old->n + old->nwide; i++)
            if (old->e[i].p == p)
                __atomic_store_n(&old->e[i].p, &dead_profile, __ATOMIC_RELEASE);
        old = NULL; // still in use
    }
    generation_bump();                  // no plan names p now
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
    generation_bump(); // no plan points into the slots now (a new process may reuse p)
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        kfree(p->profile_slot[s]);
        p->profile_slot[s] = NULL;
    }
}

bool ke_profile_scope_started(struct process *pr, KPROFILE_SOURCE source)
{
    if ((unsigned)source >= ProfileSourceCount)
        return false;
    struct profile_slot *slot = pr ? READ_ONCE(pr->profile_slot[source]) : NULL;
    return READ_ONCE(system_slots[source].set) || (slot && READ_ONCE(slot->set));
}

void ke_profile_init(void)
{
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
        cpus[cpu].sample_plans = plans[cpu];
    process_watch(process_gone);
    HAL_PROFILE_INTERRUPT_HANDLER h = KeProfileInterruptWithSource;
    HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof h, &h);
}

// --- sources shared with PMC objects (profile/pmc_alloc.c) -----------------------

// Profile objects and PMCs are users of the same count, the HAL's, so a
// source starts with the first user of either kind and stops with the last.
NTSTATUS KeReferenceProfileSource(KPROFILE_SOURCE source)
{
    return HalStartProfileInterrupt(source, NULL);
}

NTSTATUS KeDereferenceProfileSource(KPROFILE_SOURCE source)
{
    return HalStopProfileInterrupt(source, NULL);
}
