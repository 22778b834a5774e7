// The PMC object: allocation, attachments, the release path, and the
// process and switch events every kind shares (see hwpmc/pmc.h).
#include "pmc/hwpmc/pmc.h"

#include "lib/panic.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"

#include "core/grace.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/ramdisk.h"
#include "core/sched.h"
#include "core/smp.h"
#include "core/spinlock.h"

#include "pmc/hal/rows.h"

#include "pmc/hwpmc/log.h"
#include "pmc/ke/profile_state.h"
#include "pmc/ke/sample.h"

struct spinlock pmc_lock = SPINLOCK_INIT("pmc");
static struct mutex attach_mutex = MUTEX_INIT("pmc descendants");
static struct pmc *all_pmcs;
static uint32_t next_id = 1;
static volatile uint32_t switch_work; // targets with work at their process's switches

bool pmc_process_scope(const struct pmc *m)
{
    return m->a.mode == PMC_MODE_TS || m->a.mode == PMC_MODE_TC;
}

struct pmc *pmc_from_object(struct object *o)
{
    return (struct pmc *)o;
}

// --- allocation ------------------------------------------------------------------

static const struct pmc_ops *kinds[PMC_KINDS];
static unsigned nkinds;

void pmc_kind_register(const struct pmc_ops *kind)
{
    assert(nkinds < PMC_KINDS);
    kinds[nkinds++] = kind;
}

bool pmc_mode_is_counting(const struct pmc_alloc *a)
{
    return a->mode == PMC_MODE_SC || a->mode == PMC_MODE_TC;
}

unsigned pmc_levels(const struct pmc_alloc *a)
{
    unsigned r =
        (a->flags & PMC_F_USER ? PMC_LEVEL_USR : 0) | (a->flags & PMC_F_KERNEL ? PMC_LEVEL_OS : 0);
    if (r)
        return r;
    return pmc_mode_is_counting(a) ? PMC_LEVELS_ALL : PMC_LEVEL_USR;
}

// The kind a request names: sampling or counting, of ProfileTime, a PMU
// event or a software event.
static const struct pmc_ops *kind_of(const struct pmc_alloc *a)
{
    for (unsigned i = 0; i < nkinds; i++)
        if (kinds[i]->claims(a))
            return kinds[i];
    return NULL;
}

// hwpmc(4)'s rules that hold for every kind, in the order docs/pmc-log.md
// gives their statuses.
static NTSTATUS check_request(const struct process *owner, const struct pmc_alloc *a)
{
    bool proc = a->mode == PMC_MODE_TS || a->mode == PMC_MODE_TC;
    bool counting = pmc_mode_is_counting(a);
    if (a->mode < PMC_MODE_SS || a->mode > PMC_MODE_TC)
        return STATUS_PMC_BAD_MODE;
    if (a->flags & ~(uint32_t)PMC_F_ALL)
        return STATUS_PMC_BAD_FLAGS;
    if (!proc && (a->flags &
                  (PMC_F_DESCENDANTS | PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT | PMC_F_LOG_OFFCPU)))
        return STATUS_PMC_FLAG_NEEDS_PROCESS;
    if (counting && (a->flags & (PMC_F_CALLCHAIN | PMC_F_LOG_OFFCPU)))
        return STATUS_PMC_CALLCHAIN_COUNTING;
    if (!counting && PMC_EVENT_IS_SW(a->source))
        return STATUS_PMC_SOURCE_UNSUPPORTED; // software events are counted, not sampled
    if (!PMC_EVENT_IS_SW(a->source) && a->source >= ProfileSourceCount)
        return STATUS_PMC_UNKNOWN_SOURCE;
    if (a->cpu != PMC_CPU_ANY && (proc || a->cpu >= ncpus || !cpus[a->cpu].online))
        return STATUS_PMC_BAD_CPU;
    if (!proc && !owner->privileged)
        return STATUS_PRIVILEGE_NOT_HELD; // the whole system is seen
    return STATUS_SUCCESS;
}

static uint64_t cpu_mask(uint32_t cpu)
{
    if (cpu != PMC_CPU_ANY)
        return 1ull << cpu;
    uint64_t mask = 0;
    for (unsigned i = 0; i < ncpus; i++)
        if (cpus[i].online)
            mask |= 1ull << i;
    return mask;
}

