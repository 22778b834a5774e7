// The counting kinds of the PMC object: process scope (virtual counters that
// follow a process across switches and CPUs) and system scope (per CPU, or
// summed), of software events and of PMU events. Their PMC_F_LOG_PROCCSW and
// PMC_F_LOG_PROCEXIT records (PMCLOG_CSW, PMCLOG_EXIT) go to the owner's log,
// which a PMC with either flag needs while it runs (pmc_log_use), as in hwpmc.
//
// Software events are always counted per thread and per CPU (swevent.h), so a
// software PMC is a set of baselines: its value is what its targets (or CPUs)
// counted since the start. A hardware PMC reserves a counter row for its scope
// (pmc/hal/counts.h) and keeps one struct pmc_count per target (process scope) or
// per CPU (system scope): a target's count is loaded when its process switches
// in and saved when it switches out, on whatever CPU; a CPU's count is loaded
// there from start to stop. Where the PMU cannot count the event (no PMU under
// TCG) allocation fails and SysProfileSources gives the HAL's reason.
//
// pmc_lock (hwpmc/pmc.h) guards every field below. A pmc_count is touched
// only on the CPU that wants it (pmc/hal/counts.h), so start, stop and read reach
// the CPUs with smp_call_many, outside the lock: only those where a count is
// loaded, or a target runs.
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"

#include "core/heap.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/smp.h"
#include "core/spinlock.h"
#include "core/swevent.h"

#include "pmc/hwpmc/log.h"
#include "pmc/hwpmc/pmc.h"
#include "pmc/ke/profile.h"

_Static_assert(SWEVENT_LEVEL_USER == PMC_LEVEL_USR && SWEVENT_LEVEL_KERNEL == PMC_LEVEL_OS,
               "one encoding of the levels");

static bool is_hw(const struct pmc *m)
{
    return m->ops == &pmc_hw_counting;
}

// Counting ProfileTime runs the source while started (sw_allocate).
static bool counts_ticks(const struct pmc *m)
{
    return m->c.runs_profile_time;
}

static bool cpu_in(const struct pmc *m, unsigned cpu)
{
    return (m->cpus >> cpu) & 1;
}

// --- values (pmc_lock held) ------------------------------------------------------

static enum pmc_sw_event sw_event(const struct pmc *m)
{
    return (enum pmc_sw_event)(m->a.source - PMC_EVENT_SW(0));
}

// A live process's running total of a software PMC's event.
static uint64_t process_total(const struct pmc *m, const struct process *proc)
{
    struct thread *t = READ_ONCE(proc->thread);
    return t && !is_hw(m) ? swevent_thread_value_levels(t, sw_event(m), pmc_levels(&m->a)) : 0;
}

static uint64_t target_value(const struct pmc_target *t)
{
    const struct pmc *m = t->pmc;
    if (is_hw(m))
        return READ_ONCE(t->hw.value); // as of its last switch-out or sync
    uint64_t v = t->counted;
    if (m->running) {
        uint64_t now = process_total(m, t->proc);
        v += now >= t->base ? now - t->base : 0;
    }
    return v;
}

// fn on every target whose count is not in m's totals yet: those attached
// and those leaving (unlinked by an exit or a detach, released later). A
// start, a stop or a write must reach both: a leaving target is still read.
static void each_target(struct pmc *m, void (*fn)(struct pmc_target *t))
{
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k])
            fn(m->targets[k]);
    for (struct pmc_target *t = m->leaving; t; t = t->leave_next)
        fn(t);
}

// What the targets of a process-scope PMC have counted: those attached, those
// leaving (not yet in the totals) and those gone.
static uint64_t targets_value(const struct pmc *m)
{
    uint64_t v = m->c.value;
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k])
            v += target_value(m->targets[k]);
    for (const struct pmc_target *t = m->leaving; t; t = t->leave_next)
        v += target_value(t);
    return v;
}

