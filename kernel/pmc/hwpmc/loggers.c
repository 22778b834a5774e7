// Counter values at hook events, into the owner's log: the trace loggers (see
// hwpmc/loggers.h). One concept written once: the context-switch session
// of NtPmcCswitchLog is a logger whose one hook is the context switch and
// whose records keep their old form (PMCLOG_CSWITCH); an ETW-style logger
// names up to 4 counters and 4 hook events and writes PMCLOG_HOOK records.
//
// A record is written on the CPU where its event happens with interrupts
// off, into that CPU's ring of its owner's log, like a sample. A hardware
// event gets a counter row of its own (never shared: a record holds raw
// counter totals) and a count loaded on every CPU while its logger has it
// (pmc/hal/counts.h). Arming and disarming run under a mutex and end with an
// IPI to every CPU, which no CPU takes inside a hook: after it, no record of
// the old state is still being written.
#include "pmc/hwpmc/loggers.h"

#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"

#include "core/grace.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/smp.h"
#include "core/swevent.h"

#include "pmc/hal/counts.h"

#include "pmc/hwpmc/log.h"
#include "pmc/ke/sample.h"

#define LOGGER_EVENTS     PMC_CSWITCH_MAX_EVENTS // the larger of the two lists' limits
#define LOGGER_READ_TRIES 4                      // reads of a record's values (write_values)

struct logger {
    bool used, legacy; // legacy: NtPmcCswitchLog's session (PMCLOG_CSWITCH records)
    volatile bool armed;
    bool loaded;         // hardware counts loaded on every CPU
    uint32_t owner;      // its log's owner, by pid
    struct pmc_log *log; // the owner's log, in use while the logger lives
    uint32_t serial;     // in the handle: a closed logger's handle stays invalid
    uint32_t events[LOGGER_EVENTS];
    unsigned nevents;
    uint32_t hooks;                      // HOOK_* bits
    struct pmc_count *hw[LOGGER_EVENTS]; // hardware events: [ncpus], a row each
    unsigned row[LOGGER_EVENTS];
};

static struct logger loggers[PMC_LOGGERS_MAX];
static uint32_t next_serial = 1;
volatile uint32_t pmc_hook_mask; // the armed loggers' hooks together
static struct mutex lg_mutex = MUTEX_INIT("trace loggers");
static struct logger *on_cpu_logger; // the logger smp_call_all's function works on

static const struct {
    uint16_t id;
    uint32_t bit;
} hook_ids[] = {
    {ETW_HOOK_CSWITCH, HOOK_CSWITCH},
    {ETW_HOOK_SYSCALL_ENTER, HOOK_SYSCALL_ENTER},
    {ETW_HOOK_SYSCALL_EXIT, HOOK_SYSCALL_EXIT},
    {ETW_HOOK_SAMPLED_PROFILE, HOOK_PROFILE},
    {ETW_HOOK_PAGE_FAULT_DZ, HOOK_PAGE_FAULT_DZ},
    {ETW_HOOK_PAGE_FAULT_AV, HOOK_PAGE_FAULT_AV},
    {ETW_HOOK_PROCESS_DELETE, HOOK_PROCESS_DELETE},
};

static uint32_t hook_bit(uint32_t id)
{
    for (unsigned i = 0; i < ARRAY_SIZE(hook_ids); i++)
        if (hook_ids[i].id == id)
            return hook_ids[i].bit;
    return 0;
}

static uint16_t hook_id(uint32_t bit)
{
    for (unsigned i = 0; i < ARRAY_SIZE(hook_ids); i++)
        if (hook_ids[i].bit == bit)
            return hook_ids[i].id;
    return 0;
}

// Event i's running total on CPU c: software events as the CPU has counted
// them (task-clock as of the last switch), hardware ones read from the counter now.
static uint64_t logger_value(const struct logger *l, struct cpu *c, unsigned i)
{
    if (l->hw[i])
        return pmc_count_read(&l->hw[i][c->id]);
    return swevent_cpus[c->id].count[l->events[i] - PMC_EVENT_SW(0)];
}