static void pmc_destroy(struct object *o);

// A software event's row that NtPmcAdmin disabled on one of m's CPUs is
// refused (pmc_lock held: pmc/hwpmc/admin.c disables a row only while no
// PMC of its event covers the CPU, under the same lock). As hwpmc keeps
// process-scope PMCs off a STANDALONE row, a process-scope PMC needs the row
// on every CPU. Counter rows are kept from new PMCs by their reservation
// (pmc/hal/counts.c) and the HAL's claim (pmc/hal/counters.c).
static NTSTATUS row_allows(const struct pmc *m)
{
    if (!pmc_mode_is_counting(&m->a) || !PMC_EVENT_IS_SW(m->a.source))
        return STATUS_SUCCESS;
    unsigned row = pmc_row_soft((enum pmc_sw_event)(m->a.source - PMC_EVENT_SW(0)));
    for (unsigned cpu = 0; cpu < ncpus; cpu++)
        if (((m->cpus >> cpu) & 1) && pmc_row_off(cpu, row))
            return STATUS_PMC_ROW_DISABLED;
    return STATUS_SUCCESS;
}

NTSTATUS pmc_allocate(struct process *owner, const struct pmc_alloc *a, struct object **out)
{
    NTSTATUS s = check_request(owner, a);
    const struct pmc_ops *kind = kind_of(a);
    if (!NT_SUCCESS(s) || !kind)
        return NT_SUCCESS(s) ? STATUS_PMC_SOURCE_UNSUPPORTED : s;
    struct pmc *m = kzalloc(sizeof *m);
    if (!m)
        return STATUS_INSUFFICIENT_RESOURCES;
    m->ops = kind;
    m->a = *a;
    m->owner_pid = owner->pid;
    m->privileged = owner->privileged;
    m->cpus = cpu_mask(a->cpu);
    s = m->ops->allocate(m, owner);
    if (!NT_SUCCESS(s)) {
        kfree(m);
        return s;
    }
    object_init(&m->obj, OBJ_PMC, pmc_destroy);
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    s = row_allows(m);
    if (NT_SUCCESS(s)) {
        m->id = next_id++;
        m->all_next = all_pmcs;
        all_pmcs = m;
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    if (!NT_SUCCESS(s)) {
        object_unref(&m->obj); // pmc_destroy: released, and in no list
        return s;
    }
    *out = &m->obj;
    return STATUS_SUCCESS;
}

struct pmc *pmc_all_locked(void)
{
    return all_pmcs;
}

// --- attachments -------------------------------------------------------------------

struct pmc_target *pmc_target_of(const struct pmc *m, const struct process *p)
{
    unsigned n = __atomic_load_n(&m->slots, __ATOMIC_ACQUIRE);
    for (unsigned k = 0; k < n; k++) {
        struct pmc_target *t = READ_ONCE(m->targets[k]);
        if (t && t->proc == p)
            return t;
    }
    return NULL;
}

static void switch_work_set(struct pmc_target *t, bool on)
{
    if (t->switch_work == on)
        return;
    t->switch_work = on;
    profile_of(t->proc)->pmc_switch_work += on ? 1 : (uint32_t)-1;
    __atomic_fetch_add(&switch_work, on ? 1 : (uint32_t)-1, __ATOMIC_RELAXED);
}

void pmc_switch_work(struct pmc *m, bool on)
{
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k])
            switch_work_set(m->targets[k], on && m->ops->wants_switch(m));
}