static uint64_t sw_value(const struct pmc *m)
{
    if (m->a.mode == PMC_MODE_TC)
        return targets_value(m);
    uint64_t v = m->c.value;
    for (unsigned c = 0; m->running && c < ncpus; c++)
        if (cpu_in(m, c))
            v += swevent_cpu_value_levels(c, sw_event(m), pmc_levels(&m->a)) - m->c.cpu_base[c];
    return v;
}

static uint64_t hw_value(const struct pmc *m)
{
    if (m->a.mode == PMC_MODE_TC)
        return targets_value(m);
    uint64_t v = m->c.value;
    for (unsigned c = 0; c < ncpus; c++)
        v += READ_ONCE(m->c.cpu_hw[c].value);
    return v;
}

// --- attachments ------------------------------------------------------------------

// A hardware count of m's event in m's levels.
static void hw_count_init(const struct pmc *m, struct pmc_count *c)
{
    pmc_count_init(c, (KPROFILE_SOURCE)m->a.source, m->c.row, false);
    c->levels = (uint8_t)pmc_levels(&m->a);
}

// Begin counting for t at its process's current total.
static void target_begin(struct pmc_target *t)
{
    t->base = process_total(t->pmc, t->proc);
    t->csw_base = is_hw(t->pmc) ? t->hw.value : t->base;
}

static NTSTATUS counting_attach(struct pmc_target *t)
{
    struct pmc *m = t->pmc;
    if (m->c.user_read)
        return STATUS_PMC_READ_IN_RING3; // hwpmc: EPERM after PMC_OP_PMCX86GETMSR
    if (is_hw(m))
        hw_count_init(m, &t->hw);
    if (m->running)
        target_begin(t);
    return STATUS_SUCCESS;
}

// A target leaves (its hardware count is unloaded everywhere): what it
// counted stays in the PMC's totals; at exit PMC_F_LOG_PROCEXIT logs it.
static void counting_detach(struct pmc_target *t, bool exiting)
{
    struct pmc *m = t->pmc;
    uint64_t v = target_value(t);
    m->c.value += v;
    m->c.enabled_ns += is_hw(m) ? t->hw.enabled_ns : 0;
    m->c.running_ns += is_hw(m) ? t->hw.running_ns : 0;
    if (exiting && (m->a.flags & PMC_F_LOG_PROCEXIT) && m->log) { // while it runs
        struct pmclog_exit r = {.h.type = PMCLOG_EXIT, .pid = t->proc->pid, .pmc = m->id};
        r.status = t->proc->exit_status;
        r.value = v;
        pmc_log_write_irqoff(m->log, &r.h, sizeof r);
    }
}

static bool counting_wants_switch(const struct pmc *m)
{
    return (m->a.flags & PMC_F_LOG_PROCCSW) || (is_hw(m) && m->a.mode == PMC_MODE_TC);
}

static uint64_t target_total(const struct pmc_target *t)
{
    return is_hw(t->pmc) ? t->hw.value : process_total(t->pmc, t->proc);
}

// A count still loaded is saved even when its PMC has just been stopped
// (hw_stop relies on it).
static void counting_switch_out(struct pmc_target *t, uint64_t now)
{
    struct pmc *m = t->pmc;
    if (t->hw.cpu == (int)cpu_id())
        pmc_count_out(&t->hw, now);
    if (m->running && (m->a.flags & PMC_F_LOG_PROCCSW)) {
        uint64_t total = target_total(t);
        struct pmclog_csw r = {.h.type = PMCLOG_CSW, .pid = t->proc->pid, .pmc = m->id};
        r.value = total - t->csw_base;
        pmc_log_write_irqoff(m->log, &r.h, sizeof r);
        t->csw_base = total;
    }
}

static void counting_switch_in(struct pmc_target *t, uint64_t now)
{
    struct pmc *m = t->pmc;
    if (!m->running)
        return;
    if (is_hw(m))
        pmc_count_in(&t->hw, now);
    if (m->a.flags & PMC_F_LOG_PROCCSW)
        t->csw_base = target_total(t);
}

// --- start and stop -------------------------------------------------------------------

