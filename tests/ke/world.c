// The processes and their threads, context switches, the steps of a
// sequence and the operations the CPUs' tasks run, and the teardown.
//
// A process is an entry of a pool (its address never depends on malloc, so a
// replay hashes it to the same scope mutex), poisoned when its last reference
// goes. It has one thread; a CPU runs it or the idle thread. A context switch
// runs as core/sched.c's sched_locked and switch_to do: a quiescent state,
// interrupts off, switch_publish_begin, _process, _end (core/switch_publish.h)
// with a yield point between each, and only then may another CPU take the
// thread that left. An exit detaches its PMC targets, switches away for good
// and drops its thread's reference; the parent's goes when the slot is
// reused (SPAWN).
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <string.h>

#include "kx.h"

#include "arch/x86/percpu.h"
#include "core/grace.h"
#include "core/switch_publish.h"
#include "pmc/hal/trace.h"
#include "pmc/ke/profile.h"
#include "pmc/ke/profile_state.h"
#include "pmc/ke/sample.h"

#define PID_BASE 100 // pool entry i is pid PID_BASE + i (hwpmc.c indexes by it)

struct kx_proc {
    int on_cpu;   // the CPU running its thread, or switching to it; -1: none
    bool leaving; // a migration queued its switch away
    bool exited;  // its thread is gone
    bool freed;   // its last reference went: what follows is poisoned
    struct process pr;
    struct profile_process area;
};

static struct {
    unsigned ncpus, npool;
    struct kx_proc *running[KX_CPUS];
    bool publishing[KX_CPUS]; // inside switch_to's three steps
    struct kx_proc *slot[KX_PROCS];
} w;
static struct kx_proc pool[KX_POOL];

const struct process *kx_running(unsigned cpu)
{
    return w.running[cpu] ? &w.running[cpu]->pr : NULL;
}

// --- processes -------------------------------------------------------------------

static void proc_destroy(struct object *o)
{
    struct kx_proc *p = (struct kx_proc *)((char *)o - offsetof(struct kx_proc, pr.obj));
    if (p->on_cpu >= 0)
        kx_fail("process: pid %u destroyed while CPU %d runs it", p->pr.pid, p->on_cpu);
    p->freed = true;
    ASAN_POISON_MEMORY_REGION(&p->pr, (size_t)((char *)(p + 1) - (char *)&p->pr));
}

// A new process in slot t, once the one there has exited (it is reaped).
static void spawn(unsigned t)
{
    struct kx_proc *old = w.slot[t];
    if ((old && !old->exited) || w.npool == KX_POOL)
        return;
    if (old)
        object_unref(&old->pr.obj); // the parent's reference
    struct kx_proc *p = &pool[w.npool];
    p->on_cpu = -1;
    object_init(&p->pr.obj, OBJ_PROCESS, proc_destroy); // the parent's reference
    object_ref(&p->pr.obj);                             // its thread's
    p->pr.pid = PID_BASE + w.npool++;
    p->pr.layer_area = &p->area;
    p->pr.as.lock = (struct spinlock)SPINLOCK_INIT("as");
    w.slot[t] = p;
}

void kx_world_reset(unsigned ncpus)
{
    ASAN_UNPOISON_MEMORY_REGION(pool, sizeof pool);
    memset(pool, 0, sizeof pool);
    memset(&w, 0, sizeof w);
    w.ncpus = ncpus;
    for (unsigned t = 0; t < KX_PROCS; t++)
        spawn(t);
}

// The thread of p taken by cpu, once a migration's switch away from it is
// done; false when another CPU runs it or it exited.
static bool claim(struct kx_proc *p, unsigned cpu)
{
    for (unsigned i = 0; i < 64 && p->on_cpu >= 0 && p->on_cpu != (int)cpu && p->leaving; i++)
        kx_wait();
    if (p->exited || p->on_cpu >= 0)
        return false;
    p->on_cpu = (int)cpu;
    return true;
}

