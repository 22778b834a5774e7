// PMC objects: allocation, attach/detach, start/stop and the sample dispatch
// (see pmc_alloc.h).
//
// Started PMCs form an immutable array (the running set), replaced whole on
// start and stop under pmc_mutex and read without locks by the interrupt; a
// replacement is followed by a cross-CPU call, after which no CPU still reads
// the old array or a stopped PMC. Targets are appended with a release store
// of ntargets and detached by clearing their slot: the interrupt only
// compares pointers, so a detached process is never dereferenced there.
#include "profile/pmc_alloc.h"
#include "core/ramdisk.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "arch/x86/percpu.h"
#include "pmc/hal.h"
#include "core/process.h"
#include "profile/ke_profile.h"
#include "profile/sample_log.h"
#include "profile/vcounter.h"
#include "core/smp.h"
#include "core/spinlock.h"
#include "lib/string.h"

struct pmc_set {
    unsigned n;
    struct kpmc *p[];
};

void *pmc_running_set;            // struct pmc_set *, NULL when none runs
static unsigned pmc_csw_watchers; // running PMCs with PMC_F_LOG_PROCCSW
static struct mutex pmc_mutex = MUTEX_INIT("pmc");
static struct spinlock pmc_lock = SPINLOCK_INIT("pmc targets"); // all_pmcs, targets
static struct kpmc *all_pmcs;
static uint32_t next_id = 1;

static bool process_scope(const struct kpmc *m)
{
    return m->mode == PMC_MODE_TS || m->mode == PMC_MODE_TC;
}

// --- the sample path (interrupt context) ----------------------------------------

static inline struct pmc_target *target_of(struct kpmc *m, const struct process *pr)
{
    unsigned n = __atomic_load_n(&m->ntargets, __ATOMIC_ACQUIRE);
    for (unsigned k = 0; k < n; k++)
        if (READ_ONCE(m->targets[k].p) == pr)
            return &m->targets[k];
    return NULL;
}

// Whether m samples this CPU (bit) for source while pr runs: *tg is then its
// target (NULL at system scope).
static bool samples_here(struct kpmc *m, KPROFILE_SOURCE source, uint64_t bit,
                         const struct process *pr, struct pmc_target **tg)
{
    *tg = NULL;
    if (m->source != source || !(m->cpus & bit))
        return false;
    return !process_scope(m) || (pr && (*tg = target_of(m, pr)));
}

// A sample counts for m when it is m's period-th tick on this CPU.
static inline bool take(const struct pmc_plan_entry *e, bool user)
{
    if (!user && !e->kernel)
        return false;
    uint64_t *phase = e->phase, ticks = *phase + 1;
    if (ticks < e->period) {
        *phase = ticks;
        return false;
    }
    *phase = 0;
    (*e->samples)++; // one thread per process: one CPU at a time
    (*e->slice)++;
    return true;
}

static uint64_t samples_sink[MAX_CPUS][8] __attribute__((aligned(64))); // system scope

static struct pmc_plan pmc_plans[MAX_CPUS][ProfileSourceCount];

static void make_entry(struct pmc_plan_entry *e, struct kpmc *m, struct pmc_target *tg,
                       const struct process *pr, unsigned cpu)
{
    bool chain = (m->flags & PMC_F_CALLCHAIN) != 0;
    uint32_t pid = pr ? pr->pid : 0;
    e->origin = (struct sample_origin){pid,
                                       pid,
                                       m->id,
                                       (uint16_t)cpu,
                                       (uint16_t)m->source,
                                       chain,
                                       chain ? PMCLOG_SAMPLE_CHAIN : 0};
    e->kernel = (m->flags & PMC_F_KERNEL) != 0;
    e->period = m->period;
    e->phase = &m->phase[cpu];
    e->slice = &m->slice[cpu];
    e->samples = tg ? &tg->samples : &samples_sink[cpu][0];
}

bool pmc_plan_make(KPROFILE_SOURCE source, const struct process *pr, unsigned cpu,
                   const struct pmc_plan **out)
{
    const struct pmc_set *set = __atomic_load_n(&pmc_running_set, __ATOMIC_ACQUIRE);
    struct pmc_plan *pp = &pmc_plans[cpu][source];
    pp->n = 0;
    *out = NULL;
    for (unsigned i = 0; set && i < set->n; i++) {
        struct pmc_target *tg;
        if (!samples_here(set->p[i], source, 1ull << cpu, pr, &tg))
            continue;
        if (pp->n == PMC_PLAN_MAX)
            return false;
        make_entry(&pp->e[pp->n++], set->p[i], tg, pr, cpu);
    }
    if (pp->n)
        *out = pp;
    return true;
}

