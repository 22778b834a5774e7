// Counting PMCs: process scope (virtual counters that follow a process across
// switches and CPUs) and system scope (per CPU, or summed). Their log records
// go to the counting log (cswitch_log.c).
//
// Software events are always counted per thread and per CPU (swevent.h), so a
// software PMC is a set of baselines: its value is what its targets (or CPUs)
// counted since the start. A hardware PMC reserves a counter row for its scope
// (pmc/count.h) and keeps one struct pmc_count per target (process scope) or
// per CPU (system scope): a target's count is loaded when its process switches
// in and saved when it switches out, on whatever CPU; a CPU's count is loaded
// there from start to stop. Where the PMU cannot count the event (no PMU under
// TCG) allocation fails and SysProfileSources gives the HAL's reason.
//
// One lock (pmc_lock, taken with interrupts off) guards every PMC's fields and
// the target lists. switch_to takes it only when vcounter_switch_hooks says a
// switch has work; it nests inside the run-queue lock, and nothing holding it
// calls into the scheduler. A pmc_count is touched only on the CPU that
// wants it (pmc/count.h), so start, stop, detach and read reach the CPUs
// with smp_call_all, outside the lock.
#include "profile/vcounter.h"
#include "profile/ke_profile.h"
#include "arch/x86/cpu.h"
#include "arch/x86/clock.h"
#include "core/heap.h"
#include "lib/panic.h"
#include "core/object.h"
#include "core/process.h"
#include "core/swevent.h"
#include "core/smp.h"
#include "core/spinlock.h"
#include "lib/string.h"
#include "pmc/counting.h"
#include "profile/cswitch_log.h"

struct pmc_target {
    struct pmc_target *pmc_next;  // the PMC's targets
    struct pmc_target *proc_next; // the process's PMCs
    struct pmc *pmc;
    struct process *proc; // no reference: unlinked at exit or destroy
    uint64_t base;        // the process's running total when this count began
    uint64_t counted;     // counted before that (earlier start/stop periods)
    uint64_t csw_base;    // PMC_F_LOG_PROCCSW: total at the last switch-in
    struct pmc_count hw;  // hardware PMCs: the process's virtual counter
};

struct pmc {
    struct object obj;
    uint64_t id;
    struct pmc_alloc a;
    uint32_t owner_pid;
    bool started, software;
    bool runs_profile_time; // counts ProfileTime's ticks: the source runs while started
    bool user_read;         // its owner reads it with rdpmc (NtPmcGetMsr)
    unsigned row;           // hardware: the reserved counter row
    uint64_t value;         // counted by targets that are gone, plus the written value
    uint64_t enabled_ns;    // before the current start (hardware: of targets gone)
    uint64_t running_ns;    // hardware: of targets gone
    uint64_t started_ns;    // clock at the current start
    struct pmc_target *targets;
    uint32_t ntargets;
    uint64_t cpu_base[MAX_CPUS]; // system scope, software: each CPU's total at the start
    struct pmc_count *cpu_hw;    // system scope, hardware: [ncpus]
};

static struct spinlock pmc_lock = SPINLOCK_INIT("counting pmcs");
static uint64_t next_id = 1;
volatile uint32_t vcounter_switch_hooks;

// Switch-time work: PMC_F_LOG_PROCCSW records, and a hardware process-scope
// count to load and save.
static bool wants_switch_work(const struct pmc *p)
{
    return (p->a.flags & PMC_F_LOG_PROCCSW) || (!p->software && p->a.mode == PMC_MODE_TC);
}

// ---- values ----

// A live process's running total of the PMC's software event (pmc_lock held).
static uint64_t process_total(const struct pmc *p, const struct process *proc)
{
    struct thread *t = READ_ONCE(proc->thread);
    if (!t || !p->software)
        return 0;
    return swevent_thread_value(t, (enum pmc_sw_event)(p->a.source - PMC_EVENT_SW(0)));
}

static uint64_t target_value(const struct pmc *p, const struct pmc_target *t)
{
    if (!p->software)
        return READ_ONCE(t->hw.value); // as of its last switch-out or sync
    uint64_t v = t->counted;
    if (p->started) {
        uint64_t now = process_total(p, t->proc);
        v += now >= t->base ? now - t->base : 0;
    }
    return v;
}

