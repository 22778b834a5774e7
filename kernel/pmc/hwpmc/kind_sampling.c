// The sampling kinds of the PMC object: ProfileTime's ticks and a PMU
// event's overflows, both delivered by the HAL to the sample fan-out
// (ke/sample.c), which hands each PMC that samples there its share of
// the samples, as records of its owner's log (hwpmc/log.c).
//
// A sampling PMC runs its source through the same reference count as NT
// profile objects (KeReferenceProfileSource), so `profile run` and `profile
// record` can sample at once. Started sampling PMCs form an array, the
// running set, never written while published: replaced whole on start and
// stop and read without locks by the interrupt; a replacement is followed by
// a grace period (core/grace.h), after which no CPU still reads the old array or a
// stopped PMC.
#include "pmc/hwpmc/kind_sampling.h"

#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/percpu.h"

#include "core/grace.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/spinlock.h"

#include "pmc/hal/hal.h"

#include "pmc/hwpmc/log.h"
#include "pmc/ke/profile.h"
#include "pmc/ke/sample.h"

struct pmc_set {
    unsigned n;
    struct pmc *p[PMC_MAX_RUNNING];
};

// The running set is one of two arrays; a change writes the other one,
// publishes it and waits for a grace period, after which nobody reads the
// array it replaced, which the next change writes. So a published array is
// never written, and neither start nor stop needs memory. Changes are one at
// a time (hwpmc/pmc.c's pmc_mutex).
static struct pmc_set sets[2];
static unsigned next_set;           // the array the next change writes
static struct pmc_set *running_set; // NULL when none runs

// --- the samplers (interrupt context) --------------------------------------------

// Whether m samples this CPU (bit) for source while pr runs: *tg is then its
// target (NULL at system scope).
static bool samples_here(const struct pmc *m, KPROFILE_SOURCE source, uint64_t bit,
                         const struct process *pr, struct pmc_target **tg)
{
    *tg = NULL;
    if (m->a.source != source || !(m->cpus & bit))
        return false;
    return !pmc_process_scope(m) || (pr && (*tg = pmc_target_of(m, pr)));
}

_Static_assert(sizeof(struct pmclog_sample) == sizeof(((struct pmc_sampler *)0)->head),
               "a sampler keeps a sample record's head");

// m's sampler on cpu made ready for pr's ticks: phase and slice go on.
static struct pmc_sampler *sampler_ready(struct pmc *m, struct pmc_target *tg,
                                         const struct process *pr, unsigned cpu)
{
    struct pmc_sampler *s = &m->s.cpu[cpu];
    bool chain = (m->a.flags & PMC_F_CALLCHAIN) != 0;
    uint32_t pid = pr ? pr->pid : 0;
    struct pmclog_sample head = {.h = {.type = PMCLOG_SAMPLE, .cpu = (uint16_t)cpu},
                                 .pid = pid,
                                 .tid = pid,
                                 .pmc = m->id,
                                 .source = (uint16_t)m->a.source,
                                 .flags = chain ? PMCLOG_SAMPLE_CHAIN : 0};
    memcpy(s->head, &head, sizeof head);
    unsigned levels = pmc_levels(&m->a);
    s->in_level[0] = (levels & PMC_LEVEL_OS) != 0;
    s->in_level[1] = (levels & PMC_LEVEL_USR) != 0;
    s->chain = chain;
    s->period = m->s.period;
    s->samples = tg ? &tg->samples : &samples_sink[cpu][0];
    s->log = pmc_log_cpu(m->log, cpu); // its owner's, in use while m runs
    s->next = NULL;
    return s;
}

struct pmc_sampler *pmc_samplers_make(KPROFILE_SOURCE source, const struct process *pr,
                                      unsigned cpu)
{
    const struct pmc_set *set = __atomic_load_n(&running_set, __ATOMIC_ACQUIRE);
    struct pmc_sampler *first = NULL, **link = &first;
    for (unsigned i = 0; set && i < set->n; i++) {
        struct pmc_target *tg;
        if (!samples_here(set->p[i], source, 1ull << cpu, pr, &tg))
            continue;
        *link = sampler_ready(set->p[i], tg, pr, cpu);
        link = &(*link)->next;
    }
    return first;
}