// hwpmc attaches an unattached process-scope PMC to its owner at start.
static NTSTATUS counting_targets_ready(struct pmc *m, struct process *caller)
{
    if (m->a.mode != PMC_MODE_TC || m->ntargets)
        return STATUS_SUCCESS;
    if (caller->pid != m->owner_pid)
        return STATUS_PMC_NO_TARGET;
    return pmc_attach_self(m, caller);
}

// Counting ProfileTime's ticks runs the source, as sampling does (before the
// lock: starting a source calls every CPU).
static bool logs_records(const struct pmc *m)
{
    return (m->a.flags & (PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT)) != 0;
}

// What a start takes, given back by the stop: the log for the records, the
// source for ProfileTime's ticks.
static NTSTATUS take_log_and_source(struct pmc *m, struct process *caller)
{
    NTSTATUS s = logs_records(m) ? pmc_log_use(caller, &m->log) : STATUS_SUCCESS;
    if (NT_SUCCESS(s) && counts_ticks(m) && !NT_SUCCESS(s = KeReferenceProfileSource(ProfileTime)))
        pmc_give_log(m);
    return s;
}

static NTSTATUS give_log_and_source(struct pmc *m)
{
    pmc_give_log(m);
    return counts_ticks(m) ? KeDereferenceProfileSource(ProfileTime) : STATUS_SUCCESS;
}

static NTSTATUS counting_start(struct pmc *m, struct process *caller)
{
    // The log and the source first: a start that fails attaches nobody.
    NTSTATUS s = take_log_and_source(m, caller);
    if (!NT_SUCCESS(s))
        return s;
    s = counting_targets_ready(m, caller);
    if (!NT_SUCCESS(s)) {
        give_log_and_source(m);
        return s;
    }
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    m->running = true;
    m->c.started_ns = clock_ns();
    each_target(m, target_begin);
    for (unsigned c = 0; !is_hw(m) && m->a.mode == PMC_MODE_SC && c < ncpus; c++)
        m->c.cpu_base[c] = swevent_cpu_value_levels(c, sw_event(m), pmc_levels(&m->a));
    pmc_switch_work(m, true);
    spin_unlock_irqrestore(&pmc_lock, f);
    return STATUS_SUCCESS;
}

// A software target's count so far kept as counted (its PMC still running).
static void target_settle(struct pmc_target *t)
{
    t->counted = target_value(t);
}

static NTSTATUS sw_stop(struct pmc *m)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    if (m->a.mode == PMC_MODE_SC)
        m->c.value = sw_value(m);
    each_target(m, target_settle);
    m->c.enabled_ns += clock_ns() - m->c.started_ns;
    m->running = false;
    pmc_switch_work(m, false);
    spin_unlock_irqrestore(&pmc_lock, f);
    return give_log_and_source(m);
}

// Load the hardware counts where a target runs now (elsewhere its next
// switch-in does it) or, system scope, on every CPU counted.
static void hw_start_on_cpu(void *arg)
{
    struct pmc *m = arg;
    unsigned cpu = cpu_id();
    uint64_t now = clock_ns();
    spin_lock(&pmc_lock);
    if (m->running && m->a.mode == PMC_MODE_SC && cpu_in(m, cpu))
        pmc_count_in(&m->c.cpu_hw[cpu], now);
    struct pmc_target *t = m->running ? pmc_target_of(m, cpus[cpu].current->proc) : NULL;
    if (t && cpus[cpu].current->proc)
        pmc_count_in(&t->hw, now);
    spin_unlock(&pmc_lock);
}

// The CPUs a started m must reach to load its counts (pmc_lock held, after
// m->running was set): system scope, its CPUs; process scope, those running
// one of its targets now. A target that switches in anywhere later finds m
// running and loads its own count (the scheduler publishes the running
// process before its switch watchers run: core/sched.h).
static uint64_t cpus_to_load(const struct pmc *m)
{
    if (!m->running)
        return 0;
    if (m->a.mode == PMC_MODE_SC)
        return m->cpus;
    uint64_t mask = 0;
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k])
            mask |= sched_cpus_running(m->targets[k]->proc);
    return mask;
}

