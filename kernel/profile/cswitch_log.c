// The counting log: ETW-style counter values at every context switch, and
// the process records of counting PMCs (see cswitch_log.h).
//
// Each CPU writes its own ring of PMC_LOG_CSWITCH records from switch_to, with
// no lock: only that CPU writes it, and a reader sees whole records through
// the release store of the count. The process records share one ring under
// log_lock. A hardware event gets a counter row of its own (never shared: a
// record holds raw counter totals) and a count loaded on every CPU from start
// to stop (pmc/counting.h).
#include "profile/cswitch_log.h"
#include "arch/x86/clock.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/smp.h"
#include "core/spinlock.h"
#include "lib/string.h"
#include "pmc/counting.h"

volatile bool cswitch_log_on;

#define CSWITCH_RING 4096 // records per CPU
#define PROC_RING    1024

static struct {
    struct pmc_log_cswitch *ring[MAX_CPUS];
    uint32_t count[MAX_CPUS];
    uint64_t lost[MAX_CPUS];
    uint32_t events[PMC_CSWITCH_MAX_EVENTS];
    unsigned nevents;
    struct pmc_count *hw[PMC_CSWITCH_MAX_EVENTS]; // hardware events: [ncpus], a row each
    unsigned row[PMC_CSWITCH_MAX_EVENTS];
} cs;

static struct spinlock log_lock = SPINLOCK_INIT("pmc log");
static struct pmc_log_proc proc_ring[PROC_RING];
static uint32_t proc_count;
static uint64_t proc_lost;

void cswitch_log_proc(enum pmc_log_type type, uint64_t pmc_id, uint32_t source, uint32_t pid,
                      uint64_t value)
{
    spin_lock(&log_lock); // interrupts are off
    if (proc_count < PROC_RING) {
        struct pmc_log_proc *r = &proc_ring[proc_count];
        *r = (struct pmc_log_proc){
            .h = {(uint16_t)type, sizeof *r, cpu_id(), clock_ns()},
            .pid = pid,
            .event = source,
            .pmc_id = pmc_id,
            .value = value,
        };
        proc_count++;
    } else {
        proc_lost++;
    }
    spin_unlock(&log_lock);
}

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
static void cswitch_log_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t now)
{
    if (!READ_ONCE(cswitch_log_on))
        return;
    if (cs.count[c->id] >= CSWITCH_RING) {
        cs.lost[c->id]++;
        return;
    }
    struct pmc_log_cswitch *r = &cs.ring[c->id][cs.count[c->id]];
    r->h = (struct pmc_log_header){PMC_LOG_CSWITCH, sizeof *r, c->id, now};
    r->old_pid = cur->proc ? cur->proc->pid : 0;
    r->new_pid = next->proc ? next->proc->pid : 0;
    r->nevents = cs.nevents;
    r->reserved = 0;
    for (unsigned i = 0; i < PMC_CSWITCH_MAX_EVENTS; i++) {
        r->event[i] = i < cs.nevents ? (uint16_t)cs.events[i] : 0;
        r->value[i] = i < cs.nevents ? cswitch_value(c, i) : 0;
    }
    __atomic_store_n(&cs.count[c->id], cs.count[c->id] + 1, __ATOMIC_RELEASE);
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

static struct mutex cs_mutex = MUTEX_INIT("cswitch log"); // start and stop
static NTSTATUS cswitch_stop_locked(void);
static NTSTATUS cswitch_start_locked(const uint32_t *events, unsigned n);

NTSTATUS cswitch_log_stop(void)
{
    mutex_lock(&cs_mutex);
    NTSTATUS s = cswitch_stop_locked();
    mutex_unlock(&cs_mutex);
    return s;
}

NTSTATUS cswitch_log_start(const uint32_t *events, unsigned n)
{
    mutex_lock(&cs_mutex);
    NTSTATUS s = cswitch_start_locked(events, n);
    mutex_unlock(&cs_mutex);
    return s;
}

static NTSTATUS cswitch_stop_locked(void)
{
    uint64_t f = spin_lock_irqsave(&log_lock);
    bool was = cswitch_log_on;
    cswitch_log_on = false;
    spin_unlock_irqrestore(&log_lock, f);
    if (!was)
        return STATUS_PROFILING_NOT_STARTED;
    smp_call_all(cswitch_hw_on_cpu, NULL); // also: no switch is still writing a record
    cswitch_hw_free();
    return STATUS_SUCCESS;
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

static NTSTATUS cswitch_start_locked(const uint32_t *events, unsigned n)
{
    if (n == 0 || n > PMC_CSWITCH_MAX_EVENTS)
        return STATUS_INVALID_PARAMETER;
    for (unsigned i = 0; i < n; i++)
        if (!PMC_EVENT_IS_SW(events[i]) && events[i] >= ProfileSourceCount)
            return STATUS_INVALID_PARAMETER;
    if (cswitch_log_on)
        return STATUS_PROFILING_NOT_STOPPED;
    for (unsigned c = 0; c < ncpus; c++) {
        if (!cs.ring[c])
            cs.ring[c] = kmalloc(CSWITCH_RING * sizeof(struct pmc_log_cswitch));
        if (!cs.ring[c])
            return STATUS_NO_MEMORY;
    }
    NTSTATUS s = cswitch_hw_reserve(events, n);
    if (!NT_SUCCESS(s)) {
        cswitch_hw_free();
        return s;
    }
    uint64_t f = spin_lock_irqsave(&log_lock);
    memcpy(cs.events, events, n * sizeof *events);
    cs.nevents = n;
    for (unsigned c = 0; c < ncpus; c++) {
        cs.count[c] = 0;
        cs.lost[c] = 0;
    }
    proc_count = 0;
    proc_lost = 0;
    spin_unlock_irqrestore(&log_lock, f);
    smp_call_all(cswitch_hw_on_cpu, (void *)1); // the counters run before the first record
    f = spin_lock_irqsave(&log_lock);
    cswitch_log_on = true;
    spin_unlock_irqrestore(&log_lock, f);
    return STATUS_SUCCESS;
}

NTSTATUS cswitch_log_read(uint64_t first, void *buf, size_t len, size_t *bytes)
{
    size_t done = 0;
    uint64_t index = 0;
    for (unsigned c = 0; c < ncpus; c++) {
        uint32_t n = cs.ring[c] ? __atomic_load_n(&cs.count[c], __ATOMIC_ACQUIRE) : 0;
        for (uint32_t i = 0; i < n; i++, index++) {
            if (index < first)
                continue;
            if (done + sizeof(struct pmc_log_cswitch) > len)
                goto out;
            memcpy((uint8_t *)buf + done, &cs.ring[c][i], sizeof(struct pmc_log_cswitch));
            done += sizeof(struct pmc_log_cswitch);
        }
    }
    uint64_t f = spin_lock_irqsave(&log_lock);
    for (uint32_t i = 0; i < proc_count; i++, index++) {
        if (index < first)
            continue;
        if (done + sizeof(struct pmc_log_proc) > len)
            break;
        memcpy((uint8_t *)buf + done, &proc_ring[i], sizeof(struct pmc_log_proc));
        done += sizeof(struct pmc_log_proc);
    }
    spin_unlock_irqrestore(&log_lock, f);
out:
    *bytes = done;
    return STATUS_SUCCESS;
}

void cswitch_log_init(void)
{
    sched_watch_switches(cswitch_log_switch);
}