// Attach p (pmc_lock held): a new target, with a reference to p. A process
// whose exit has released its targets (process_exiting) takes no new one: it
// still has its thread until the exit ends, but nothing would release it.
static NTSTATUS attach_locked(struct pmc *m, struct process *p)
{
    if (p->exited || READ_ONCE(p->killed) || !p->thread || profile_of(p)->pmc_exited)
        return STATUS_PROCESS_IS_TERMINATING;
    if (pmc_target_of(m, p))
        return STATUS_PMC_ALREADY_ATTACHED;
    unsigned k = 0;
    while (k < m->slots && m->targets[k])
        k++;
    if (k == PMC_MAX_TARGETS)
        return STATUS_PMC_TOO_MANY_TARGETS;
    struct pmc_target *t = kzalloc(sizeof *t);
    if (!t)
        return STATUS_INSUFFICIENT_RESOURCES;
    t->pmc = m;
    t->proc = p;
    t->hw = (struct pmc_count){.counter = -1, .cpu = -1}; // wanted nowhere
    NTSTATUS s = m->ops->attach(t);
    if (!NT_SUCCESS(s)) {
        kfree(t);
        return s;
    }
    object_ref(&p->obj); // p is the caller's: a reference is held (object.h)
    t->proc_next = profile_of(p)->pmc_targets;
    profile_of(p)->pmc_targets = t;
    m->ntargets++;
    if (k == m->slots)
        __atomic_store_n(&m->slots, k + 1, __ATOMIC_RELEASE); // the slot is NULL until published
    sample_publish(&m->targets[k], t);
    if (m->running)
        switch_work_set(t, m->ops->wants_switch(m));
    return STATUS_SUCCESS;
}

void pmc_give_log(struct pmc *m)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock); // a writer under it reads m->log once
    struct pmc_log *log = m->log;
    m->log = NULL;
    spin_unlock_irqrestore(&pmc_lock, f);
    if (log)
        pmc_log_unuse(log);
}

NTSTATUS pmc_attach_self(struct pmc *m, struct process *me)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    NTSTATUS s = attach_locked(m, me);
    spin_unlock_irqrestore(&pmc_lock, f);
    return s;
}

// PMC_F_DESCENDANTS: the target's current descendants too, repeated until a
// pass adds none (each pass sees the processes added by the one before).
static void attach_descendants(struct pmc *m)
{
    static struct sys_process_info list[32]; // under attach_mutex
    mutex_lock(&attach_mutex);
    for (bool added = true; added;) {
        added = false;
        for (unsigned skip = 0;; skip += 32) {
            unsigned n = process_list(list, skip, 32);
            for (unsigned i = 0; i < n; i++) {
                if (list[i].state == PROC_ZOMBIE)
                    continue;
                struct process *child = process_by_pid(list[i].pid);
                struct process *parent = process_by_pid(list[i].parent);
                uint64_t f = spin_lock_irqsave(&pmc_lock);
                if (child && parent && pmc_target_of(m, parent) && !pmc_target_of(m, child))
                    added |= NT_SUCCESS(attach_locked(m, child));
                spin_unlock_irqrestore(&pmc_lock, f);
                if (child)
                    object_unref(&child->obj);
                if (parent)
                    object_unref(&parent->obj);
            }
            if (n < 32)
                break;
        }
    }
    mutex_unlock(&attach_mutex);
}

NTSTATUS pmc_attach(struct pmc *m, struct process *caller, struct process *target)
{
    if (!pmc_process_scope(m))
        return STATUS_PMC_NOT_PROCESS_SCOPE;
    if (!process_may_control(caller, target))
        return STATUS_ACCESS_DENIED;
    NTSTATUS s = pmc_attach_self(m, target);
    if (NT_SUCCESS(s) && (m->a.flags & PMC_F_DESCENDANTS))
        attach_descendants(m);
    if (NT_SUCCESS(s) && m->ops->attached)
        m->ops->attached(m);
    return s;
}

// The release path of attachments, step 1 (pmc_lock held): t leaves its PMC's
// slots and its process's list; no switch and no new plan finds it now.
static void unlink_locked(struct pmc_target *t)
{
    struct pmc *m = t->pmc;
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k] == t)
            sample_publish(&m->targets[k], (struct pmc_target *)NULL);
    for (struct pmc_target **pp = &profile_of(t->proc)->pmc_targets; *pp; pp = &(*pp)->proc_next)
        if (*pp == t) {
            *pp = t->proc_next;
            break;
        }
    m->ntargets--;
    switch_work_set(t, false);
    t->leave_next = m->leaving;
    m->leaving = t;
}