// --- the running set -------------------------------------------------------------

// Whether add may join the running set old: PMC_MAX_RUNNING in all, of
// them PMC_MAX_RUNNING_UNPRIVILEGED of unprivileged owners, so that no
// unprivileged process (nor all of them) can keep a privileged one from
// sampling.
static bool set_admits(const struct pmc_set *old, const struct pmc *add)
{
    unsigned n = old ? old->n : 0, unprivileged = 0;
    for (unsigned i = 0; i < n; i++)
        unprivileged += !old->p[i]->privileged;
    return n < PMC_MAX_RUNNING && (add->privileged || unprivileged < PMC_MAX_RUNNING_UNPRIVILEGED);
}

// Publish a copy of the running set with add added or remove removed.
static NTSTATUS set_change(struct pmc *add, struct pmc *remove)
{
    const struct pmc_set *old = running_set;
    unsigned n = old ? old->n : 0;
    if (add && !set_admits(old, add))
        return STATUS_PMC_TOO_MANY_RUNNING;
    struct pmc_set *set = &sets[next_set];
    set->n = 0;
    for (unsigned i = 0; i < n; i++)
        if (old->p[i] != remove)
            set->p[set->n++] = old->p[i];
    if (add)
        set->p[set->n++] = add;
    if (set->n == 0)
        set = NULL;
    else
        next_set ^= 1;
    sample_publish(&running_set, set);
    grace_wait(); // nobody reads old (or remove through it) now
    return STATUS_SUCCESS;
}

// Stopping cannot fail: m is taken out of the running set.
static void set_remove(struct pmc *m)
{
    NTSTATUS s = set_change(NULL, m);
    UNUSED(s); // only an addition can fail
}

// --- the kinds' operations ---------------------------------------------------------

static NTSTATUS check_count(const struct hal_profile_source_details *d, uint64_t count)
{
    if (count && count < d->min_interval)
        return STATUS_PMC_COUNT_TOO_SMALL;
    if (count > d->max_interval)
        return STATUS_PMC_COUNT_TOO_LARGE;
    return STATUS_SUCCESS;
}

static NTSTATUS sampling_allocate(struct pmc *m, const struct process *owner)
{
    struct hal_profile_source_details d;
    KPROFILE_SOURCE source = (KPROFILE_SOURCE)m->a.source;
    if (!NT_SUCCESS(HalQueryProfileSource(source, &d)) || !d.supported)
        return STATUS_PMC_SOURCE_UNSUPPORTED;
    if ((pmc_levels(&m->a) & PMC_LEVEL_OS) && !owner->privileged)
        return STATUS_PRIVILEGE_NOT_HELD; // kernel-mode samples
    return check_count(&d, m->a.count);
}

static void sampling_release(struct pmc *m)
{
    UNUSED(m);
}

static bool sampling_wants_switch(const struct pmc *m)
{
    return (m->a.flags & (PMC_F_LOG_PROCCSW | PMC_F_LOG_OFFCPU)) != 0;
}

static NTSTATUS sampling_start(struct pmc *m, struct process *caller)
{
    if (pmc_process_scope(m) && !m->ntargets)
        return STATUS_PMC_NO_TARGET;
    NTSTATUS s = pmc_log_use(caller, &m->log); // the caller is its owner (no handle is shared)
    if (!NT_SUCCESS(s))
        return s;
    KPROFILE_SOURCE source = (KPROFILE_SOURCE)m->a.source;
    s = KeReferenceProfileSourceLevels(source, pmc_levels(&m->a));
    if (!NT_SUCCESS(s)) {
        pmc_give_log(m);
        return s;
    }
    uint64_t interval = KeQueryIntervalProfile(source), count = m->a.count;
    m->s.period = count && interval ? MAX((count + interval / 2) / interval, 1ull) : 1;
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
        m->s.cpu[cpu].phase = m->s.cpu[cpu].slice = 0;
    m->running = true;
    s = set_change(m, NULL);
    if (!NT_SUCCESS(s)) {
        m->running = false;
        KeDereferenceProfileSource(source);
        pmc_give_log(m);
        return s;
    }
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    pmc_switch_work(m, true);
    spin_unlock_irqrestore(&pmc_lock, f);
    return STATUS_SUCCESS;
}