// The CPUs where one of m's counts is loaded now (pmc_lock held).
static uint64_t cpus_loaded(const struct pmc *m)
{
    uint64_t mask = 0;
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k] && m->targets[k]->hw.cpu >= 0)
            mask |= 1ull << m->targets[k]->hw.cpu;
    for (unsigned c = 0; m->c.cpu_hw && c < ncpus; c++)
        if (m->c.cpu_hw[c].cpu >= 0)
            mask |= 1ull << c;
    return mask;
}

// Run fn(m) on the CPUs which(m) names, chosen under pmc_lock.
static void call_cpus(struct pmc *m, uint64_t (*which)(const struct pmc *m), void (*fn)(void *))
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    uint64_t mask = which(m);
    spin_unlock_irqrestore(&pmc_lock, f);
    smp_call_many(mask, fn, m);
}

// A process attached while m runs may be running now, and go on running
// without a switch (the scheduler switches nothing while the running thread is
// its CPU's only runnable one): its count, and those of its descendants
// running now, are loaded where they run, as at the start (perf's
// perf_install_in_context likewise adds a new event to the task's context on
// the CPU where the task runs, by a cross-CPU call to that CPU only).
static void hw_attached(struct pmc *m)
{
    call_cpus(m, cpus_to_load, hw_start_on_cpu);
}

static NTSTATUS hw_start(struct pmc *m, struct process *caller)
{
    NTSTATUS s = counting_start(m, caller);
    if (NT_SUCCESS(s))
        call_cpus(m, cpus_to_load, hw_start_on_cpu);
    return s;
}

// Save the counts still loaded on this CPU.
static void hw_stop_on_cpu(void *arg)
{
    struct pmc *m = arg;
    unsigned cpu = cpu_id();
    uint64_t now = clock_ns();
    spin_lock(&pmc_lock);
    for (unsigned k = 0; k < m->slots; k++)
        if (m->targets[k] && m->targets[k]->hw.cpu == (int)cpu)
            pmc_count_out(&m->targets[k]->hw, now);
    if (m->c.cpu_hw && m->c.cpu_hw[cpu].cpu == (int)cpu)
        pmc_count_out(&m->c.cpu_hw[cpu], now);
    spin_unlock(&pmc_lock);
}

// No switch loads the counts once stopped, so the CPUs with one loaded are
// all there is to reach; until the targets' switch work ends, a target
// switching out saves its own.
static NTSTATUS hw_stop(struct pmc *m)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    m->running = false;
    spin_unlock_irqrestore(&pmc_lock, f);
    call_cpus(m, cpus_loaded, hw_stop_on_cpu);
    f = spin_lock_irqsave(&pmc_lock);
    pmc_switch_work(m, false);
    spin_unlock_irqrestore(&pmc_lock, f);
    return give_log_and_source(m);
}

// --- reading and writing ------------------------------------------------------------

static void sync_on_cpu(void *arg)
{
    UNUSED(arg);
    pmc_count_sync(clock_ns());
}

// Software counts always run: enabled = running = time started.
static NTSTATUS sw_read(struct pmc *m, struct pmc_value *out)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    memset(out, 0, sizeof *out);
    out->value = sw_value(m);
    out->time_enabled = m->c.enabled_ns + (m->running ? clock_ns() - m->c.started_ns : 0);
    out->time_running = out->time_enabled;
    out->targets = m->ntargets;
    out->row = 0xFFFFFFFFu;
    spin_unlock_irqrestore(&pmc_lock, f);
    return STATUS_SUCCESS;
}