static bool cpu_in(const struct pmc *p, unsigned cpu)
{
    return p->a.cpu == PMC_CPU_ANY || p->a.cpu == cpu;
}

static uint64_t cpu_total(const struct pmc *p, unsigned cpu)
{
    if (!p->software)
        return 0; // hardware: the count of each CPU (cpu_hw)
    return swevent_cpu_value(cpu, (enum pmc_sw_event)(p->a.source - PMC_EVENT_SW(0)));
}

static uint64_t value_locked(const struct pmc *p)
{
    uint64_t v = p->value;
    if (p->a.mode == PMC_MODE_TC) {
        for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
            v += target_value(p, t);
    } else if (!p->software) {
        for (unsigned c = 0; c < ncpus; c++)
            v += READ_ONCE(p->cpu_hw[c].value);
    } else if (p->started) {
        for (unsigned c = 0; c < ncpus; c++)
            if (cpu_in(p, c))
                v += cpu_total(p, c) - p->cpu_base[c];
    }
    return v;
}

// Time enabled and running. Software counts always run; a hardware count is
// enabled while its target runs (or, system scope, while started: CPU time
// summed over its CPUs) and running while it is on a counter.
static void times_locked(const struct pmc *p, uint64_t *enabled, uint64_t *running)
{
    if (p->software) {
        *enabled = *running = p->enabled_ns + (p->started ? clock_ns() - p->started_ns : 0);
        return;
    }
    *enabled = p->enabled_ns;
    *running = p->running_ns;
    for (struct pmc_target *t = p->targets; t; t = t->pmc_next) {
        *enabled += READ_ONCE(t->hw.enabled_ns);
        *running += READ_ONCE(t->hw.running_ns);
    }
    for (unsigned c = 0; p->cpu_hw && c < ncpus; c++) {
        *enabled += READ_ONCE(p->cpu_hw[c].enabled_ns);
        *running += READ_ONCE(p->cpu_hw[c].running_ns);
    }
}

// What a gone target counted stays in the PMC's totals.
static void fold_target(struct pmc *p, const struct pmc_target *t)
{
    p->value += target_value(p, t);
    p->enabled_ns += p->software ? 0 : t->hw.enabled_ns;
    p->running_ns += p->software ? 0 : t->hw.running_ns;
}

// ---- hardware counts on each CPU (interrupts off, pmc_lock held) ----

static void hw_in_here(struct pmc *p, uint64_t now)
{
    unsigned cpu = cpu_id();
    if (p->a.mode == PMC_MODE_SC) {
        if (cpu_in(p, cpu))
            pmc_count_in(&p->cpu_hw[cpu], now);
        return;
    }
    struct process *running = cpus[cpu].current->proc;
    for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
        if (t->proc == running)
            pmc_count_in(&t->hw, now);
}

static void hw_out_here(struct pmc_count *c, uint64_t now)
{
    if (c->cpu == (int)cpu_id())
        pmc_count_out(c, now);
}

static void start_on_cpu(void *arg)
{
    struct pmc *p = arg;
    spin_lock(&pmc_lock);
    if (p->started)
        hw_in_here(p, clock_ns());
    spin_unlock(&pmc_lock);
}

static void stop_on_cpu(void *arg)
{
    struct pmc *p = arg;
    uint64_t now = clock_ns();
    spin_lock(&pmc_lock);
    for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
        hw_out_here(&t->hw, now);
    if (p->cpu_hw)
        hw_out_here(&p->cpu_hw[cpu_id()], now);
    spin_unlock(&pmc_lock);
}

static void target_out_on_cpu(void *arg)
{
    spin_lock(&pmc_lock);
    hw_out_here(arg, clock_ns());
    spin_unlock(&pmc_lock);
}

static void sync_on_cpu(void *arg)
{
    UNUSED(arg);
    pmc_count_sync(clock_ns());
}

// Make sure no CPU has a target's count loaded (the target is unlinked: no
// switch loads it again).
static void hw_forget(const struct pmc *p, struct pmc_target *t)
{
    if (!p->software && READ_ONCE(t->hw.cpu) >= 0)
        smp_call_all(target_out_on_cpu, &t->hw);
}