// Read the values of the record at h into value[] and write it. An NMI on
// this CPU (the PMI, pmi=nmi) may write a record of its own, a
// SampledProfile one, while they are read: its values are read later, but
// it goes first in the log, so a value read before it would go backwards
// there (the NMI path's own instructions and cycles are counted too). The
// values are then read again, after it; a few times at most, so that a storm
// of NMIs cannot hold the writer here.
static void write_values(const struct logger *l, struct cpu *c, struct pmclog_header *h,
                         uint32_t size, uint64_t *value, unsigned n)
{
    for (unsigned tries = 1;; tries++) {
        uint32_t mark = pmc_log_mark(l->log);
        for (unsigned i = 0; i < n; i++)
            value[i] = logger_value(l, c, i);
        if (tries == LOGGER_READ_TRIES) {
            pmc_log_write_irqoff(l->log, h, size);
            return;
        }
        if (pmc_log_write_unchanged(l->log, h, size, mark))
            return;
    }
}

static void write_legacy(const struct logger *l, struct cpu *c, uint32_t pid, uint32_t old_pid)
{
    struct pmclog_cswitch r = {.h.type = PMCLOG_CSWITCH, .nevents = l->nevents};
    r.old_pid = old_pid;
    r.new_pid = pid;
    for (unsigned i = 0; i < l->nevents; i++)
        r.event[i] = (uint16_t)l->events[i];
    write_values(l, c, &r.h, sizeof r, r.value, l->nevents);
}

static void write_hook(const struct logger *l, struct cpu *c, uint32_t bit, uint32_t pid,
                       uint32_t arg)
{
    struct pmclog_hook r = {.h.type = PMCLOG_HOOK, .hook_id = hook_id(bit)};
    r.ncounters = (uint16_t)l->nevents;
    r.pid = r.tid = pid; // one thread per process
    r.arg = arg;
    r.logger = (uint64_t)l->serial << 16 | (uint64_t)(l - loggers + 1);
    write_values(l, c, &r.h, sizeof r, r.value, MIN(l->nevents, ETW_MAX_PMC_COUNTERS));
}

void pmc_hook_fire(uint32_t bit, uint32_t pid, uint32_t arg)
{
    uint64_t f = irq_save();
    struct cpu *c = this_cpu();
    for (unsigned k = 0; k < PMC_LOGGERS_MAX; k++) {
        const struct logger *l = &loggers[k];
        if (!READ_ONCE(l->armed) || !(l->hooks & bit))
            continue;
        if (l->legacy)
            write_legacy(l, c, pid, arg);
        else
            write_hook(l, c, bit, pid, arg);
    }
    irq_restore(f);
}

// The switch watcher (core/sched.h).
static void hook_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t now)
{
    UNUSED(c), UNUSED(now);
    if (READ_ONCE(pmc_hook_mask) & HOOK_CSWITCH)
        pmc_hook_fire(HOOK_CSWITCH, next->proc ? next->proc->pid : 0,
                      cur->proc ? cur->proc->pid : 0);
}

// Load (arg non-NULL) or save this CPU's count of every hardware event of on_cpu_logger.
static void logger_hw_on_cpu(void *arg)
{
    struct logger *l = on_cpu_logger;
    uint64_t now = clock_ns();
    for (unsigned i = 0; i < l->nevents; i++) {
        struct pmc_count *c = l->hw[i] ? &l->hw[i][cpu_id()] : NULL;
        if (c && arg)
            pmc_count_in(c, now);
        else if (c && c->cpu >= 0)
            pmc_count_out(c, now); // wanted on this CPU since the start
    }
}

static void recompute_mask(void)
{
    uint32_t m = 0;
    for (unsigned k = 0; k < PMC_LOGGERS_MAX; k++)
        if (loggers[k].armed)
            m |= loggers[k].hooks;
    // The profile-interrupt hook is fired where the fan-out makes a plan, and
    // while it is armed no plan is kept: the plans go when it changes.
    sample_publish(&pmc_hook_mask, m);
}

