// The sample fan-out: the per-CPU plans and the one replan rule (see
// ke/sample.h).
//
// A sample looks at two profile sets, the system's and the current process's
// for its source, and at the PMCs sampling there. Looking them up costs a hash
// probe per set and a pass over the running PMCs; but samples come in runs at
// nearby addresses of one process, so each CPU keeps, per source, a plan: the
// answer of its last lookups, valid for an address interval. Every sample is
// counted by a plan, the same code every time: when the CPU's plan no longer
// holds (a drop or a context switch since it was made, or an address outside
// its interval) a new one is made first. A plan says everything: which two
// per-CPU sample counters to increment, which profiles (one per scope,
// already known to count on this CPU, or a set to scan) count the address,
// and what the consumers registered with the fan-out (ke/sample.h) take.
#include "pmc/ke/sample.h"

#include "lib/panic.h"

#include "arch/x86/percpu.h"

#include "core/process.h"
#include "core/swevent.h"

#include "pmc/hal/hal.h"
#include "pmc/hal/trace.h"

#include "pmc/ke/profile.h"
#include "pmc/ke/profile_index.h"
#include "pmc/ke/profile_state.h"

// One consumer's part of a plan: its take and the token it asked for.
struct sample_taker {
    sample_take_fn *take; // NULL: the list ends
    void *token;
};

// A CPU's plan for one source (only its CPU reads or writes it, with
// interrupts off). A source's samples are all maskable or all NMIs, chosen
// at boot (the options profile_nmi=1 and pmi=nmi): so no sample ever
// interrupts another making the same plan, which would leave it half one
// plan, half the other.
struct sample_plan {
    uint64_t key;         // plan_key() it was made at; 0: none
    uint64_t lo, span;    // it holds for ip in [lo, lo + span]
    uint64_t *samples[2]; // this CPU's counters: the system slot's, the process set's
    // What each scope counts ip in: the one profile covering the interval
    // (NULL: none, or one that does not count on this CPU), or, when scan[]
    // is set, every profile of that set covering ip (overlapping or wide
    // ranges: counted one by one, each checked; such a plan holds for its
    // one sample).
    struct kprofile *profile[2];
    const struct profile_set *scan[2];
    // What the consumers take (this CPU's takers[source][0]); NULL: nothing.
    const struct sample_taker *taker;
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct sample_plan) == 128, "a plan is two cache lines");

// The profile layer's per-CPU area (arch/x86/percpu.h's layer_area).
struct profile_cpu {
    struct sample_plan plans[ProfileSourceCount];
    // Per source: [0] is what a plan calls, the one consumer's taker or
    // takers_run over [1..] when several take part; [1..] the list, ended
    // by a NULL take.
    struct sample_taker takers[ProfileSourceCount][SAMPLE_CONSUMERS_MAX + 2];
};
static struct profile_cpu profile_cpus[MAX_CPUS];

// This CPU's area: the one way the sample path reaches its plans (one %gs
// load; sample_plan_init points each CPU's layer_area at its entry).
static inline struct profile_cpu *this_profile_cpu(void)
{
    return percpu_read(layer_area);
}

uint64_t samples_sink[MAX_CPUS][8] __attribute__((aligned(64)));

// The registered consumers, in the order of registration (boot only).
static const struct sample_consumer *consumers[SAMPLE_CONSUMERS_MAX];
static unsigned nconsumers; // published with sample_publish

void sample_consumer_register(const struct sample_consumer *c)
{
    if (nconsumers == SAMPLE_CONSUMERS_MAX)
        panic("sample: more than %u consumers", SAMPLE_CONSUMERS_MAX);
    consumers[nconsumers] = c;
    sample_publish(&nconsumers, nconsumers + 1); // read by plan_consumers
}

// A plan holds while this CPU's plan epoch (ke/plan_epoch.h) is the one it
// was made at: every drop and every context switch here bumps the epoch, so
// a plan made before a drop, or for a process that no longer runs here, never
// holds again. The epoch is odd while a switch changes the running process
// (core/switch_publish.h): a plan made then serves its one sample and is not
// kept. From 2: a plan's key 0 is none.
static inline uint64_t plan_key(void)
{
    return percpu_read(plan_epoch);
}