// A plan of several PMCs (rare): each in turn.
static __attribute__((noinline)) void sample_each(const struct pmc_plan *pp,
                                                  const struct intr_frame *f)
{
    bool user = intr_from_user(f);
    for (unsigned i = 0; i < pp->n; i++)
        if (take(&pp->e[i], user))
            sample_log_sample(&pp->e[i].origin, f, user);
}

// Usually one PMC: its record is then this function's last act, a tail call.
void pmc_plan_sample(const struct pmc_plan *pp, const struct intr_frame *f)
{
    if (pp->n > 1) {
        sample_each(pp, f);
        return;
    }
    bool user = intr_from_user(f);
    if (take(&pp->e[0], user))
        sample_log_sample(&pp->e[0].origin, f, user);
}

void pmc_sample_interrupt(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    const struct pmc_set *set = __atomic_load_n(&pmc_running_set, __ATOMIC_ACQUIRE);
    unsigned cpu = cpu_id();
    const struct process *pr = percpu_read(current_process);
    bool user = intr_from_user(f);
    for (unsigned i = 0; set && i < set->n; i++) {
        struct pmc_target *tg;
        struct pmc_plan_entry e;
        if (!samples_here(set->p[i], source, 1ull << cpu, pr, &tg))
            continue;
        make_entry(&e, set->p[i], tg, pr, cpu);
        if (take(&e, user))
            sample_log_sample(&e.origin, f, user);
    }
}

// From switch_to with interrupts off: close the slice of the thread leaving.
void pmc_switch_out_slow(struct thread *t)
{
    const struct pmc_set *set = __atomic_load_n(&pmc_running_set, __ATOMIC_ACQUIRE);
    unsigned cpu = cpu_id();
    for (unsigned i = 0; set && i < set->n; i++) {
        struct kpmc *m = set->p[i];
        if (!(m->flags & PMC_F_LOG_PROCCSW))
            continue;
        if (t->proc && target_of(m, t->proc)) {
            struct pmclog_csw r = {.h.type = PMCLOG_CSW, .pid = t->proc->pid, .pmc = m->id};
            r.samples = m->slice[cpu];
            sample_log_write_irqoff(&r.h, sizeof r);
        }
        m->slice[cpu] = 0;
    }
}

// --- the running set -------------------------------------------------------------

static void barrier_on_cpu(void *arg)
{
    UNUSED(arg);
}

// Publish a copy of the running set with add added or remove removed.
static NTSTATUS set_change(struct kpmc *add, struct kpmc *remove)
{
    const struct pmc_set *old = pmc_running_set;
    unsigned n = old ? old->n : 0, k = 0;
    if (add && n >= PMC_MAX_RUNNING)
        return STATUS_PMC_TOO_MANY_RUNNING;
    struct pmc_set *set = NULL;
    unsigned size = n + (add ? 1 : 0) - (remove ? 1 : 0);
    if (size) {
        set = kmalloc(sizeof *set + size * sizeof set->p[0]);
        if (!set)
            return STATUS_INSUFFICIENT_RESOURCES;
        for (unsigned i = 0; i < n; i++)
            if (old->p[i] != remove)
                set->p[k++] = old->p[i];
        if (add)
            set->p[k++] = add;
        set->n = k;
    }
    __atomic_store_n(&pmc_running_set, set, __ATOMIC_RELEASE);
    ke_profile_replan();                // every CPU's plans are stale
    smp_call_all(barrier_on_cpu, NULL); // nobody reads old (or remove through it) now
    kfree((void *)old);
    return STATUS_SUCCESS;
}

bool pmc_sampling_running(void)
{
    const struct pmc_set *set = __atomic_load_n(&pmc_running_set, __ATOMIC_ACQUIRE);
    return set && set->n;
}

// --- operations ------------------------------------------------------------------

static void detach_all(struct kpmc *m)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (unsigned k = 0; k < m->ntargets; k++) {
        struct process *p = m->targets[k].p;
        m->targets[k].p = NULL;
        ke_profile_replan();
        if (p)
            object_unref(&p->obj); // never the last: the process list holds processes alive
    }
    for (struct kpmc **pp = &all_pmcs; *pp; pp = &(*pp)->all_next)
        if (*pp == m) {
            *pp = m->all_next;
            break;
        }
    spin_unlock_irqrestore(&pmc_lock, f);
}

static void pmc_destroy(struct object *o)
{
    struct kpmc *m = (struct kpmc *)o;
    if (m->running)
        pmc_stop(m);
    detach_all(m);
    kfree(m);
}