// Step 3's end (pmc_lock held): t's count is in its PMC's totals now.
static void left_locked(struct pmc_target *t)
{
    for (struct pmc_target **pp = &t->pmc->leaving; *pp; pp = &(*pp)->leave_next)
        if (*pp == t) {
            *pp = t->leave_next;
            break;
        }
}

// Step 2, on each CPU where one of the targets' hardware counts is loaded,
// with interrupts off: the count is saved.
static void forget_on_cpu(void *arg)
{
    spin_lock(&pmc_lock);
    for (struct pmc_target *t = arg; t; t = t->proc_next)
        if (t->hw.cpu == (int)cpu_id())
            pmc_count_out(&t->hw, clock_ns());
    spin_unlock(&pmc_lock);
}

// Step 4, a grace period later (core/grace.h): no interrupt or plan still
// points into the target, which is freed.
static void free_target(struct grace_item *g)
{
    struct pmc_target *t = (struct pmc_target *)((uint8_t *)g - offsetof(struct pmc_target, grace));
    object_unref(&t->proc->obj); // the last when the process ended meanwhile
    kfree(t);
}

// Step 3: each kind keeps what its target counted (and logs an exit); then
// the targets wait for their grace period, together. list: unlinked targets
// chained by proc_next.
static void release_targets(struct pmc_target *list, bool exiting)
{
    if (!list)
        return;
    uint64_t loaded = 0;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (struct pmc_target *t = list; t; t = t->proc_next)
        if (t->hw.cpu >= 0) // unlinked: no switch loads or saves it now
            loaded |= 1ull << t->hw.cpu;
    spin_unlock_irqrestore(&pmc_lock, f);
    smp_call_many(loaded, forget_on_cpu, list);
    f = spin_lock_irqsave(&pmc_lock);
    for (struct pmc_target *t = list; t; t = t->proc_next) {
        t->pmc->ops->detach(t, exiting);
        left_locked(t);
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    while (list) {
        struct pmc_target *t = list;
        list = t->proc_next;
        grace_defer(&t->grace, free_target);
    }
}

NTSTATUS pmc_detach(struct pmc *m, struct process *caller, struct process *target)
{
    if (!pmc_process_scope(m))
        return STATUS_PMC_NOT_PROCESS_SCOPE;
    if (!process_may_control(caller, target))
        return STATUS_ACCESS_DENIED;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    struct pmc_target *t = pmc_target_of(m, target);
    if (t) {
        unlink_locked(t);
        t->proc_next = NULL;
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    if (!t)
        return STATUS_PMC_NOT_ATTACHED;
    release_targets(t, false);
    return STATUS_SUCCESS;
}

// --- the operations every kind answers -----------------------------------------------

static struct mutex pmc_mutex = MUTEX_INIT("pmc"); // start and stop, one at a time

NTSTATUS pmc_start(struct pmc *m, struct process *caller)
{
    mutex_lock(&pmc_mutex);
    NTSTATUS s = m->running ? STATUS_PMC_RUNNING : m->ops->start(m, caller);
    mutex_unlock(&pmc_mutex);
    return s;
}

NTSTATUS pmc_stop(struct pmc *m)
{
    mutex_lock(&pmc_mutex);
    NTSTATUS s = m->running ? m->ops->stop(m) : STATUS_PMC_NOT_RUNNING;
    mutex_unlock(&pmc_mutex);
    return s;
}

// An operation a kind does not have is NULL in its table: the status says
// which modes have it.
NTSTATUS pmc_set_count(struct pmc *m, uint64_t count)
{
    return m->ops->set_count ? m->ops->set_count(m, count) : STATUS_PMC_NOT_SAMPLING;
}

NTSTATUS pmc_read(struct pmc *m, struct pmc_value *out)
{
    return m->ops->read ? m->ops->read(m, out) : STATUS_PMC_NOT_COUNTING;
}

NTSTATUS pmc_write(struct pmc *m, uint64_t value)
{
    return m->ops->write ? m->ops->write(m, value) : STATUS_PMC_NOT_COUNTING;
}

NTSTATUS pmc_rdpmc_index(struct pmc *m, struct process *caller, uint32_t *index)
{
    return m->ops->rdpmc_index ? m->ops->rdpmc_index(m, caller, index) : STATUS_PMC_NOT_COUNTING;
}

// The last handle is closed: stopped, detached from everything, released.
static void pmc_destroy(struct object *o)
{
    struct pmc *m = pmc_from_object(o);
    if (m->running)
        pmc_stop(m);
    struct pmc_target *list = NULL;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (unsigned k = 0; k < m->slots; k++) {
        struct pmc_target *t = m->targets[k];
        if (t) {
            unlink_locked(t);
            t->proc_next = list;
            list = t;
        }
    }
    for (struct pmc **pp = &all_pmcs; *pp; pp = &(*pp)->all_next)
        if (*pp == m) {
            *pp = m->all_next;
            break;
        }
    spin_unlock_irqrestore(&pmc_lock, f);
    release_targets(list, false);
    m->ops->release(m);
    kfree(m);
}

// --- process and switch events ------------------------------------------------------------

// A new process: its image for the log; a child of a PMC_F_DESCENDANTS target
// becomes a target (a full table or no memory leaves the child out).
static void process_spawned(struct process *child)
{
    const struct ramdisk_file *file = ramdisk_find(child->name);
    pmc_log_map_process(child, file ? file->data : NULL, file ? file->size : 0);
    struct process *parent = process_current();
    if (!parent || parent->pid != child->parent || !READ_ONCE(profile_of(parent)->pmc_targets))
        return;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (struct pmc_target *t = profile_of(parent)->pmc_targets; t; t = t->proc_next)
        if (t->pmc->a.flags & PMC_F_DESCENDANTS)
            attach_locked(t->pmc, child);
    spin_unlock_irqrestore(&pmc_lock, f);
}

// After the process's handles are closed (its own PMCs are gone): its counts
// end here, as perf's do at exit, and every PMC lets it go.
static void process_exiting(struct process *p)
{
    struct pmc_target *list = NULL;
    struct profile_process *pp = profile_of(p);
    uint64_t f = spin_lock_irqsave(&pmc_lock); // taken even with no target: pmc_exited
    pp->pmc_exited = true;
    while (pp->pmc_targets) {
        struct pmc_target *t = pp->pmc_targets;
        unlink_locked(t);
        t->proc_next = list;
        list = t;
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    release_targets(list, true);
    pmc_log_process_gone(p);
}

static void pmc_process_event(struct process *p, enum process_event event)
{
    if (event == PROCESS_SPAWNED)
        process_spawned(p);
    else if (event == PROCESS_EXITING)
        process_exiting(p);
}

// The process leaving and the one arriving, for the kinds with switch work.
static void process_switch(struct process *out, struct process *in, uint64_t now)
{
    spin_lock(&pmc_lock);
    for (struct pmc_target *t = out ? profile_of(out)->pmc_targets : NULL; t; t = t->proc_next)
        if (t->switch_work)
            t->pmc->ops->switch_out(t, now);
    for (struct pmc_target *t = in ? profile_of(in)->pmc_targets : NULL; t; t = t->proc_next)
        if (t->switch_work)
            t->pmc->ops->switch_in(t, now);
    spin_unlock(&pmc_lock);
}

struct intr_frame pmc_switch_frame[MAX_CPUS];

// The switch watcher (core/sched.h), called while some target has switch work.
// Called through a pointer, never inlined: its frame links to the scheduler's.
static void pmc_context_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t now)
{
    struct process *out = cur->proc, *in = next->proc;
    out = out && READ_ONCE(profile_of(out)->pmc_switch_work) ? out : NULL;
    in = in && READ_ONCE(profile_of(in)->pmc_switch_work) ? in : NULL;
    if (out) { // the chain of an off-CPU record starts in the scheduler, not here
        const uint64_t *fp = __builtin_frame_address(0);
        struct intr_frame *f = &pmc_switch_frame[c->id];
        f->rip = (uint64_t)__builtin_return_address(0);
        f->rbp = fp[0];
        f->rsp = fp[0];
    }
    if (out || in)
        process_switch(out, in, now);
}

void pmc_object_init(void)
{
    nkinds = 0;
    process_watch(pmc_process_event);
    sched_watch_switches(pmc_context_switch, &switch_work);
}