// The scheduler tick (core/sched.h): rotate multiplexed counts.
static void vcounter_tick(void)
{
    if (pmc_count_multiplexing())
        pmc_count_tick(clock_ns());
}

void vcounter_init(void)
{
    __atomic_store_n(&sched_tick_hook, vcounter_tick, __ATOMIC_RELEASE);
}

// ---- the object ----

static void unlink_target(struct pmc_target *t)
{
    struct process *proc = t->proc;
    for (struct pmc_target **pp = &proc->pmc_targets; *pp; pp = &(*pp)->proc_next)
        if (*pp == t) {
            *pp = t->proc_next;
            break;
        }
    for (struct pmc_target **pp = &t->pmc->targets; *pp; pp = &(*pp)->pmc_next)
        if (*pp == t) {
            *pp = t->pmc_next;
            break;
        }
    t->pmc->ntargets--;
    if (t->pmc->started && wants_switch_work(t->pmc)) {
        proc->pmc_switch_work--;
        __atomic_fetch_sub(&vcounter_switch_hooks, 1, __ATOMIC_RELAXED);
    }
}

static void pmc_destroy(struct object *o)
{
    struct pmc *p = (struct pmc *)o;
    if (p->started)
        vcounter_stop(p); // the last handle closed: stops it, and its source
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    while (p->targets) { // stopped: no hardware count is loaded anywhere
        struct pmc_target *t = p->targets;
        unlink_target(t);
        kfree(t);
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    if (!p->software)
        pmc_row_release(p->row);
    kfree(p->cpu_hw);
    kfree(p);
}

struct object *vcounter_object(struct pmc *pmc)
{
    return &pmc->obj;
}

struct pmc *vcounter_from_object(struct object *o)
{
    return (struct pmc *)o;
}

NTSTATUS vcounter_allocate(const struct pmc_alloc *a, struct process *owner, bool runs_profile_time,
                           struct pmc **out)
{
    bool sw = PMC_EVENT_IS_SW(a->source);
    if (!sw && a->source >= ProfileSourceCount)
        return STATUS_INVALID_PARAMETER;
    if (a->mode != PMC_MODE_SC && a->mode != PMC_MODE_TC)
        return STATUS_INVALID_PARAMETER;
    if (a->flags & ~(uint32_t)PMC_F_ALL)
        return STATUS_INVALID_PARAMETER;
    if (a->mode == PMC_MODE_SC) {
        if (a->flags) // the flags are process-scope modifiers (hwpmc(4))
            return STATUS_INVALID_PARAMETER;
        if (a->cpu != PMC_CPU_ANY && (a->cpu >= ncpus || !cpus[a->cpu].online))
            return STATUS_INVALID_PARAMETER;
        if (!owner->privileged) // system-wide counting needs the privilege, as sampling does
            return STATUS_PRIVILEGE_NOT_HELD;
    } else if (a->cpu != PMC_CPU_ANY) {
        return STATUS_INVALID_PARAMETER; // a process-scope PMC follows its targets
    }
    struct pmc *p = kzalloc(sizeof *p);
    if (!p)
        return STATUS_NO_MEMORY;
    if (!sw) {
        const char *why;
        enum pmc_row_scope scope = a->mode == PMC_MODE_TC ? PMC_ROW_THREAD : PMC_ROW_SYSTEM;
        NTSTATUS s = pmc_row_reserve((KPROFILE_SOURCE)a->source, scope, &p->row, &why);
        if (NT_SUCCESS(s) && scope == PMC_ROW_SYSTEM) {
            p->cpu_hw = kzalloc(ncpus * sizeof *p->cpu_hw);
            if (!p->cpu_hw) {
                pmc_row_release(p->row);
                s = STATUS_NO_MEMORY;
            }
            for (unsigned c = 0; p->cpu_hw && c < ncpus; c++)
                pmc_count_init(&p->cpu_hw[c], (KPROFILE_SOURCE)a->source, p->row, false);
        }
        if (!NT_SUCCESS(s)) {
            kfree(p); // unsupported: SysProfileSources gives the HAL's reason
            return s == STATUS_NOT_SUPPORTED ? STATUS_PMC_COUNTING_UNSUPPORTED : s;
        }
    }
    object_init(&p->obj, OBJ_COUNTING_PMC, pmc_destroy);
    p->a = *a;
    p->software = sw;
    p->runs_profile_time = runs_profile_time;
    p->owner_pid = owner->pid;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    p->id = next_id++;
    spin_unlock_irqrestore(&pmc_lock, f);
    *out = p;
    return STATUS_SUCCESS;
}

static struct pmc_target *find_target(struct pmc *p, struct process *proc)
{
    for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
        if (t->proc == proc)
            return t;
    return NULL;
}

// Begin counting for t at its process's current total (pmc_lock held).
static void target_begin(struct pmc_target *t)
{
    t->base = process_total(t->pmc, t->proc);
    t->csw_base = t->pmc->software ? t->base : t->hw.value;
    if (wants_switch_work(t->pmc)) {
        t->proc->pmc_switch_work++;
        __atomic_fetch_add(&vcounter_switch_hooks, 1, __ATOMIC_RELAXED);
    }
}

static void target_end(struct pmc_target *t)
{
    if (t->pmc->software)
        t->counted = target_value(t->pmc, t);
    if (wants_switch_work(t->pmc)) {
        t->proc->pmc_switch_work--;
        __atomic_fetch_sub(&vcounter_switch_hooks, 1, __ATOMIC_RELAXED);
    }
}

static NTSTATUS attach_locked(struct pmc *p, struct process *proc)
{
    if (proc->exited || !proc->thread)
        return STATUS_PROCESS_IS_TERMINATING;
    if (find_target(p, proc))
        return STATUS_PMC_ALREADY_ATTACHED; // hwpmc: EEXIST
    if (p->user_read)
        return STATUS_PMC_READ_IN_RING3; // hwpmc: EPERM after PMC_OP_PMCX86GETMSR
    struct pmc_target *t = kzalloc(sizeof *t);
    if (!t)
        return STATUS_NO_MEMORY;
    t->hw = (struct pmc_count){.counter = -1, .cpu = -1}; // wanted nowhere
    if (!p->software)
        pmc_count_init(&t->hw, (KPROFILE_SOURCE)p->a.source, p->row, false);
    t->pmc = p;
    t->proc = proc;
    t->pmc_next = p->targets;
    p->targets = t;
    p->ntargets++;
    t->proc_next = proc->pmc_targets;
    proc->pmc_targets = t;
    if (p->started)
        target_begin(t);
    return STATUS_SUCCESS;
}

NTSTATUS vcounter_attach(struct pmc *p, struct process *proc)
{
    if (p->a.mode != PMC_MODE_TC)
        return STATUS_PMC_NOT_PROCESS_SCOPE;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    NTSTATUS s = attach_locked(p, proc);
    spin_unlock_irqrestore(&pmc_lock, f);
    return s;
}

NTSTATUS vcounter_detach(struct pmc *p, struct process *proc)
{
    if (p->a.mode != PMC_MODE_TC)
        return STATUS_PMC_NOT_PROCESS_SCOPE;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    struct pmc_target *t = find_target(p, proc);
    if (t && p->software)
        fold_target(p, t); // a software total is read from the live process
    if (t)
        unlink_target(t);
    spin_unlock_irqrestore(&pmc_lock, f);
    if (!t)
        return STATUS_PMC_NOT_ATTACHED;
    hw_forget(p, t);
    f = spin_lock_irqsave(&pmc_lock);
    if (!p->software)
        fold_target(p, t); // saved at last by hw_forget
    spin_unlock_irqrestore(&pmc_lock, f);
    kfree(t);
    return STATUS_SUCCESS;
}

NTSTATUS vcounter_start(struct pmc *p)
{
    // Counting ProfileTime runs it, as sampling does (outside the spinlock:
    // starting a source calls every CPU).
    bool source = READ_ONCE(p->runs_profile_time) && !READ_ONCE(p->started);
    if (source) {
        NTSTATUS s = KeReferenceProfileSource(ProfileTime);
        if (!NT_SUCCESS(s))
            return s;
    }
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    NTSTATUS s = STATUS_SUCCESS;
    if (p->started) {
        s = STATUS_PMC_RUNNING;
    } else if (p->a.mode == PMC_MODE_TC && !p->targets) {
        // hwpmc attaches an unattached process-scope PMC to its owner at start.
        struct process *me = process_current();
        s = me->pid == p->owner_pid ? attach_locked(p, me) : STATUS_PMC_NO_TARGET;
    }
    if (NT_SUCCESS(s)) {
        p->started = true;
        p->started_ns = clock_ns();
        for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
            target_begin(t);
        for (unsigned c = 0; p->a.mode == PMC_MODE_SC && c < ncpus; c++)
            p->cpu_base[c] = cpu_total(p, c);
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    if (source && !NT_SUCCESS(s))
        KeDereferenceProfileSource(ProfileTime);
    // Load the hardware counts where a target runs now (elsewhere its next
    // switch-in does it) or, system scope, on every CPU counted.
    if (NT_SUCCESS(s) && !p->software)
        smp_call_all(start_on_cpu, p);
    return s;
}

NTSTATUS vcounter_stop(struct pmc *p)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    NTSTATUS s = STATUS_SUCCESS;
    if (!p->started) {
        s = STATUS_PMC_NOT_RUNNING;
    } else if (p->software) {
        if (p->a.mode == PMC_MODE_SC)
            p->value = value_locked(p);
        for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
            target_end(t);
        p->enabled_ns += clock_ns() - p->started_ns;
        p->started = false;
    } else {
        p->started = false; // no switch loads its counts from here on
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    if (NT_SUCCESS(s) && !p->software) {
        // Save the counts still loaded, then end the targets' switch work:
        // until then a target switching out saves its own.
        smp_call_all(stop_on_cpu, p);
        f = spin_lock_irqsave(&pmc_lock);
        for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
            target_end(t);
        spin_unlock_irqrestore(&pmc_lock, f);
    }
    if (NT_SUCCESS(s) && p->runs_profile_time)
        s = KeDereferenceProfileSource(ProfileTime);
    return s;
}

NTSTATUS vcounter_read(struct pmc *p, struct pmc_value *out)
{
    if (!p->software && READ_ONCE(p->started))
        smp_call_all(sync_on_cpu, NULL); // loaded counts: values up to now
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    memset(out, 0, sizeof *out);
    out->value = value_locked(p);
    times_locked(p, &out->time_enabled, &out->time_running);
    out->targets = p->ntargets;
    unsigned users = 0;
    if (!p->software)
        pmc_row_scope(p->row, &users);
    out->row = users == 1 ? p->row : 0xFFFFFFFFu; // its own counter, or none (shared)
    spin_unlock_irqrestore(&pmc_lock, f);
    return STATUS_SUCCESS;
}

// hwpmc's PMC_OP_PMCRW write: only a stopped PMC (EBUSY otherwise); the value
// becomes the count, and targets start again from zero.
NTSTATUS vcounter_write(struct pmc *p, uint64_t value)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    NTSTATUS s = STATUS_SUCCESS;
    if (p->started) {
        s = STATUS_PMC_RUNNING;
    } else {
        p->value = value;
        for (struct pmc_target *t = p->targets; t; t = t->pmc_next)
            t->counted = t->hw.value = 0;
        for (unsigned c = 0; p->cpu_hw && c < ncpus; c++)
            p->cpu_hw[c].value = 0;
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    return s;
}

// hwpmc's PMC_OP_PMCX86GETMSR: process scope, no PMC_F_DESCENDANTS, attached
// only to its owner, on a counter row of its own (pinned: it stays the same
// counter while the owner runs). From then on CR4.PCE is set whenever the
// owner runs with the count loaded, and other processes cannot be attached.
NTSTATUS vcounter_rdpmc_index(struct pmc *p, struct process *caller, uint32_t *index)
{
    if (p->software)
        return STATUS_NOT_SUPPORTED; // no counter register to read
    if (p->a.mode != PMC_MODE_TC || (p->a.flags & PMC_F_DESCENDANTS))
        return STATUS_INVALID_PARAMETER;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    struct pmc_target *t = p->targets;
    NTSTATUS s = STATUS_SUCCESS;
    if (p->owner_pid != caller->pid || p->ntargets != 1 || t->proc != caller)
        s = STATUS_INVALID_PARAMETER;
    else if (!p->user_read && !pmc_row_pin(p->row))
        s = STATUS_PMC_ROW_SHARED;
    if (NT_SUCCESS(s) && !p->user_read) {
        p->user_read = t->hw.user_read = true;
        if (t->hw.cpu == (int)cpu_id()) { // loaded now: reload it with ring-3 reads on
            uint64_t now = clock_ns();
            pmc_count_out(&t->hw, now);
            pmc_count_in(&t->hw, now);
        }
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    if (NT_SUCCESS(s))
        *index = pmc_count_rdpmc_index(p->row);
    return s;
}

// ---- process life ----

void vcounter_process_spawned(struct process *parent, struct process *child)
{
    if (!parent || !READ_ONCE(parent->pmc_targets))
        return;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (struct pmc_target *t = parent->pmc_targets; t; t = t->proc_next)
        if (t->pmc->a.flags & PMC_F_DESCENDANTS)
            attach_locked(t->pmc, child); // out of memory: the child is simply not counted
    spin_unlock_irqrestore(&pmc_lock, f);
}

void vcounter_process_exit(struct process *p)
{
    if (!READ_ONCE(p->pmc_targets))
        return;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    uint64_t now = clock_ns();
    while (p->pmc_targets) {
        struct pmc_target *t = p->pmc_targets;
        struct pmc *pmc = t->pmc;
        // Its thread runs here (exit) or never ran (destroy): a loaded count is ours.
        assert(t->hw.cpu < 0 || t->hw.cpu == (int)cpu_id());
        hw_out_here(&t->hw, now);
        uint64_t v = target_value(pmc, t);
        fold_target(pmc, t);
        if (pmc->a.flags & PMC_F_LOG_PROCEXIT)
            cswitch_log_proc(PMC_LOG_PROCEXIT, pmc->id, pmc->a.source, p->pid, v);
        unlink_target(t);
        kfree(t);
    }
    spin_unlock_irqrestore(&pmc_lock, f);
}

void vcounter_process_gone(struct process *p)
{
    vcounter_process_exit(p); // a process that never ran its exit path
}

static uint64_t target_total(const struct pmc_target *t)
{
    return t->pmc->software ? process_total(t->pmc, t->proc) : t->hw.value;
}

// Hardware save/restore and PMC_F_LOG_PROCCSW for the process leaving and the
// one arriving. A count still loaded is saved even when its PMC has just been
// stopped (vcounter_stop relies on it).
static void process_switch(struct process *out, struct process *in, uint64_t now)
{
    spin_lock(&pmc_lock);
    for (struct pmc_target *t = out ? out->pmc_targets : NULL; t; t = t->proc_next) {
        hw_out_here(&t->hw, now);
        if (t->pmc->started && (t->pmc->a.flags & PMC_F_LOG_PROCCSW)) {
            uint64_t total = target_total(t);
            cswitch_log_proc(PMC_LOG_PROCCSW, t->pmc->id, t->pmc->a.source, out->pid,
                             total - t->csw_base);
            t->csw_base = total;
        }
    }
    for (struct pmc_target *t = in ? in->pmc_targets : NULL; t; t = t->proc_next) {
        if (!t->pmc->started)
            continue;
        if (!t->pmc->software)
            pmc_count_in(&t->hw, now);
        if (t->pmc->a.flags & PMC_F_LOG_PROCCSW)
            t->csw_base = target_total(t);
    }
    spin_unlock(&pmc_lock);
}

void vcounter_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t now)
{
    if (READ_ONCE(cswitch_log_on))
        cswitch_log_switch(c, cur, next, now);
    struct process *out = cur->proc && READ_ONCE(cur->proc->pmc_switch_work) ? cur->proc : NULL;
    struct process *in = next->proc && READ_ONCE(next->proc->pmc_switch_work) ? next->proc : NULL;
    if (out || in)
        process_switch(out, in, now);
}