// Counting: ProfileTime's events are its ticks (the software event
// profile-ticks); software events are the kernel's own counts; the other
// sources count on the PMU's counters (vcounter.c).
static NTSTATUS allocate_counting(struct process *owner, const struct pmc_alloc *a, bool proc,
                                  struct object **out)
{
    struct pmc_alloc c = *a;
    bool time = c.source == ProfileTime;
    if (time)
        c.source = PMC_EVENT_SW(PMC_SW_PROFILE_TICKS);
    else if (!PMC_EVENT_IS_SW(c.source) && c.source >= ProfileSourceCount)
        return STATUS_PMC_UNKNOWN_SOURCE;
    if (c.cpu != PMC_CPU_ANY && (proc || c.cpu >= ncpus || !cpus[c.cpu].online))
        return STATUS_PMC_BAD_CPU;
    if (!proc && !owner->privileged)
        return STATUS_PRIVILEGE_NOT_HELD;
    c.flags &= ~(uint32_t)PMC_F_KERNEL; // counts are of both rings (docs/counting.md)
    struct pmc *p;
    NTSTATUS s = vcounter_allocate(&c, owner, time, &p);
    if (NT_SUCCESS(s))
        *out = vcounter_object(p);
    return s;
}

NTSTATUS pmc_allocate(struct process *owner, const struct pmc_alloc *a, struct object **out)
{
    bool proc = a->mode == PMC_MODE_TS || a->mode == PMC_MODE_TC;
    bool count_mode = a->mode == PMC_MODE_SC || a->mode == PMC_MODE_TC;
    if (a->mode < PMC_MODE_SS || a->mode > PMC_MODE_TC)
        return STATUS_PMC_BAD_MODE;
    if (a->flags & ~(uint32_t)PMC_F_ALL)
        return STATUS_PMC_BAD_FLAGS;
    if (!proc && (a->flags & (PMC_F_DESCENDANTS | PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT)))
        return STATUS_PMC_FLAG_NEEDS_PROCESS;
    if (count_mode && (a->flags & PMC_F_CALLCHAIN))
        return STATUS_PMC_CALLCHAIN_COUNTING;
    if (count_mode)
        return allocate_counting(owner, a, proc, out);
    if (PMC_EVENT_IS_SW(a->source))
        return STATUS_PMC_SOURCE_UNSUPPORTED; // software events are counted, not sampled
    if (a->source >= ProfileSourceCount)
        return STATUS_PMC_UNKNOWN_SOURCE;
    struct hal_profile_source_details d;
    if (!NT_SUCCESS(HalQueryProfileSource((KPROFILE_SOURCE)a->source, &d)) || !d.supported)
        return STATUS_PMC_SOURCE_UNSUPPORTED;
    uint64_t mask = 0;
    for (unsigned i = 0; i < ncpus; i++)
        if (cpus[i].online)
            mask |= 1ull << i;
    if (a->cpu != PMC_CPU_ANY) {
        if (proc || a->cpu >= ncpus || !(mask & (1ull << a->cpu)))
            return STATUS_PMC_BAD_CPU;
        mask = 1ull << a->cpu;
    }
    if ((!proc || (a->flags & PMC_F_KERNEL)) && !owner->privileged)
        return STATUS_PRIVILEGE_NOT_HELD; // system scope, or kernel-mode samples
    if (a->count && a->count < d.min_interval)
        return STATUS_PMC_COUNT_TOO_SMALL;
    if (a->count > d.max_interval)
        return STATUS_PMC_COUNT_TOO_LARGE;
    struct kpmc *m = kzalloc(sizeof *m);
    if (!m)
        return STATUS_INSUFFICIENT_RESOURCES;
    object_init(&m->obj, OBJ_PMC, pmc_destroy);
    m->source = (KPROFILE_SOURCE)a->source;
    m->mode = a->mode;
    m->flags = a->flags;
    m->cpus = mask;
    m->count = a->count;
    m->owner = owner;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    m->id = next_id++;
    m->all_next = all_pmcs;
    all_pmcs = m;
    spin_unlock_irqrestore(&pmc_lock, f);
    *out = &m->obj;
    return STATUS_SUCCESS;
}