// No more records from l; with free_hw its hardware counts saved and released.
static void logger_disarm(struct logger *l, bool free_hw)
{
    if (l->armed) {
        __atomic_store_n(&l->armed, false, __ATOMIC_RELEASE);
        recompute_mask();
        grace_wait(); // no hook is still writing l's record
    }
    if (!free_hw)
        return;
    if (l->loaded) {
        on_cpu_logger = l;
        smp_call_all(logger_hw_on_cpu, NULL);
        l->loaded = false;
    }
    for (unsigned i = 0; i < LOGGER_EVENTS; i++) {
        if (l->hw[i])
            pmc_row_release(l->row[i]);
        kfree(l->hw[i]);
        l->hw[i] = NULL;
    }
}

// Records from l once it has both lists; its counts running first.
static void logger_arm(struct logger *l)
{
    if (!l->nevents || !l->hooks)
        return;
    if (!l->loaded) {
        on_cpu_logger = l;
        smp_call_all(logger_hw_on_cpu, (void *)1);
        l->loaded = true;
    }
    __atomic_store_n(&l->armed, true, __ATOMIC_RELEASE);
    recompute_mask();
}

// A row of its own for each hardware event, pinned: the values at an event
// must be whole counts, so these are never shared with a later reservation
// nor multiplexed (ETW records raw counters). More hardware events than free
// counters is STATUS_INSUFFICIENT_RESOURCES.
static NTSTATUS logger_hw_reserve(struct logger *l)
{
    for (unsigned i = 0; i < l->nevents; i++) {
        if (PMC_EVENT_IS_SW(l->events[i]))
            continue;
        const char *why;
        KPROFILE_SOURCE src = (KPROFILE_SOURCE)l->events[i];
        NTSTATUS s = pmc_row_reserve_own(src, PMC_ROW_SYSTEM, &l->row[i], &why);
        if (!NT_SUCCESS(s))
            return s; // STATUS_NOT_SUPPORTED: SysProfileSources says why
        l->hw[i] = kzalloc(ncpus * sizeof *l->hw[i]);
        if (!l->hw[i]) {
            pmc_row_release(l->row[i]);
            return STATUS_NO_MEMORY;
        }
        for (unsigned c = 0; c < ncpus; c++)
            pmc_count_init(&l->hw[i][c], src, l->row[i], false);
    }
    return STATUS_SUCCESS;
}