// PMC_F_LOG_OFFCPU: the target's thread (this CPU's current one) leaves the
// CPU at now: why (what it sleeps on, or runnable when it was preempted or
// yielded) and where (its kernel and user chain), as Brendan Gregg's
// "Off-CPU Analysis" records at each switch-out. A thread that dies leaves
// for good: no record.
static void offcpu_out(struct pmc_target *t, uint64_t now, unsigned cpu)
{
    const struct thread *th = percpu_read(current);
    if (th->state == T_DEAD)
        return;
    struct pmc *m = t->pmc;
    bool chain = (m->a.flags & PMC_F_CALLCHAIN) != 0;
    uint16_t why = (uint16_t)(th->state == T_SLEEPING ? th->wait_why : WAIT_RUNNABLE);
    t->off_since = now;
    t->off_reason = why;
    t->off_seq++;
    struct pmclog_offcpu head = {.h = {.type = PMCLOG_OFFCPU, .cpu = (uint16_t)cpu},
                                 .pid = t->proc->pid,
                                 .tid = t->proc->pid,
                                 .pmc = m->id,
                                 .reason = why,
                                 .flags = chain ? PMCLOG_SAMPLE_CHAIN : 0,
                                 .seq = t->off_seq};
    // Kernel frames only for a PMC that may sample kernel mode (PMC_F_KERNEL,
    // which needs the privilege): the scheduler's frames are kernel mode's.
    bool kernel = (pmc_levels(&m->a) & PMC_LEVEL_OS) != 0;
    pmc_log_offcpu(m->log, &head, chain, kernel ? &pmc_switch_frame[cpu] : NULL);
}

// The target is back at now (or, flags PMCLOG_ONCPU_STOPPED, the PMC stops
// while it is away): how long it was away.
static void offcpu_in(struct pmc_target *t, uint64_t now, uint16_t flags)
{
    if (!t->off_since)
        return; // attached while away, or never ran: nothing to end
    struct pmclog_oncpu r = {.h.type = PMCLOG_ONCPU, .pid = t->proc->pid, .tid = t->proc->pid};
    r.pmc = t->pmc->id;
    r.seq = t->off_seq;
    r.reason = t->off_reason;
    r.flags = flags;
    r.off_ns = now - t->off_since;
    t->off_since = 0;
    pmc_log_write_irqoff(t->pmc->log, &r.h, sizeof r);
}

// PMC_F_LOG_OFFCPU at the stop: every target still away gets its switch-in
// record now, flagged (pmc_lock held: no switch of a target meanwhile).
static void offcpu_stop(struct pmc *m)
{
    uint64_t now = clock_ns();
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k])
            offcpu_in(m->targets[k], now, PMCLOG_ONCPU_STOPPED);
}

static NTSTATUS sampling_stop(struct pmc *m)
{
    set_remove(m);
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    if (m->a.flags & PMC_F_LOG_OFFCPU)
        offcpu_stop(m);
    pmc_switch_work(m, false);
    m->running = false;
    spin_unlock_irqrestore(&pmc_lock, f);
    pmc_give_log(m);
    return KeDereferenceProfileSource((KPROFILE_SOURCE)m->a.source);
}

