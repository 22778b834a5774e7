// Counter values at every context switch, into the log (see
// cswitch_counters.h).
//
// A record is written by switch_to's watcher on its own CPU with interrupts
// off, into that CPU's ring of the log, like a sample. A hardware event gets a
// counter row of its own (never shared: a record holds raw counter totals)
// and a count loaded on every CPU from start to stop (pmc/counting.h).
#include "profile/cswitch_counters.h"
#include "arch/x86/clock.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/smp.h"
#include "lib/string.h"
#include "pmc/counting.h"
#include "profile/pmc_log.h"

static struct {
    volatile uint32_t on; // a session records switches
    uint32_t owner;       // its log's owner, by pid
    uint32_t events[PMC_CSWITCH_MAX_EVENTS];
    unsigned nevents;
    struct pmc_count *hw[PMC_CSWITCH_MAX_EVENTS]; // hardware events: [ncpus], a row each
    unsigned row[PMC_CSWITCH_MAX_EVENTS];
} cs;

static struct mutex cs_mutex = MUTEX_INIT("cswitch counters"); // start and stop

// Event i's running total on CPU c: software events as swevent_switch just
// brought them up to date, hardware ones read from the counter now.
static uint64_t cswitch_value(struct cpu *c, unsigned i)
{
    uint32_t ev = cs.events[i];
    if (cs.hw[i])
        return pmc_count_read(&cs.hw[i][c->id]);
    return c->sw[ev - PMC_EVENT_SW(0)];
}

// The switch watcher (core/sched.h): a record while a session runs.
static void cswitch_record(struct cpu *c, struct thread *cur, struct thread *next, uint64_t now)
{
    UNUSED(now);
    struct pmclog_cswitch r = {.h.type = PMCLOG_CSWITCH, .nevents = cs.nevents};
    r.old_pid = cur->proc ? cur->proc->pid : 0;
    r.new_pid = next->proc ? next->proc->pid : 0;
    for (unsigned i = 0; i < cs.nevents; i++) {
        r.event[i] = (uint16_t)cs.events[i];
        r.value[i] = cswitch_value(c, i);
    }
    pmc_log_write_irqoff(&r.h, sizeof r);
}

// Load (arg non-NULL) or save this CPU's count of every hardware event.
static void cswitch_hw_on_cpu(void *arg)
{
    uint64_t now = clock_ns();
    for (unsigned i = 0; i < cs.nevents; i++) {
        struct pmc_count *c = cs.hw[i] ? &cs.hw[i][cpu_id()] : NULL;
        if (c && arg)
            pmc_count_in(c, now);
        else if (c && c->cpu >= 0)
            pmc_count_out(c, now); // wanted on this CPU since the start
    }
}

static void cswitch_hw_free(void)
{
    for (unsigned i = 0; i < PMC_CSWITCH_MAX_EVENTS; i++) {
        if (cs.hw[i])
            pmc_row_release(cs.row[i]);
        kfree(cs.hw[i]);
        cs.hw[i] = NULL;
    }
}

// A row of its own for each hardware event: the values at a switch must be
// whole counts, so these are never multiplexed (ETW records raw counters).
static NTSTATUS cswitch_hw_reserve(const uint32_t *events, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (PMC_EVENT_IS_SW(events[i]))
            continue;
        const char *why;
        unsigned users;
        NTSTATUS s = pmc_row_reserve((KPROFILE_SOURCE)events[i], PMC_ROW_SYSTEM, &cs.row[i], &why);
        if (!NT_SUCCESS(s))
            return s; // STATUS_NOT_SUPPORTED: SysProfileSources says why
        cs.hw[i] = kzalloc(ncpus * sizeof *cs.hw[i]);
        if (!cs.hw[i]) {
            pmc_row_release(cs.row[i]);
            return STATUS_NO_MEMORY;
        }
        if (pmc_row_scope(cs.row[i], &users) && users > 1)
            return STATUS_INSUFFICIENT_RESOURCES; // more events than counters
        for (unsigned c = 0; c < ncpus; c++)
            pmc_count_init(&cs.hw[i][c], (KPROFILE_SOURCE)events[i], cs.row[i], false);
    }
    return STATUS_SUCCESS;
}

static NTSTATUS check_events(const uint32_t *events, unsigned n)
{
    if (n == 0 || n > PMC_CSWITCH_MAX_EVENTS)
        return STATUS_INVALID_PARAMETER;
    for (unsigned i = 0; i < n; i++)
        if (!PMC_EVENT_IS_SW(events[i]) && events[i] >= ProfileSourceCount)
            return STATUS_INVALID_PARAMETER;
    return cs.on ? STATUS_PROFILING_NOT_STOPPED : STATUS_SUCCESS;
}

static NTSTATUS start_locked(struct process *owner, const uint32_t *events, unsigned n)
{
    NTSTATUS s = check_events(events, n);
    if (NT_SUCCESS(s))
        s = pmc_log_use(owner);
    if (!NT_SUCCESS(s))
        return s;
    memcpy(cs.events, events, n * sizeof *events);
    cs.nevents = n;
    s = cswitch_hw_reserve(events, n);
    if (!NT_SUCCESS(s)) {
        cswitch_hw_free();
        cs.nevents = 0;
        pmc_log_unuse();
        return s;
    }
    smp_call_all(cswitch_hw_on_cpu, (void *)1); // the counters run before the first record
    cs.owner = owner->pid;
    __atomic_store_n(&cs.on, 1, __ATOMIC_RELEASE);
    return STATUS_SUCCESS;
}

static NTSTATUS stop_locked(void)
{
    if (!cs.on)
        return STATUS_PROFILING_NOT_STARTED;
    __atomic_store_n(&cs.on, 0, __ATOMIC_RELEASE);
    smp_call_all(cswitch_hw_on_cpu, NULL); // also: no switch is still writing a record
    cswitch_hw_free();
    cs.nevents = 0;
    pmc_log_unuse();
    return STATUS_SUCCESS;
}

NTSTATUS cswitch_counters_start(struct process *owner, const uint32_t *events, unsigned n)
{
    mutex_lock(&cs_mutex);
    NTSTATUS s = start_locked(owner, events, n);
    mutex_unlock(&cs_mutex);
    return s;
}

NTSTATUS cswitch_counters_stop(void)
{
    mutex_lock(&cs_mutex);
    NTSTATUS s = stop_locked();
    mutex_unlock(&cs_mutex);
    return s;
}

// The session's owner exits: its log goes, and the session with it.
static void cswitch_owner_exit(struct process *p, enum process_event event)
{
    if (event != PROCESS_EXITING || !READ_ONCE(cs.on) || READ_ONCE(cs.owner) != p->pid)
        return;
    mutex_lock(&cs_mutex);
    if (cs.on && cs.owner == p->pid)
        stop_locked();
    mutex_unlock(&cs_mutex);
}

void cswitch_counters_init(void)
{
    sched_watch_switches(cswitch_record, &cs.on);
    process_watch(cswitch_owner_exit);
}