static NTSTATUS check_events(const uint32_t *events, unsigned n, unsigned max)
{
    if (n == 0 || n > max)
        return STATUS_INVALID_PARAMETER;
    for (unsigned i = 0; i < n; i++)
        if (!PMC_EVENT_IS_SW(events[i]) && events[i] >= ProfileSourceCount)
            return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

// The counter list of l replaced: its old counts released, the new reserved.
static NTSTATUS logger_set_events(struct logger *l, const uint32_t *events, unsigned n)
{
    logger_disarm(l, true);
    memcpy(l->events, events, n * sizeof *events);
    l->nevents = n;
    NTSTATUS s = logger_hw_reserve(l);
    if (!NT_SUCCESS(s)) {
        logger_disarm(l, true);
        l->nevents = 0;
        return s;
    }
    logger_arm(l);
    return STATUS_SUCCESS;
}

static struct logger *logger_alloc(struct process *owner, bool legacy)
{
    for (unsigned k = 0; k < PMC_LOGGERS_MAX; k++) {
        struct logger *l = &loggers[k];
        if (l->used)
            continue;
        memset(l, 0, sizeof *l);
        l->used = true;
        l->legacy = legacy;
        l->owner = owner->pid;
        l->serial = next_serial++ & 0xFFFFFFu;
        return l;
    }
    return NULL;
}

static void logger_free(struct logger *l)
{
    logger_disarm(l, true);
    l->used = false;
    l->nevents = 0;
    l->hooks = 0;
    pmc_log_unuse(l->log);
    l->log = NULL;
}

// A new logger of owner's writing into its log (pmc_log_use).
static NTSTATUS logger_new(struct process *owner, bool legacy, struct logger **out)
{
    struct pmc_log *log;
    NTSTATUS s = pmc_log_use(owner, &log);
    if (!NT_SUCCESS(s))
        return s;
    *out = logger_alloc(owner, legacy);
    if (*out) {
        (*out)->log = log; // before it is armed
        return STATUS_SUCCESS;
    }
    pmc_log_unuse(log);
    return STATUS_INSUFFICIENT_RESOURCES;
}

static struct logger *legacy_logger(void)
{
    for (unsigned k = 0; k < PMC_LOGGERS_MAX; k++)
        if (loggers[k].used && loggers[k].legacy)
            return &loggers[k];
    return NULL;
}

static NTSTATUS legacy_start(struct process *owner, const uint32_t *events, unsigned n)
{
    NTSTATUS s = check_events(events, n, PMC_CSWITCH_MAX_EVENTS);
    if (NT_SUCCESS(s) && legacy_logger())
        s = STATUS_PROFILING_NOT_STOPPED;
    struct logger *l = NULL;
    if (NT_SUCCESS(s))
        s = logger_new(owner, true, &l);
    if (!NT_SUCCESS(s))
        return s;
    l->hooks = HOOK_CSWITCH;
    s = logger_set_events(l, events, n);
    if (!NT_SUCCESS(s))
        logger_free(l);
    return s;
}

NTSTATUS pmc_logger_cswitch_start(struct process *owner, const uint32_t *events, unsigned n)
{
    mutex_lock(&lg_mutex);
    NTSTATUS s = legacy_start(owner, events, n);
    mutex_unlock(&lg_mutex);
    return s;
}

NTSTATUS pmc_logger_cswitch_stop(void)
{
    mutex_lock(&lg_mutex);
    struct logger *l = legacy_logger();
    if (l)
        logger_free(l);
    mutex_unlock(&lg_mutex);
    return l ? STATUS_SUCCESS : STATUS_PROFILING_NOT_STARTED;
}

// ---------------------------------------------------------------------------
// The ETW-style loggers, by TRACEHANDLE: serial << 16 | slot + 1.

NTSTATUS pmc_logger_create(struct process *owner, TRACEHANDLE *out)
{
    mutex_lock(&lg_mutex);
    struct logger *l = NULL;
    NTSTATUS s = logger_new(owner, false, &l);
    if (NT_SUCCESS(s))
        *out = (uint64_t)l->serial << 16 | (uint64_t)(l - loggers + 1);
    mutex_unlock(&lg_mutex);
    return s;
}

// The caller's logger h (lg_mutex held), or NULL: not a logger, closed, or another process's.
static struct logger *logger_find(const struct process *caller, TRACEHANDLE h)
{
    uint64_t slot = h & 0xFFFF;
    if (slot == 0 || slot > PMC_LOGGERS_MAX)
        return NULL;
    struct logger *l = &loggers[slot - 1];
    if (!l->used || l->legacy || l->serial != h >> 16 || l->owner != caller->pid)
        return NULL;
    return l;
}

NTSTATUS pmc_logger_close(struct process *caller, TRACEHANDLE h)
{
    mutex_lock(&lg_mutex);
    struct logger *l = logger_find(caller, h);
    if (l)
        logger_free(l);
    mutex_unlock(&lg_mutex);
    return l ? STATUS_SUCCESS : STATUS_INVALID_HANDLE;
}

NTSTATUS pmc_logger_set_counters(struct process *caller, TRACEHANDLE h, const uint32_t *sources,
                                 unsigned n)
{
    NTSTATUS s = check_events(sources, n, ETW_MAX_PMC_COUNTERS);
    if (!NT_SUCCESS(s))
        return s;
    mutex_lock(&lg_mutex);
    struct logger *l = logger_find(caller, h);
    s = l ? logger_set_events(l, sources, n) : STATUS_INVALID_HANDLE;
    mutex_unlock(&lg_mutex);
    return s;
}

NTSTATUS pmc_logger_set_hooks(struct process *caller, TRACEHANDLE h, const uint32_t *ids,
                              unsigned n)
{
    uint32_t bits = 0;
    if (n == 0 || n > ETW_MAX_PMC_EVENTS)
        return STATUS_INVALID_PARAMETER;
    for (unsigned i = 0; i < n; i++) {
        if (!hook_bit(ids[i]))
            return STATUS_INVALID_PARAMETER; // no such hook here
        bits |= hook_bit(ids[i]);
    }
    mutex_lock(&lg_mutex);
    struct logger *l = logger_find(caller, h);
    if (l) {
        logger_disarm(l, false);
        l->hooks = bits;
        logger_arm(l);
    }
    mutex_unlock(&lg_mutex);
    return l ? STATUS_SUCCESS : STATUS_INVALID_HANDLE;
}

// A process exits: the process-delete hook, then its loggers go (and its log,
// which the PMC object's watcher before this one left to their last unuse).
static void logger_owner_exit(struct process *p, enum process_event event)
{
    if (event != PROCESS_EXITING)
        return;
    if (READ_ONCE(pmc_hook_mask) & HOOK_PROCESS_DELETE)
        pmc_hook_fire(HOOK_PROCESS_DELETE, p->pid, (uint32_t)p->exit_status);
    bool owns = false;
    for (unsigned k = 0; k < PMC_LOGGERS_MAX; k++)
        owns |= READ_ONCE(loggers[k].used) && READ_ONCE(loggers[k].owner) == p->pid;
    if (!owns)
        return;
    mutex_lock(&lg_mutex);
    for (unsigned k = 0; k < PMC_LOGGERS_MAX; k++)
        if (loggers[k].used && loggers[k].owner == p->pid)
            logger_free(&loggers[k]);
    mutex_unlock(&lg_mutex);
}

// Ring-3 page faults (core/process.c's hook): demand-zero ones and fatal ones.
static void hook_fault(bool demand_zero)
{
    if (!(READ_ONCE(pmc_hook_mask) & (demand_zero ? HOOK_PAGE_FAULT_DZ : HOOK_PAGE_FAULT_AV)))
        return;
    const struct process *p = process_current();
    pmc_hook_fire(demand_zero ? HOOK_PAGE_FAULT_DZ : HOOK_PAGE_FAULT_AV, p ? p->pid : 0, 0);
}

// The profile-interrupt hook, a consumer of the fan-out (ke/sample.h): a plan
// made while a logger watches it takes every sample it holds for, with the
// process and source noted at plan time in this CPU's scratch. (Arming or
// disarming a hook publishes pmc_hook_mask, which drops every plan; a sample
// still running an older plan finds the hook disarmed in pmc_hook.)
struct profile_hook_arg {
    uint32_t pid, source;
};
static struct profile_hook_arg profile_hook_args[MAX_CPUS][ProfileSourceCount];

static void *profile_hook_plan(KPROFILE_SOURCE source, const struct process *pr, unsigned cpu)
{
    if (!(READ_ONCE(pmc_hook_mask) & HOOK_PROFILE))
        return NULL;
    struct profile_hook_arg *a = &profile_hook_args[cpu][source];
    *a = (struct profile_hook_arg){pr ? pr->pid : 0, source};
    return a;
}

static void profile_hook_take(void *token, const struct intr_frame *f)
{
    UNUSED(f);
    const struct profile_hook_arg *a = token;
    pmc_hook(HOOK_PROFILE, a->pid, a->source);
}

static const struct sample_consumer profile_hook = {profile_hook_plan, profile_hook_take};

void pmc_loggers_init(void)
{
    sched_watch_switches(hook_switch, &pmc_hook_mask); // called while any hook is armed
    process_watch(logger_owner_exit);
    process_fault_hook = hook_fault;
    sample_consumer_register(&profile_hook);
}
