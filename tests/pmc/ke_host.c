// What kernel/profile/vcounter.c needs from the rest of the kernel, for the
// hosted tests: CPUs with a current thread, processes, objects, and the
// profile-source reference count. Everything below the HAL (MSRs, time,
// spinlocks with interrupts, smp_call_all, the heap) is the PMU model's.
#include "ke_host.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/clock.h"
#include "core/mutex.h"
#include "core/spinlock.h"
#include "lib/panic.h"
#include "profile/ke_profile.h"
#include "pmu_model.h"
#include "tap.h"

void (*sched_tick_hook)(void); // cpus[] and ncpus are the model's

static struct thread idle[MAX_CPUS];
static unsigned objects_live;

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
}

struct cpu *this_cpu(void)
{
    return &cpus[cpu_id()];
}

struct process *process_current(void)
{
    return cpus[cpu_id()].current->proc;
}

void ke_host_process(struct process *p, struct thread *t, uint32_t pid)
{
    memset(p, 0, sizeof *p);
    memset(t, 0, sizeof *t);
    p->pid = pid;
    p->thread = t;
    p->privileged = true;
    t->proc = p;
    t->cpu = -1;
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
    if (READ_ONCE(vcounter_switch_hooks))
        vcounter_switch(c, cur, next, clock_ns());
    c->current = next;
    next->cpu = (int)c->id;
}

void ke_host_switch(unsigned cpu, struct thread *next)
{
    struct switch_args a = {next};
    model_on_cpu(cpu, switch_here, &a);
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

// ---- what vcounter.c calls and these tests do not exercise ----

uint64_t swevent_thread_value(const struct thread *t, enum pmc_sw_event e)
{
    return t->sw[e];
}

uint64_t swevent_cpu_value(unsigned cpu, enum pmc_sw_event e)
{
    return cpus[cpu].sw[e];
}

NTSTATUS KeReferenceProfileSource(KPROFILE_SOURCE source)
{
    (void)source;
    return STATUS_SUCCESS;
}

NTSTATUS KeDereferenceProfileSource(KPROFILE_SOURCE source)
{
    (void)source;
    return STATUS_SUCCESS;
}

void mutex_lock(struct mutex *m)
{
    (void)m; // one host thread
}

void mutex_unlock(struct mutex *m)
{
    (void)m;
}

void spin_lock(struct spinlock *l)
{
    if (l->locked)
        tap_ok(false, "spinlock %s taken twice", l->name);
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
