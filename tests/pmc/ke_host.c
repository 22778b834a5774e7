// What the PMC object (kernel/pmc/hwpmc/) and the counting log need
// from the rest of the kernel, for the hosted tests: CPUs with a current
// thread, processes with their profile-layer area, process and switch
// watchers, objects, the profile-source reference count, and a sample log
// that counts what it is given. Everything below the HAL (MSRs, time,
// spinlocks with interrupts, smp_call_all, the heap) is the PMU model's.
#include "ke_host.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/clock.h"
#include "core/mutex.h"
#include "core/sched.h"
#include "core/spinlock.h"
#include "core/swevent.h"
#include "lib/panic.h"
#include "pmc/hal/hal.h"
#include "pmc/ke/profile.h"
#include "pmc/ke/profile_state.h"
#include "pmc/hwpmc/kind_sampling.h"
#include "pmc/hwpmc/log.h"
#include "pmc/ke/sample.h"
#include "pmu_model.h"
#include "tap.h"

void (*sched_tick_hook)(void);                // cpus[] and ncpus are the model's
void (*process_fault_hook)(bool demand_zero); // core/process.c's; set, never called here

static struct thread idle[MAX_CPUS];
static unsigned objects_live;
static process_watcher process_watchers[PROCESS_WATCHERS];
static unsigned nprocess_watchers;
static struct {
    sched_switch_watcher fn;
    const volatile uint32_t *busy;
} switch_watchers[SCHED_SWITCH_WATCHERS];
static unsigned nswitch_watchers;
static struct profile_process areas[16]; // a process's area, by pid % 16
static struct process *listed[16];       // the live processes, by pid % 16
struct ke_host_log ke_host_log, ke_host_log_other;

void process_watch(process_watcher fn)
{
    process_watchers[nprocess_watchers++] = fn;
}

void sched_watch_switches(sched_switch_watcher fn, const volatile uint32_t *busy)
{
    switch_watchers[nswitch_watchers].fn = fn;
    switch_watchers[nswitch_watchers++].busy = busy;
}

void ke_host_reset(unsigned n)
{
    memset(idle, 0, sizeof idle);
    ncpus = n;
    for (unsigned c = 0; c < n; c++) {
        cpus[c].id = c;
        cpus[c].online = true;
        idle[c].cpu = (int)c;
        cpus[c].current = &idle[c];
    }
    sched_tick_hook = NULL;
    process_fault_hook = NULL;
    nprocess_watchers = nswitch_watchers = 0;
    memset(listed, 0, sizeof listed);
    memset(&ke_host_log, 0, sizeof ke_host_log);
    memset(&ke_host_log_other, 0, sizeof ke_host_log_other);
}

struct cpu *this_cpu(void)
{
    return &cpus[cpu_id()];
}

uint64_t sched_cpus_running(const struct process *p)
{
    uint64_t mask = 0;
    for (unsigned i = 0; i < ncpus; i++)
        if (cpus[i].current_process == p)
            mask |= 1ull << i;
    return mask;
}

struct process *process_current(void)
{
    return cpus[cpu_id()].current->proc;
}

static void process_never_destroyed(struct object *o)
{
    tap_ok(false, "process %u: its last reference dropped", ((struct process *)o)->pid);
}

void ke_host_process(struct process *p, struct thread *t, uint32_t pid)
{
    memset(p, 0, sizeof *p);
    memset(t, 0, sizeof *t);
    p->obj = (struct object){OBJ_PROCESS, 1, process_never_destroyed}; // the test's reference
    p->layer_area = &areas[pid % 16];
    memset(p->layer_area, 0, sizeof areas[0]);
    p->pid = pid;
    p->thread = t;
    p->privileged = true;
    t->proc = p;
    t->cpu = -1;
    listed[pid % 16] = p;
}

struct pmc *ke_host_allocate(struct process *owner, uint32_t source, uint32_t mode, uint32_t flags,
                             NTSTATUS *st)
{
    struct pmc_alloc a = {.source = source, .mode = mode, .flags = flags, .cpu = PMC_CPU_ANY};
    struct object *o = NULL;
    *st = pmc_allocate(owner, &a, &o);
    return NT_SUCCESS(*st) ? pmc_from_object(o) : NULL;
}

struct thread *ke_host_running(unsigned cpu)
{
    return cpus[cpu].current;
}

struct switch_args {
    struct thread *next;
};