static void do_switch(unsigned cpu, struct kx_proc *next)
{
    struct cpu *c = &cpus[cpu];
    struct kx_proc *cur = w.running[cpu];
    grace_quiescent(); // sched_locked: outside every handler
    uint64_t f = irq_save();
    kx_yield();
    w.publishing[cpu] = true;
    switch_publish_begin(c);
    kx_yield();
    switch_publish_process(c, next ? &next->pr : NULL);
    kx_yield();
    switch_publish_end(c);
    w.publishing[cpu] = false;
    kx_stats->switches++;
    kx_yield();
    w.running[cpu] = next;
    if (cur) {
        cur->on_cpu = -1; // another CPU may take it now
        cur->leaving = false;
    }
    irq_restore(f);
}

static void op_switch(unsigned cpu, unsigned thread)
{
    struct kx_proc *next = thread ? w.slot[thread - 1] : NULL;
    if (next ? !claim(next, cpu) : !w.running[cpu])
        return;
    do_switch(cpu, next);
}

static void op_exit(unsigned cpu, struct kx_proc *p)
{
    if (!p || p->exited || w.running[cpu] != p)
        return;
    kx_pmc_exiting(&p->pr); // PROCESS_EXITING, interrupts on
    p->exited = true;
    do_switch(cpu, NULL);
    object_unref(&p->pr.obj); // its thread's reference (process_thread_gone)
}

static void migrate(unsigned cpu, unsigned t)
{
    struct kx_proc *p = w.slot[t];
    if (!p || p->exited || p->on_cpu == (int)cpu)
        return;
    if (p->on_cpu >= 0 && !p->leaving) {
        struct kx_step away = {.kind = KX_SWITCH, .cpu = (uint8_t)p->on_cpu};
        if (!kx_queue((unsigned)p->on_cpu, &away))
            return;
        p->leaving = true;
    }
    struct kx_step in = {.kind = KX_SWITCH, .cpu = (uint8_t)cpu, .a = (uint8_t)(t + 1)};
    kx_queue(cpu, &in);
}

// The exit runs where the process runs; a process that does not run is
// switched to first, on cpu.
static void exit_step(unsigned cpu, unsigned t)
{
    struct kx_proc *p = w.slot[t];
    if (!p || p->exited)
        return;
    struct kx_step op = {.kind = KX_EXIT, .a = (uint8_t)t};
    if (p->on_cpu >= 0) {
        kx_queue((unsigned)p->on_cpu, &op);
        return;
    }
    struct kx_step in = {.kind = KX_SWITCH, .a = (uint8_t)(t + 1)};
    if (kx_queue(cpu, &in))
        kx_queue(cpu, &op);
}

void kx_tick_run(unsigned cpu)
{
    if (grace_waits_for_this_cpu())
        grace_quiescent(); // core/sched.c's sched_timer: a tick from ring 3
    if (cpu == 0 && __atomic_load_n(&grace_queue, __ATOMIC_RELAXED)) {
        struct kx_step slow = {.kind = KX_IDLE}; // the slow return: the scheduler, then a poll
        kx_queue(0, &slow);
    }
}

struct process *kx_slot_process(unsigned t)
{
    return w.slot[t] && !w.slot[t]->exited ? &w.slot[t]->pr : NULL;
}

int kx_slot_cpu(unsigned t)
{
    return w.slot[t] ? w.slot[t]->on_cpu : -1;
}

unsigned kx_pid_index(const struct process *p)
{
    return p->pid - PID_BASE;
}

void kx_world_each_process(void (*fn)(struct process *p, void *arg), void *arg)
{
    for (unsigned i = 0; i < w.npool; i++)
        if (!pool[i].freed)
            fn(&pool[i].pr, arg);
}

void kx_sample_run(struct kx_sample *s)
{
    struct intr_frame f = {.rip = s->ip, .cs = s->ip >> 63 ? 0x08 : 0x2b};
    kx_stats->window += w.publishing[s->cpu];
    KeProfileInterruptWithSource(kx_sources[s->source], &f);
    kx_profiles_sample_end(s);
}