static inline bool plan_key_keeps(uint64_t key)
{
    return (key & 1) == 0; // not inside a switch
}

static inline void count_bucket(struct kprofile *p, uint64_t ip)
{
    uint32_t *bucket = (uint32_t *)p->kbuf + ((ip - p->range_base) >> p->bucket_shift);
    __atomic_fetch_add(bucket, 1, __ATOMIC_RELAXED); // every CPU may hit the same bucket
    __atomic_fetch_add(&p->in_range, 1, __ATOMIC_RELAXED);
}

// --- making a plan -------------------------------------------------------------

// One scope's part of the plan for ip: the profile of set that counts ip,
// with the plan's interval narrowed to where that stays so; or, when no one
// profile is the answer, the set to scan.
static void plan_scope(struct sample_plan *plan, unsigned scope, const struct profile_set *set,
                       uint64_t ip, uint64_t bit)
{
    plan->profile[scope] = NULL;
    plan->scan[scope] = NULL;
    if (!set)
        return;
    struct profile_answer a;
    profile_set_lookup(set, ip, &a);
    if (a.several || set->nwide) {
        plan->scan[scope] = set;
        return;
    }
    uint64_t hi = plan->lo + plan->span;
    plan->lo = MAX(plan->lo, a.lo);
    plan->span = MIN(hi, a.hi) - plan->lo;
    if (a.entry && (READ_ONCE(a.entry->p->active) & bit))
        plan->profile[scope] = a.entry->p;
}

// Every taker of a plan that several consumers take part in, in turn.
static void takers_run(void *token, const struct intr_frame *f)
{
    for (const struct sample_taker *t = token; t->take; t++)
        t->take(t->token, f);
}

// The consumers' part of the plan for source on cpu while pr runs: each one
// asked for its token; one taker is called directly, several through
// takers_run.
static void plan_consumers(struct sample_plan *plan, KPROFILE_SOURCE source,
                           const struct process *pr, unsigned cpu)
{
    struct sample_taker *entry = this_profile_cpu()->takers[source], *list = entry + 1;
    unsigned n = 0, k = __atomic_load_n(&nconsumers, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < k; i++) {
        const struct sample_consumer *c = consumers[i];
        void *token = c->plan(source, pr, cpu);
        if (token)
            list[n++] = (struct sample_taker){c->take, token};
    }
    list[n].take = NULL;
    *entry = n == 1 ? list[0] : (struct sample_taker){takers_run, list};
    plan->taker = n == 0 ? NULL : entry;
}

// This CPU's plan for source at the sample f: the two profile sets it looks
// in (the system's, the running process's), the profiles there that count
// f's address, and what the consumers take. Kept for the samples after it
// unless it scans or a switch is under way (the key is read first: the
// process read after it runs at that key, or the key is odd). Nothing is
// done here but the plan: a consumer that acts on every sample (a logger's
// profile hook, `pmc trace`) does so in its take.
static __attribute__((noinline)) struct sample_plan *plan_make(KPROFILE_SOURCE source,
                                                               const struct intr_frame *f)
{
    uint64_t key = plan_key();
    unsigned cpu = cpu_id();
    struct process *pr = percpu_read(current_process);
    struct profile_slot *sys = &profile_system_slots[source];
    struct profile_set *own =
        pr ? __atomic_load_n(&profile_of(pr)->sets[source], __ATOMIC_ACQUIRE) : NULL;
    struct sample_plan *plan = &this_profile_cpu()->plans[source];
    uint64_t bit = 1ull << cpu;
    plan->key = 0;
    plan->lo = 0;
    plan->span = UINT64_MAX;
    plan->samples[0] = &sys->samples[cpu];
    plan->samples[1] = own ? &own->samples[cpu] : &samples_sink[cpu][0];
    plan_scope(plan, 0, __atomic_load_n(&sys->set, __ATOMIC_ACQUIRE), f->rip, bit);
    plan_scope(plan, 1, own, f->rip, bit);
    plan_consumers(plan, source, pr, cpu);
    if (!plan->scan[0] && !plan->scan[1] && plan_key_keeps(key))
        plan->key = key;
    return plan;
}

// --- running a plan ------------------------------------------------------------