static void switch_here(void *arg)
{
    struct switch_args *a = arg;
    struct cpu *c = &cpus[cpu_id()];
    struct thread *next = a->next ? a->next : &idle[c->id];
    struct thread *cur = c->current;
    c->current_process = next->proc; // before the watchers, as core/sched.c's switch_to
    for (unsigned i = 0; i < nswitch_watchers; i++)
        if (*switch_watchers[i].busy)
            switch_watchers[i].fn(c, cur, next, clock_ns());
    c->current = next;
    next->cpu = (int)c->id;
}

void ke_host_switch(unsigned cpu, struct thread *next)
{
    struct switch_args a = {next};
    model_on_cpu(cpu, switch_here, &a);
}

// The exiting thread's process-context step (interrupts on, on its CPU).
static void exit_here(void *arg)
{
    struct process *p = arg;
    uint64_t f = irq_save();
    irq_restore(RFLAGS_IF);
    for (unsigned i = 0; i < nprocess_watchers; i++)
        process_watchers[i](p, PROCESS_EXITING);
    irq_save();
    irq_restore(f);
}

void ke_host_exit(unsigned cpu, struct process *p)
{
    p->exit_status = 3;
    model_on_cpu(cpu, exit_here, p);
    p->exited = true;
}

static void tick_here(void *arg)
{
    (void)arg;
    if (sched_tick_hook)
        sched_tick_hook();
}

void ke_host_tick(unsigned cpu)
{
    model_on_cpu(cpu, tick_here, NULL);
}

// ---- objects ----

void object_init(struct object *o, enum object_type type, void (*destroy)(struct object *))
{
    o->type = type;
    o->refs = 1;
    o->destroy = destroy;
    objects_live++;
}

void object_ref(struct object *o)
{
    o->refs++;
}

void object_unref(struct object *o)
{
    if (--o->refs == 0) {
        objects_live--;
        o->destroy(o);
    }
}

uint64_t object_live_count(void)
{
    return objects_live;
}

// ---- the sample log and the fan-out, counted ----

// A log is the counts of its owner's struct ke_host_log; a PMC writing it
// holds it (pmc_log_use), and its samplers hold its one CPU part.
struct log_cpu {
    struct ke_host_log *counts;
};
struct pmc_log {
    struct log_cpu part;
};
static struct pmc_log host_logs[2] = {{{&ke_host_log}}, {{&ke_host_log_other}}};

void pmc_log_sample(void *samplers, const struct intr_frame *f)
{
    bool user = (f->cs & 3) == 3;
    for (struct pmc_sampler *s = samplers; s; s = s->next) {
        if (!pmc_sampler_take(s, user))
            continue;
        const struct pmclog_sample *head = (const struct pmclog_sample *)s->head;
        s->log->counts->samples++;
        s->log->counts->last_pmc = head->pmc;
    }
}

struct log_cpu *pmc_log_cpu(struct pmc_log *log, unsigned cpu)
{
    (void)cpu;
    return &log->part; // the model's log counts records, it keeps no rings
}

// An off-CPU record (a process-scope PMC with PMC_F_LOG_OFFCPU): counted as
// a record of its type; its chain is the kernel's own walk, not modelled.
void pmc_log_offcpu(struct pmc_log *log, const struct pmclog_offcpu *head, bool chain,
                    const struct intr_frame *f)
{
    (void)head;
    (void)chain;
    (void)f;
    log->part.counts->records[PMCLOG_OFFCPU < 16 ? PMCLOG_OFFCPU : 0]++;
}

// As kernel/pmc/hwpmc/log.c's: the writes counted per CPU, and a record
// not written when one was written since its mark.
static uint32_t log_writes[MAX_CPUS];

uint32_t pmc_log_mark(struct pmc_log *log)
{
    (void)log;
    return log_writes[cpu_id()];
}

bool pmc_log_write_unchanged(struct pmc_log *log, struct pmclog_header *rec, uint32_t size,
                             uint32_t mark)
{
    if (log_writes[cpu_id()] != mark)
        return false;
    pmc_log_write_irqoff(log, rec, size);
    return true;
}

void pmc_log_write_irqoff(struct pmc_log *log, struct pmclog_header *rec, uint32_t size)
{
    struct ke_host_log *l = log->part.counts;
    log_writes[cpu_id()]++;
    rec->cpu = (uint16_t)cpu_id();
    rec->size = size;
    l->records[rec->type < 16 ? rec->type : 0]++;
    if (l->nbytes + size <= sizeof l->bytes) {
        memcpy(l->bytes + l->nbytes, rec, size);
        l->nbytes += size;
    }
}