// A hardware count is enabled while its target runs (system scope: while
// started, CPU time summed over its CPUs) and running while on a counter.
static NTSTATUS hw_read(struct pmc *m, struct pmc_value *out)
{
    if (READ_ONCE(m->running))
        call_cpus(m, cpus_loaded, sync_on_cpu); // loaded counts: values up to now
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    memset(out, 0, sizeof *out);
    out->value = hw_value(m);
    out->time_enabled = m->c.enabled_ns;
    out->time_running = m->c.running_ns;
    for (unsigned k = 0; k < m->slots; k++) {
        const struct pmc_target *t = m->targets[k];
        out->time_enabled += t ? READ_ONCE(t->hw.enabled_ns) : 0;
        out->time_running += t ? READ_ONCE(t->hw.running_ns) : 0;
    }
    for (const struct pmc_target *t = m->leaving; t; t = t->leave_next) {
        out->time_enabled += READ_ONCE(t->hw.enabled_ns);
        out->time_running += READ_ONCE(t->hw.running_ns);
    }
    for (unsigned c = 0; m->c.cpu_hw && c < ncpus; c++) {
        out->time_enabled += READ_ONCE(m->c.cpu_hw[c].enabled_ns);
        out->time_running += READ_ONCE(m->c.cpu_hw[c].running_ns);
    }
    out->targets = m->ntargets;
    unsigned users = 0;
    pmc_row_scope(m->c.row, &users);
    out->row = users == 1 ? m->c.row : 0xFFFFFFFFu; // its own counter, or none (shared)
    spin_unlock_irqrestore(&pmc_lock, f);
    return STATUS_SUCCESS;
}

static void target_zero(struct pmc_target *t)
{
    t->counted = t->hw.value = 0;
}

