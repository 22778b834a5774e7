// The sample fan-out: the per-CPU plans and the one replan rule (see
// ke/sample.h).
//
// A sample looks at two profile sets, the system's and the current process's
// for its source, and at the PMCs sampling there. Looking them up costs a hash
// probe per set and a pass over the running PMCs; but samples come in runs at
// nearby addresses of one process, so each CPU keeps, per source, a plan: the
// answer of its last lookups, valid for an address interval. While the plans
// are not dropped (generation), the same process runs and the sample lands in
// the interval, the plan says everything: which two per-CPU sample counters
// to increment, which profiles (at most one per scope, already known to count
// on this CPU) to count the address in, and which PMCs take the sample.
#include "pmc/ke/sample.h"

#include "arch/x86/percpu.h"

#include "core/process.h"
#include "core/swevent.h"

#include "pmc/hal/hal.h"
#include "pmc/hal/trace.h"

#include "pmc/hwpmc/kind_sampling.h"
#include "pmc/hwpmc/loggers.h"
#include "pmc/ke/profile.h"
#include "pmc/ke/profile_index.h"
#include "pmc/ke/profile_state.h"

// A CPU's plan for one source (only its CPU reads or writes it, with
// interrupts off).
struct sample_plan {
    uint64_t generation;        // plan_generation it was made at; 0: none
    const struct process *proc; // the process it was made for (NULL: none)
    uint64_t lo, span;          // it holds for ip in [lo, lo + span]
    uint64_t *samples[2];       // this CPU's counters: the system slot's, the process set's
    struct kprofile *count[2];  // the profile each scope counts ip in; NULL: none
    const struct pmc_plan *pmc; // the PMCs sampling here; NULL: none
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct sample_plan) == 128, "a plan is two cache lines");

// The profile layer's per-CPU area (arch/x86/percpu.h's layer_area).
struct profile_cpu {
    struct sample_plan plans[ProfileSourceCount];
    struct pmc_plan pmc[ProfileSourceCount];
};
static struct profile_cpu profile_cpus[MAX_CPUS];

// Bumped by every drop. Odd values only, from 1: a plan's 0 never matches.
static uint64_t plan_generation = 1;
// A process without a set counts its samples here (per CPU, never read).
static uint64_t samples_sink[MAX_CPUS][8] __attribute__((aligned(64)));

void sample_plans_drop(void)
{
    __atomic_fetch_add(&plan_generation, 2, __ATOMIC_SEQ_CST);
}

void sample_plan_forget_here(KPROFILE_SOURCE source)
{
    profile_cpus[cpu_id()].plans[source].generation = 0;
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

// The PMCs of the plan: *pmc_ok false when too many sample here to plan.
static const struct pmc_plan *plan_pmcs(KPROFILE_SOURCE source, const struct process *pr,
                                        unsigned cpu, bool *pmc_ok)
{
    struct pmc_plan *pp = &profile_cpus[cpu].pmc[source];
    *pmc_ok = pmc_plan_make(pp, source, pr, cpu);
    return *pmc_ok && pp->n ? pp : NULL;
}

// A sample the plan does not answer: both lookups, which count it, the PMCs,
// and a new plan. The system slot's per-CPU counter counts every sample, a
// set published or not (read as differences between a profile's activation
// and deactivation on a CPU); a process's set counts the samples that found
// it (ke/profile.c); a process without a set counts into a sink.
static __attribute__((noinline)) void sample_and_plan(KPROFILE_SOURCE source,
                                                      const struct intr_frame *f, unsigned cpu)
{
    uint64_t generation = __atomic_load_n(&plan_generation, __ATOMIC_ACQUIRE);
    struct process *pr = percpu_read(current_process);
    struct profile_slot *sys = &profile_system_slots[source];
    const struct profile_set *own =
        pr ? __atomic_load_n(&profile_of(pr)->sets[source], __ATOMIC_ACQUIRE) : NULL;
    struct sample_plan *plan = &profile_cpus[cpu].plans[source];
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
    bool own_ok = plan_scope(plan, 1, own, ip, bit);
    bool pmc_ok;
    plan->pmc = plan_pmcs(source, pr, cpu, &pmc_ok);
    // While `pmc trace` or a trace logger's profile-interrupt hook is on, no
    // plan is kept: every sample comes here, where count_entry traces its
    // buckets and the hook fires.
    pmc_hook(HOOK_PROFILE, pr ? pr->pid : 0, source);
    bool watched = pmc_trace_on || (READ_ONCE(pmc_hook_mask) & HOOK_PROFILE);
    if (sys_ok && own_ok && pmc_ok && !watched)
        plan->generation = generation;
    if (!pmc_ok)
        pmc_sample_interrupt(source, f);
    else if (plan->pmc)
        pmc_plan_sample(plan->pmc, f);
}

// The HAL's sample callback, in interrupt context: the system-scope profiles
// of the source, then the current process's, then the PMCs that sample here.
// When this CPU's plan answers, the sample is counted here without a call;
// anything else goes the general way (sample_and_plan).
void KeProfileInterruptWithSource(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    struct profile_cpu *pc = percpu_read(layer_area);
    struct sample_plan *plan = &pc->plans[source]; // the HAL's sources only
    uint64_t ip = f->rip;
    if (plan->generation != READ_ONCE(plan_generation) ||
        plan->proc != percpu_read(current_process) || ip - plan->lo > plan->span) {
        sample_and_plan(source, f, cpu_id()); // a tail call: the fast path saves no register
        return;
    }
    // Everything read before the buckets' atomic adds, which the compiler
    // must assume may write the plan.
    struct kprofile *sys_p = plan->count[0], *own_p = plan->count[1];
    const struct pmc_plan *pmc = plan->pmc;
    (*plan->samples[0])++;
    (*plan->samples[1])++;
    if (sys_p)
        count_bucket(sys_p, ip);
    if (own_p)
        count_bucket(own_p, ip);
    if (pmc)
        pmc_plan_sample(pmc, f); // PMCs and the PMC log (hwpmc/kind_sampling.c)
}

// ProfileTime's ticks on cpu: every one passes here and is counted in the
// system slot (core/swevent.h's profile-ticks event reads it).
static uint64_t profile_ticks_on(unsigned cpu)
{
    return READ_ONCE(profile_system_slots[ProfileTime].samples[cpu]);
}

void sample_plan_init(void)
{
    swevent_profile_ticks = profile_ticks_on;
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
        cpus[cpu].layer_area = &profile_cpus[cpu];
    HAL_PROFILE_INTERRUPT_HANDLER h = KeProfileInterruptWithSource;
    HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof h, &h);
}