// Add p (pmc_lock held). A new reference is taken.
static NTSTATUS add_target(struct kpmc *m, struct process *p)
{
    if (target_of(m, p))
        return STATUS_PMC_ALREADY_ATTACHED;
    unsigned k = 0;
    while (k < m->ntargets && m->targets[k].p)
        k++;
    if (k == PMC_MAX_TARGETS)
        return STATUS_PMC_TOO_MANY_TARGETS;
    object_ref(&p->obj);
    m->targets[k].samples = 0;
    __atomic_store_n(&m->targets[k].p, p, __ATOMIC_RELEASE);
    if (k == m->ntargets)
        __atomic_store_n(&m->ntargets, k + 1, __ATOMIC_RELEASE);
    ke_profile_replan();
    return STATUS_SUCCESS;
}

NTSTATUS pmc_attach(struct kpmc *m, struct process *caller, struct process *target)
{
    if (!process_scope(m))
        return STATUS_PMC_NOT_PROCESS_SCOPE;
    if (!process_may_control(caller, target))
        return STATUS_ACCESS_DENIED;
    if (target->exited || READ_ONCE(target->killed))
        return STATUS_PROCESS_IS_TERMINATING;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    NTSTATUS s = add_target(m, target);
    spin_unlock_irqrestore(&pmc_lock, f);
    if (!NT_SUCCESS(s) || !(m->flags & PMC_F_DESCENDANTS))
        return s;
    // The target's current descendants: repeat until no process is added.
    static struct sys_process_info list[32]; // under pmc_mutex
    mutex_lock(&pmc_mutex);
    for (bool added = true; added;) {
        added = false;
        for (unsigned skip = 0;; skip += 32) {
            unsigned n = process_list(list, skip, 32);
            for (unsigned i = 0; i < n; i++) {
                if (list[i].state == PROC_ZOMBIE)
                    continue;
                struct process *child = process_by_pid(list[i].pid), *parent;
                if (!child)
                    continue;
                parent = process_by_pid(list[i].parent);
                f = spin_lock_irqsave(&pmc_lock);
                if (parent && target_of(m, parent) && !target_of(m, child))
                    added |= NT_SUCCESS(add_target(m, child));
                spin_unlock_irqrestore(&pmc_lock, f);
                object_unref(&child->obj);
                if (parent)
                    object_unref(&parent->obj);
            }
            if (n < 32)
                break;
        }
    }
    mutex_unlock(&pmc_mutex);
    return STATUS_SUCCESS;
}

NTSTATUS pmc_detach(struct kpmc *m, struct process *target)
{
    if (!process_scope(m))
        return STATUS_PMC_NOT_PROCESS_SCOPE;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    struct pmc_target *tg = target_of(m, target);
    if (tg)
        __atomic_store_n(&tg->p, NULL, __ATOMIC_RELEASE);
    ke_profile_replan();
    spin_unlock_irqrestore(&pmc_lock, f);
    if (!tg)
        return STATUS_PMC_NOT_ATTACHED;
    object_unref(&target->obj);
    return STATUS_SUCCESS;
}

NTSTATUS pmc_set_count(struct kpmc *m, uint64_t count)
{
    struct hal_profile_source_details d;
    HalQueryProfileSource(m->source, &d);
    if (m->running)
        return STATUS_PMC_RUNNING;
    if (count < d.min_interval)
        return STATUS_PMC_COUNT_TOO_SMALL;
    if (count > d.max_interval)
        return STATUS_PMC_COUNT_TOO_LARGE;
    m->count = count;
    return STATUS_SUCCESS;
}

NTSTATUS pmc_start(struct kpmc *m, struct process *caller)
{
    mutex_lock(&pmc_mutex);
    NTSTATUS s = STATUS_SUCCESS;
    bool any = !process_scope(m);
    for (unsigned k = 0; k < m->ntargets; k++)
        any |= m->targets[k].p != NULL;
    if (m->running)
        s = STATUS_PMC_RUNNING;
    else if (!any)
        s = STATUS_PMC_NO_TARGET;
    else if (!sample_log_owned_by(caller))
        s = STATUS_PMC_NO_LOG;
    if (NT_SUCCESS(s))
        s = KeReferenceProfileSource(m->source);
    if (!NT_SUCCESS(s)) {
        mutex_unlock(&pmc_mutex);
        return s;
    }
    uint64_t interval = KeQueryIntervalProfile(m->source);
    m->period = m->count && interval ? MAX((m->count + interval / 2) / interval, 1ull) : 1;
    memset(m->phase, 0, sizeof m->phase);
    memset(m->slice, 0, sizeof m->slice);
    m->running = true; // before publishing: pmc_sampling_running must see it
    s = set_change(m, NULL);
    if (!NT_SUCCESS(s)) {
        m->running = false;
        KeDereferenceProfileSource(m->source);
    } else if (m->flags & PMC_F_LOG_PROCCSW) {
        __atomic_fetch_add(&pmc_csw_watchers, 1, __ATOMIC_RELAXED);
    }
    mutex_unlock(&pmc_mutex);
    return s;
}