// hwpmc's PMC_OP_PMCRW write: only a stopped PMC (EBUSY otherwise); the value
// becomes the count, and targets start again from zero.
static NTSTATUS counting_write(struct pmc *m, uint64_t value)
{
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    NTSTATUS s = STATUS_SUCCESS;
    if (m->running) {
        s = STATUS_PMC_RUNNING;
    } else {
        m->c.value = value;
        each_target(m, target_zero);
        for (unsigned c = 0; m->c.cpu_hw && c < ncpus; c++)
            m->c.cpu_hw[c].value = 0;
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    return s;
}

static NTSTATUS sw_rdpmc_index(struct pmc *m, struct process *caller, uint32_t *index)
{
    UNUSED(m);
    UNUSED(caller);
    UNUSED(index);
    return STATUS_NOT_SUPPORTED; // no counter register to read
}

// The one target of m, attached to caller; NULL otherwise.
static struct pmc_target *only_target(struct pmc *m, const struct process *caller)
{
    struct pmc_target *t = pmc_target_of(m, caller);
    return m->ntargets == 1 ? t : NULL;
}

// hwpmc's PMC_OP_PMCX86GETMSR: process scope, no PMC_F_DESCENDANTS, attached
// only to its owner, on a counter row of its own (pinned: it stays the same
// counter while the owner runs). From then on CR4.PCE is set whenever the
// owner runs with the count loaded, and other processes cannot be attached.
static NTSTATUS hw_rdpmc_index(struct pmc *m, struct process *caller, uint32_t *index)
{
    if (m->a.mode != PMC_MODE_TC || (m->a.flags & PMC_F_DESCENDANTS))
        return STATUS_INVALID_PARAMETER;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    struct pmc_target *t = only_target(m, caller);
    NTSTATUS s = STATUS_SUCCESS;
    if (m->owner_pid != caller->pid || !t)
        s = STATUS_INVALID_PARAMETER;
    else if (!m->c.user_read && !pmc_row_pin(m->c.row))
        s = STATUS_PMC_ROW_SHARED;
    if (NT_SUCCESS(s) && !m->c.user_read) {
        m->c.user_read = t->hw.user_read = true;
        if (t->hw.cpu == (int)cpu_id()) { // loaded now: reload it with user-mode reads on
            uint64_t now = clock_ns();
            pmc_count_out(&t->hw, now);
            pmc_count_in(&t->hw, now);
        }
    }
    spin_unlock_irqrestore(&pmc_lock, f);
    if (NT_SUCCESS(s))
        *index = pmc_count_rdpmc_index(m->c.row);
    return s;
}

// --- allocation -------------------------------------------------------------------------

// Counts are of both levels unless the request names one (docs/counting.md),
// which only task-clock can tell apart; ProfileTime is counted as its ticks,
// the software event PMC_SW_PROFILE_TICKS, which cannot.
static NTSTATUS sw_allocate(struct pmc *m, const struct process *owner)
{
    UNUSED(owner);
    if (pmc_levels(&m->a) != PMC_LEVELS_ALL &&
        (m->a.source == ProfileTime || !swevent_has_levels(sw_event(m))))
        return STATUS_PMC_LEVEL_UNSUPPORTED;
    if (m->a.source == ProfileTime) {
        m->a.source = PMC_EVENT_SW(PMC_SW_PROFILE_TICKS);
        m->c.runs_profile_time = true;
    }
    return STATUS_SUCCESS;
}

static void sw_release(struct pmc *m)
{
    UNUSED(m);
}

static NTSTATUS hw_allocate(struct pmc *m, const struct process *owner)
{
    const char *why;
    KPROFILE_SOURCE source = (KPROFILE_SOURCE)m->a.source;
    enum pmc_row_scope scope = m->a.mode == PMC_MODE_TC ? PMC_ROW_THREAD : PMC_ROW_SYSTEM;
    NTSTATUS s = owner->privileged ? pmc_row_reserve(source, scope, &m->c.row, &why)
                                   : pmc_row_reserve_unprivileged(source, scope, &m->c.row, &why);
    if (s == STATUS_NOT_SUPPORTED)
        return STATUS_PMC_COUNTING_UNSUPPORTED; // SysProfileSources gives the HAL's reason
    if (!NT_SUCCESS(s) || scope == PMC_ROW_THREAD)
        return s;
    m->c.cpu_hw = kzalloc(ncpus * sizeof *m->c.cpu_hw);
    if (!m->c.cpu_hw) {
        pmc_row_release(m->c.row);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    for (unsigned c = 0; c < ncpus; c++)
        hw_count_init(m, &m->c.cpu_hw[c]);
    return STATUS_SUCCESS;
}

static void hw_release(struct pmc *m)
{
    pmc_row_release(m->c.row);
    kfree(m->c.cpu_hw);
}

// Counting ProfileTime counts its ticks, a software event
// (PMC_SW_PROFILE_TICKS) that runs the source while started.
static bool claims_sw(const struct pmc_alloc *a)
{
    return pmc_mode_is_counting(a) && (PMC_EVENT_IS_SW(a->source) || a->source == ProfileTime);
}

static bool claims_hw(const struct pmc_alloc *a)
{
    return pmc_mode_is_counting(a) && !claims_sw(a);
}

const struct pmc_ops pmc_sw_counting = {
    .name = "software counting",
    .claims = claims_sw,
    .allocate = sw_allocate,
    .release = sw_release,
    .start = counting_start,
    .stop = sw_stop,
    .read = sw_read,
    .write = counting_write,
    .rdpmc_index = sw_rdpmc_index,
    .attach = counting_attach,
    .detach = counting_detach,
    .wants_switch = counting_wants_switch,
    .switch_out = counting_switch_out,
    .switch_in = counting_switch_in,
};

const struct pmc_ops pmc_hw_counting = {
    .name = "hardware counting",
    .claims = claims_hw,
    .allocate = hw_allocate,
    .release = hw_release,
    .start = hw_start,
    .stop = hw_stop,
    .read = hw_read,
    .write = counting_write,
    .rdpmc_index = hw_rdpmc_index,
    .attach = counting_attach,
    .attached = hw_attached,
    .detach = counting_detach,
    .wants_switch = counting_wants_switch,
    .switch_out = counting_switch_out,
    .switch_in = counting_switch_in,
};

// The scheduler tick (core/sched.h): rotate multiplexed counts.
static void counting_tick(void)
{
    if (pmc_count_multiplexing())
        pmc_count_tick(clock_ns());
}

void pmc_counting_init(void)
{
    pmc_kind_register(&pmc_sw_counting);
    pmc_kind_register(&pmc_hw_counting);
    __atomic_store_n(&sched_tick_hook, counting_tick, __ATOMIC_RELEASE);
}