static NTSTATUS sampling_set_count(struct pmc *m, uint64_t count)
{
    struct hal_profile_source_details d;
    HalQueryProfileSource((KPROFILE_SOURCE)m->a.source, &d);
    if (m->running)
        return STATUS_PMC_RUNNING;
    if (count < d.min_interval)
        return STATUS_PMC_COUNT_TOO_SMALL;
    if (count > d.max_interval)
        return STATUS_PMC_COUNT_TOO_LARGE;
    m->a.count = count;
    return STATUS_SUCCESS;
}

static NTSTATUS sampling_attach(struct pmc_target *t)
{
    UNUSED(t);
    return STATUS_SUCCESS;
}

// A target leaves: at its process's exit, PMC_F_LOG_PROCEXIT logs its total.
static void sampling_detach(struct pmc_target *t, bool exiting)
{
    struct pmc *m = t->pmc;
    if (!exiting || !m->running || !(m->a.flags & PMC_F_LOG_PROCEXIT))
        return;
    struct pmclog_exit r = {.h.type = PMCLOG_EXIT, .pid = t->proc->pid, .pmc = m->id};
    r.status = t->proc->exit_status;
    r.value = t->samples;
    pmc_log_write_irqoff(m->log, &r.h, sizeof r);
}

// PMC_F_LOG_PROCCSW: the slice of the process leaving this CPU.
static void sampling_switch_out(struct pmc_target *t, uint64_t now)
{
    struct pmc *m = t->pmc;
    unsigned cpu = cpu_id();
    if (m->a.flags & PMC_F_LOG_OFFCPU)
        offcpu_out(t, now, cpu);
    if (!(m->a.flags & PMC_F_LOG_PROCCSW))
        return;
    struct pmclog_csw r = {.h.type = PMCLOG_CSW, .pid = t->proc->pid, .pmc = m->id};
    r.value = m->s.cpu[cpu].slice;
    pmc_log_write_irqoff(m->log, &r.h, sizeof r);
    m->s.cpu[cpu].slice = 0;
}

static void sampling_switch_in(struct pmc_target *t, uint64_t now)
{
    if (t->pmc->a.flags & PMC_F_LOG_OFFCPU)
        offcpu_in(t, now, 0);
    t->pmc->s.cpu[cpu_id()].slice = 0;
}

static bool claims_time(const struct pmc_alloc *a)
{
    return !pmc_mode_is_counting(a) && a->source == ProfileTime;
}

static bool claims_hw(const struct pmc_alloc *a)
{
    return !pmc_mode_is_counting(a) && a->source != ProfileTime && !PMC_EVENT_IS_SW(a->source);
}

// The two sampling kinds differ only in their source, which the HAL hides.
#define SAMPLING_OPS(kind, claim) \
    { \
        .name = kind, .claims = claim, .allocate = sampling_allocate, .release = sampling_release, \
        .start = sampling_start, .stop = sampling_stop, .set_count = sampling_set_count, \
        .attach = sampling_attach, .detach = sampling_detach, \
        .wants_switch = sampling_wants_switch, .switch_out = sampling_switch_out, \
        .switch_in = sampling_switch_in, \
    }

const struct pmc_ops pmc_time_sampling = SAMPLING_OPS("time sampling", claims_time);
const struct pmc_ops pmc_hw_sampling = SAMPLING_OPS("hardware sampling", claims_hw);

// The sampling PMCs as a consumer of the fan-out (ke/sample.h): a plan's
// token is the chain of samplers pmc_samplers_make readies, and each sample
// the plan holds for is logged by pmc_log_sample.
static void *samplers_plan(KPROFILE_SOURCE source, const struct process *pr, unsigned cpu)
{
    return pmc_samplers_make(source, pr, cpu);
}

static const struct sample_consumer samplers_consumer = {samplers_plan, pmc_log_sample};

void pmc_sampling_init(void)
{
    pmc_kind_register(&pmc_time_sampling);
    pmc_kind_register(&pmc_hw_sampling);
    sample_consumer_register(&samplers_consumer);
}