NTSTATUS pmc_log_use(const struct process *p, struct pmc_log **out)
{
    *out = NULL;
    for (unsigned k = 0; p && k < 2; k++)
        if (host_logs[k].part.counts->owner_pid && host_logs[k].part.counts->owner_pid == p->pid)
            *out = &host_logs[k];
    if (!*out)
        return STATUS_PMC_NO_LOG;
    (*out)->part.counts->users++;
    return STATUS_SUCCESS;
}

void pmc_log_unuse(struct pmc_log *log)
{
    log->part.counts->users--;
}

void pmc_log_map_process(const struct process *p, const uint8_t *elf, size_t size)
{
    (void)p;
    (void)elf;
    (void)size;
}

void pmc_log_process_gone(struct process *p)
{
    (void)p;
}

void sample_plans_drop(void)
{
    ke_host_log.drops++;
}

uint64_t samples_sink[MAX_CPUS][8]; // as ke/sample.c's

// The fan-out is not built here: the tests call the consumers' plan and take
// (pmc_samplers_make, pmc_log_sample) themselves.
void sample_consumer_register(const struct sample_consumer *c)
{
    (void)c;
}

// ---- what the PMC object calls and these tests do not exercise ----

// The processes ke_host_process made, with their parents (0 unless the test
// set one), as core/process.c lists them.
unsigned process_list(struct sys_process_info *out, unsigned skip, unsigned max)
{
    unsigned n = 0, seen = 0;
    for (unsigned k = 0; k < 16 && n < max; k++) {
        const struct process *p = listed[k];
        if (!p || p->exited || seen++ < skip)
            continue;
        out[n++] =
            (struct sys_process_info){.pid = p->pid, .parent = p->parent, .state = PROC_RUNNABLE};
    }
    return n;
}

struct process *process_by_pid(uint32_t pid)
{
    struct process *p = listed[pid % 16];
    if (!p || p->pid != pid || p->exited)
        return NULL;
    object_ref(&p->obj);
    return p;
}

const struct ramdisk_file *ramdisk_find(const char *name)
{
    (void)name;
    return NULL;
}

uint64_t KeQueryIntervalProfile(KPROFILE_SOURCE source)
{
    struct hal_profile_source_details d;
    if (!NT_SUCCESS(HalQueryProfileSource(source, &d)) || !d.supported)
        return 0;
    return d.interval;
}

uint64_t swevent_thread_value(const struct thread *t, enum pmc_sw_event e)
{
    return t->sw[e];
}

const char *swevent_name(enum pmc_sw_event e)
{
    static const char *const names[PMC_SW_COUNT] = {
        "task-clock",   "context-switches",   "cpu-migrations", "page-faults",
        "system-calls", "profile-interrupts", "profile-ticks"};
    return (unsigned)e < PMC_SW_COUNT ? names[e] : "?";
}

struct swevent_cpu swevent_cpus[MAX_CPUS]; // as core/swevent.c's

uint64_t swevent_cpu_value(unsigned cpu, enum pmc_sw_event e)
{
    return swevent_cpus[cpu].count[e];
}

NTSTATUS KeReferenceProfileSource(KPROFILE_SOURCE source)
{
    (void)source;
    return STATUS_SUCCESS;
}

NTSTATUS KeReferenceProfileSourceLevels(KPROFILE_SOURCE source, unsigned rings)
{
    (void)source;
    (void)rings;
    return STATUS_SUCCESS;
}

// The host's threads keep one total per event: every ring.
bool swevent_has_levels(enum pmc_sw_event e)
{
    return e == PMC_SW_TASK_CLOCK;
}

uint64_t swevent_thread_value_levels(const struct thread *t, enum pmc_sw_event e, unsigned rings)
{
    (void)rings;
    return swevent_thread_value(t, e);
}

uint64_t swevent_cpu_value_levels(unsigned cpu, enum pmc_sw_event e, unsigned rings)
{
    (void)rings;
    return swevent_cpu_value(cpu, e);
}

NTSTATUS KeDereferenceProfileSource(KPROFILE_SOURCE source)
{
    (void)source;
    return STATUS_SUCCESS;
}

// One host thread; under model_interleave, CPUs that wait run the others.
void mutex_lock(struct mutex *m)
{
    model_spin_wait(&m->lock);
    m->lock.locked = 1;
}

void mutex_unlock(struct mutex *m)
{
    m->lock.locked = 0;
}

void spin_lock(struct spinlock *l)
{
    model_spin_wait(l);
    l->locked = 1;
}

void spin_unlock(struct spinlock *l)
{
    l->locked = 0;
}

void panic(const char *fmt, ...)
{
    fprintf(stderr, "kernel panic: %s\n", fmt);
    abort();
}