// Count ip in every profile of set covering it that counts on this CPU
// (bit); `pmc trace` sees each bucket.
static void count_covering(const struct profile_set *set, uint64_t ip, uint64_t bit)
{
    struct profile_cursor c;
    profile_cursor_at(&c, set, ip);
    for (const struct profile_set_entry *e; (e = profile_set_next(set, &c));) {
        struct kprofile *p = READ_ONCE(e->p);
        if (READ_ONCE(p->active) & bit) {
            count_bucket(p, ip);
            PMC_TRACE_BUCKET(p->source, (ip - p->range_base) >> p->bucket_shift, p->range_base);
        }
    }
}

// The sample f by the plan: the per-CPU sample counters, the buckets, then
// the consumers' take. Every call is the last act, a tail call, so nothing
// is saved around one.
static inline __attribute__((always_inline)) void plan_run(struct sample_plan *plan,
                                                           const struct intr_frame *f)
{
    uint64_t ip = f->rip;
    // Everything read before the buckets' atomic adds, which the compiler
    // must assume may write the plan.
    struct kprofile *sys_p = plan->profile[0], *own_p = plan->profile[1];
    const struct sample_taker *taker = plan->taker;
    (*plan->samples[0])++; // only this CPU writes its counters
    (*plan->samples[1])++;
    if (sys_p)
        count_bucket(sys_p, ip);
    if (own_p)
        count_bucket(own_p, ip);
    if (taker)
        taker->take(taker->token, f);
}

// A sample the CPU's plan does not hold: a new plan, then the same run. A
// plan that scans is made for this one sample, and its scans are counted
// here, before the run.
static __attribute__((noinline)) void plan_make_and_run(KPROFILE_SOURCE source,
                                                        const struct intr_frame *f)
{
    struct sample_plan *plan = plan_make(source, f);
    uint64_t bit = 1ull << cpu_id();
    for (unsigned scope = 0; scope < 2; scope++)
        if (plan->scan[scope])
            count_covering(plan->scan[scope], f->rip, bit);
    plan_run(plan, f);
}

// The HAL's sample callback, in interrupt context: this CPU's plan for the
// source, made first when it has none or no longer holds, then run. (The
// making is a tail call away, so that a sample the plan holds saves no
// register: plan_run is the same code in both.)
void KeProfileInterruptWithSource(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    struct sample_plan *plan = &this_profile_cpu()->plans[source]; // the HAL's sources only
    if (plan->key != plan_key() || f->rip - plan->lo > plan->span) {
        plan_make_and_run(source, f);
        return;
    }
    plan_run(plan, f);
}

// ProfileTime's ticks on cpu: every one passes here and is counted in the
// system slot (core/swevent.h's profile-ticks event reads it).
static uint64_t profile_ticks_on(unsigned cpu)
{
    return READ_ONCE(profile_system_slots[ProfileTime].samples[cpu]);
}

// `pmc trace`'s record of each bucket a sample lands in, a consumer like any
// other: a plan made while tracing is on takes it (turning tracing on or off
// drops the plans: sys/sys_hal.c). A plan that scans traces its buckets as it
// counts them (count_covering); this covers the profiles the plan names.
static void *trace_plan(KPROFILE_SOURCE source, const struct process *pr, unsigned cpu)
{
    UNUSED(pr);
    UNUSED(cpu);
    return READ_ONCE(pmc_trace_on) ? &this_profile_cpu()->plans[source] : NULL;
}

static void trace_take(void *token, const struct intr_frame *f)
{
    const struct sample_plan *plan = token;
    for (unsigned scope = 0; scope < 2; scope++) {
        const struct kprofile *p = plan->profile[scope];
        if (p)
            PMC_TRACE_BUCKET(p->source, (f->rip - p->range_base) >> p->bucket_shift, p->range_base);
    }
}

static const struct sample_consumer trace_consumer = {trace_plan, trace_take};

void sample_plan_init(void)
{
    swevent_profile_ticks = profile_ticks_on;
    sample_consumer_register(&trace_consumer);
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
        cpus[cpu].layer_area = &profile_cpus[cpu];
        __atomic_fetch_add(&cpus[cpu].plan_epoch, 2, __ATOMIC_SEQ_CST);
    }
    HAL_PROFILE_INTERRUPT_HANDLER h = KeProfileInterruptWithSource;
    HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof h, &h);
}