// --- steps and operations ------------------------------------------------------------

void kx_step_apply(const struct kx_step *st)
{
    unsigned cpu = st->cpu % w.ncpus, t = st->a % KX_PROCS;
    struct kx_step op = *st;
    op.cpu = (uint8_t)cpu;
    switch (st->kind) {
    case KX_RUN: kx_run_cpu(cpu, st->n); return;
    case KX_SAMPLE: kx_raise(cpu, st->a, st->b); return;
    case KX_TICK: kx_tick(cpu); return;
    case KX_MIGRATE: migrate(cpu, t); return;
    case KX_EXIT: exit_step(cpu, t); return;
    case KX_SPAWN: spawn(t); return;
    case KX_NOMEM: kx_nomem(cpu); return;
    case KX_TRACE: pmc_trace_on = !pmc_trace_on; return;
    default: kx_queue(cpu, &op); return;
    }
}

// The teardown's grace steps: everything deferred run, then every CPU
// through its idle loop twice, so that the last period ends.
static void grace_op(unsigned cpu, unsigned a)
{
    if (a == 0) {
        grace_flush();
        return;
    }
    grace_quiescent();
    grace_run_ready();
    if (a == 2 && grace_waits_for_this_cpu())
        kx_fail("grace: a period still waits for CPU %u after every CPU passed twice", cpu);
}

void kx_op_run(const struct kx_step *op, unsigned cpu)
{
    switch (op->kind) {
    case KX_SWITCH: op_switch(cpu, op->a % (KX_PROCS + 1)); return;
    case KX_EXIT: op_exit(cpu, w.slot[op->a % KX_PROCS]); return;
    case KX_IDLE:
        grace_quiescent(); // sched_idle: between interrupts
        grace_poll();
        return;
    case KX_GRACE: grace_op(cpu, op->a); return;
    case KX_PMC_START:
    case KX_PMC_STOP:
    case KX_ATTACH:
    case KX_DETACH: kx_pmc_op(op); break;
    default: kx_profile_op(op); break;
    }
    grace_poll(); // the end of a system call
}

static bool run_op(unsigned cpu, enum kx_kind kind, unsigned a, unsigned b)
{
    struct kx_step op = {
        .kind = (uint8_t)kind, .cpu = (uint8_t)cpu, .a = (uint8_t)a, .b = (uint8_t)b};
    return kx_queue(cpu, &op) && kx_drain();
}

// Everything closed, stopped, detached, exited and reaped with the
// sequences' own operations; then nothing may be left.
void kx_teardown(void)
{
    pmc_trace_on = false;
    bool ok = kx_drain();
    for (unsigned i = 0; ok && i < KX_SLOTS; i++)
        ok = run_op(i % w.ncpus, KX_CLOSE, i, 0);
    for (unsigned m = 0; ok && m < KX_PMCS; m++) {
        ok = run_op(0, KX_PMC_STOP, m, 0);
        for (unsigned t = 0; ok && t < KX_PROCS; t++)
            ok = run_op(1, KX_DETACH, m, t);
    }
    for (unsigned t = 0; ok && t < KX_PROCS; t++) {
        exit_step(0, t);
        ok = kx_drain();
    }
    ok = ok && run_op(0, KX_GRACE, 0, 0);
    for (unsigned a = 1; a <= 2; a++)
        for (unsigned c = 0; ok && c < w.ncpus; c++)
            ok = run_op(c, KX_GRACE, a, 0);
    for (unsigned t = 0; ok && t < KX_PROCS; t++)
        if (w.slot[t])
            object_unref(&w.slot[t]->pr.obj); // reaped
    char msg[KX_MSG];
    if (ok && object_live_count() != 0)
        kx_fail("leak: %llu objects live at the end", (unsigned long long)object_live_count());
    else if (ok && (!kx_kernel_idle(msg, sizeof msg) || !kx_pmc_idle(msg, sizeof msg)))
        kx_fail("%s", msg);
}