// Stopping cannot fail for want of memory: the PMC is taken out in place.
NTSTATUS pmc_stop(struct kpmc *m)
{
    mutex_lock(&pmc_mutex);
    if (!m->running) {
        mutex_unlock(&pmc_mutex);
        return STATUS_PMC_NOT_RUNNING;
    }
    if (!NT_SUCCESS(set_change(NULL, m))) {
        struct pmc_set *set = pmc_running_set; // no memory: remove it from the live array
        unsigned k = 0;
        for (unsigned i = 0; i < set->n; i++)
            if (set->p[i] != m)
                set->p[k++] = set->p[i];
        __atomic_store_n(&set->n, k, __ATOMIC_RELEASE);
        ke_profile_replan();
        smp_call_all(barrier_on_cpu, NULL);
    }
    if (m->flags & PMC_F_LOG_PROCCSW)
        __atomic_fetch_sub(&pmc_csw_watchers, 1, __ATOMIC_RELAXED);
    m->running = false;
    NTSTATUS s = KeDereferenceProfileSource(m->source); // stopped whatever it answers
    mutex_unlock(&pmc_mutex);
    return s;
}

// --- process hooks ---------------------------------------------------------------

static void pmc_process_spawned(struct process *child, struct process *parent, const uint8_t *elf,
                                size_t size)
{
    sample_log_map_process(child, elf, size);
    if (!parent || !READ_ONCE(all_pmcs))
        return;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (struct kpmc *m = all_pmcs; m; m = m->all_next)
        if ((m->flags & PMC_F_DESCENDANTS) && target_of(m, parent))
            add_target(m, child); // a full table leaves the child out
    spin_unlock_irqrestore(&pmc_lock, f);
}

// After the process's handles are closed (its own PMCs are gone).
static void pmc_process_exit(struct process *p, int status)
{
    struct process *drop[8];
    unsigned ndrop = 0;
    if (READ_ONCE(all_pmcs)) {
        for (bool again = true; again;) { // at most 8 references dropped per pass
            again = false;
            uint64_t f = spin_lock_irqsave(&pmc_lock);
            for (struct kpmc *m = all_pmcs; m && !again; m = m->all_next) {
                struct pmc_target *tg = target_of(m, p);
                if (!tg)
                    continue;
                if (m->running && (m->flags & PMC_F_LOG_PROCEXIT)) {
                    struct pmclog_exit r = {.h.type = PMCLOG_EXIT, .pid = p->pid, .pmc = m->id};
                    r.status = status;
                    r.samples = tg->samples;
                    sample_log_write_irqoff(&r.h, sizeof r);
                }
                __atomic_store_n(&tg->p, NULL, __ATOMIC_RELEASE);
                ke_profile_replan();
                drop[ndrop++] = p;
                again = ndrop == ARRAY_SIZE(drop);
            }
            spin_unlock_irqrestore(&pmc_lock, f);
            while (ndrop)
                object_unref(&drop[--ndrop]->obj);
        }
    }
    sample_log_process_gone(p);
}

// The process watcher (core/process.h): a new process's image and
// descendants, an exiting one's records, totals and detaches, for sampling
// and counting PMCs alike.
static void pmc_process_event(struct process *p, enum process_event event)
{
    if (event == PROCESS_SPAWNED) {
        const struct ramdisk_file *f = ramdisk_find(p->name);
        struct process *parent = process_current();
        pmc_process_spawned(p, parent, f ? f->data : NULL, f ? f->size : 0);
        if (parent && parent->pid == p->parent)
            vcounter_process_spawned(parent, p);
    } else if (event == PROCESS_EXITING) {
        vcounter_process_exit(p); // counts end here, as perf's do at exit
        pmc_process_exit(p, p->exit_status);
    } else if (event == PROCESS_DESTROYED) {
        vcounter_process_gone(p);
    }
}

// The context-switch hook (core/sched.h): each check a load when idle.
static void pmc_context_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t now)
{
    if (__atomic_load_n(&pmc_csw_watchers, __ATOMIC_RELAXED))
        pmc_switch_out_slow(cur);
    if (READ_ONCE(vcounter_switch_hooks))
        vcounter_switch(c, cur, next, now);
}

void pmc_alloc_init(void)
{
    process_watch(pmc_process_event);
    __atomic_store_n(&sched_switch_hook, pmc_context_switch, __ATOMIC_RELEASE);
    vcounter_init();
}
