// The simulated CPUs (see kx.h): each a stack of contexts (task, then a
// maskable interrupt, then an NMI), one context of the machine running at a
// time until its next yield point; and what the kernel asks of its CPUs:
// cpu_id and this_cpu, the interrupt flag, spinlocks and mutexes,
// cross-CPU calls, sched_cpus_running and the clock.
#include <stdio.h>
#include <string.h>

#include "kx.h"

#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "core/grace.h"
#include "core/mutex.h"
#include "core/sched.h"
#include "core/smp.h"

struct cpu cpus[MAX_CPUS];
unsigned ncpus;
volatile unsigned ncpus_online;

#define DEPTH 3 // task, a maskable interrupt, an NMI

struct kx_ctx {
    struct kx_fiber *fiber;
    enum kx_ctx_kind kind;
    unsigned cpu;
    bool used;
    bool irq_off;      // a task's interrupt flag is clear (interrupt contexts: always)
    unsigned waits;    // yields in a row spent waiting on another CPU
    struct kx_step op; // a task's operation
    struct kx_sample s;
};

struct call {
    void (*fn)(void *arg);
    void *arg;
    unsigned *pending; // on the caller's stack: it waits until every target ran fn
};

static struct kx_cpu {
    struct kx_ctx *stack[DEPTH];
    unsigned depth;
    struct kx_step queue[KX_QUEUE];
    unsigned qhead, qlen;
    struct call calls[KX_CPUS];
    unsigned ncalls;
} cpu_state[KX_CPUS];

static struct kx_ctx contexts[KX_CPUS * DEPTH];

static struct {
    unsigned ncpus, samples;
    unsigned nmi; // KX_NMI_*
    uint64_t clock, ns;
    uint64_t slices, cpu_slices[KX_CPUS]; // slices run, in all and by CPU
    struct kx_ctx *now;                   // the context running (NULL: the harness itself)
} m;

void kx_machine_reset(unsigned n, unsigned nmi)
{
    memset(cpu_state, 0, sizeof cpu_state);
    for (unsigned i = 0; i < sizeof contexts / sizeof contexts[0]; i++)
        contexts[i].used = false;
    m.ncpus = n;
    m.nmi = nmi;
    m.samples = 0;
    m.now = NULL;
    ncpus = n;
    ncpus_online = n;
    for (unsigned c = 0; c < KX_CPUS; c++) {
        cpus[c].self = &cpus[c];
        cpus[c].id = c;
        cpus[c].online = c < n;
        cpus[c].current_process = NULL;
        cpus[c].plan_epoch += 2; // a drop: no plan of an earlier sequence holds
    }
    percpu_read_hook = kx_yield;
}

uint64_t kx_clock(void)
{
    return m.clock;
}

unsigned kx_ncpus(void)
{
    return m.ncpus;
}

unsigned kx_samples_raised(void)
{
    return m.samples;
}

void kx_yield(void)
{
    if (!m.now)
        return;
    m.now->waits = 0;
    m.clock++;
    kx_fiber_yield();
}

void kx_wait(void)
{
    if (!m.now)
        return;
    m.now->waits++;
    m.clock++;
    kx_fiber_yield();
}

// --- what the kernel asks of its CPU ------------------------------------------

static unsigned here(void)
{
    return m.now ? m.now->cpu : 0; // the harness acts as CPU 0
}

unsigned cpu_id(void)
{
    kx_yield();
    return here();
}

struct cpu *this_cpu(void)
{
    kx_yield();
    return &cpus[here()];
}

uint64_t irq_save(void)
{
    struct kx_ctx *x = m.now;
    if (!x || x->kind != CTX_TASK)
        return 0; // an interrupt context: off
    uint64_t was = x->irq_off ? 0 : RFLAGS_IF;
    x->irq_off = true;
    return was;
}

void irq_restore(uint64_t flags)
{
    if (m.now && m.now->kind == CTX_TASK)
        m.now->irq_off = !(flags & RFLAGS_IF);
}

uint64_t spin_lock_irqsave(struct spinlock *l)
{
    uint64_t f = irq_save();
    kx_yield();
    while (l->locked)
        kx_wait();
    l->locked = 1;
    l->owner_cpu = (int)here();
    return f;
}

void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags)
{
    if (!l->locked)
        kx_fail("spinlock %s: released while free", l->name);
    l->locked = 0;
    l->owner_cpu = -1;
    irq_restore(flags);
    kx_yield();
}

// A sleeping lock: taken only by a task with interrupts on; it spins here,
// interrupts on, where the kernel's would sleep.
void mutex_lock(struct mutex *mx)
{
    if (m.now && (m.now->kind != CTX_TASK || m.now->irq_off))
        kx_fail("mutex %s: taken with interrupts off", mx->lock.name);
    kx_yield();
    while (mx->lock.locked)
        kx_wait();
    mx->lock.locked = 1;
    mx->lock.owner_cpu = (int)here();
}

void mutex_unlock(struct mutex *mx)
{
    if (!mx->lock.locked || mx->lock.owner_cpu != (int)here())
        kx_fail("mutex %s: released by CPU %u, not its holder", mx->lock.name, here());
    mx->lock.locked = 0;
    mx->lock.owner_cpu = -1;
    kx_yield();
}

uint64_t clock_ns(void)
{
    kx_yield();
    m.ns += 50000; // 20 reads a millisecond: grace_wait's expedite bound passes
    return m.ns;
}

uint64_t smp_online_mask(void)
{
    return (1ull << m.ncpus) - 1;
}

// As core/sched.c's, with a yield after its fence and between its loads.
uint64_t sched_cpus_running(const struct process *p)
{
    uint64_t mask = 0;
    kx_yield();
    for (unsigned i = 0; i < m.ncpus; i++) {
        if (__atomic_load_n(&cpus[i].current_process, __ATOMIC_ACQUIRE) == p)
            mask |= 1ull << i;
        kx_yield();
    }
    return mask;
}

// As core/smp.c's: a call queued on each other CPU of mask (each runs it when
// its interrupts are on, after its samples), the caller's own run here with
// interrupts off, then the wait for every target.
void smp_call_many(uint64_t mask, void (*fn)(void *arg), void *arg)
{
    struct kx_ctx *x = m.now;
    if (!x || x->kind != CTX_TASK || x->irq_off) {
        kx_fail("smp_call_many: not from a task with interrupts on");
        return;
    }
    unsigned pending = 0;
    kx_yield();
    mask &= smp_online_mask();
    for (unsigned i = 0; i < m.ncpus; i++) {
        if (i == x->cpu || !(mask & (1ull << i)))
            continue;
        struct kx_cpu *t = &cpu_state[i];
        t->calls[t->ncalls++] = (struct call){fn, arg, &pending};
        pending++;
    }
    if (mask & (1ull << x->cpu)) {
        uint64_t f = irq_save();
        fn(arg);
        irq_restore(f);
    }
    while (__atomic_load_n(&pending, __ATOMIC_ACQUIRE))
        kx_wait();
}

void smp_call_all(void (*fn)(void *arg), void *arg)
{
    smp_call_many(smp_online_mask(), fn, arg);
}

// --- contexts -----------------------------------------------------------------

// core/smp.c's call_ipi: a quiescent state, then the calls queued so far.
static void call_body(struct kx_ctx *x)
{
    kx_stats->calls++;
    grace_quiescent();
    struct kx_cpu *cs = &cpu_state[x->cpu];
    for (unsigned n = cs->ncalls; n > 0; n--) {
        struct call c = cs->calls[0];
        memmove(&cs->calls[0], &cs->calls[1], --cs->ncalls * sizeof cs->calls[0]);
        c.fn(c.arg);
        __atomic_fetch_sub(c.pending, 1, __ATOMIC_RELEASE);
    }
}

static void body(void *arg)
{
    struct kx_ctx *x = arg;
    if (x->kind == CTX_TASK)
        kx_op_run(&x->op, x->cpu);
    else if (x->kind == CTX_CALL)
        call_body(x);
    else if (x->kind == CTX_TICK)
        kx_tick_run(x->cpu);
    else
        kx_sample_run(&x->s);
}

static struct kx_ctx *push(unsigned cpu, enum kx_ctx_kind kind)
{
    struct kx_cpu *cs = &cpu_state[cpu];
    struct kx_ctx *x = contexts;
    while (x->used)
        x++; // DEPTH per CPU: one is free
    if (!x->fiber)
        x->fiber = kx_fiber_new();
    x->used = true;
    x->kind = kind;
    x->cpu = cpu;
    x->irq_off = false;
    x->waits = 0;
    memset(&x->s, 0, sizeof x->s);
    cs->stack[cs->depth++] = x;
    kx_fiber_start(x->fiber, body, x);
    return x;
}

static struct kx_ctx *top(unsigned cpu)
{
    struct kx_cpu *cs = &cpu_state[cpu];
    return cs->depth ? cs->stack[cs->depth - 1] : NULL;
}

// Interrupts on: nothing runs (the idle loop or user mode), or the task with
// its flag set.
static bool interruptible(unsigned cpu)
{
    struct kx_ctx *x = top(cpu);
    return !x || (x->kind == CTX_TASK && !x->irq_off);
}

bool kx_cpu_busy(unsigned cpu)
{
    struct kx_cpu *cs = &cpu_state[cpu];
    return cs->depth || cs->qlen || cs->ncalls;
}

bool kx_cpu_irqs_off(unsigned cpu)
{
    struct kx_ctx *x = top(cpu);
    return x && x->kind == CTX_TASK && x->irq_off;
}

bool kx_queue(unsigned cpu, const struct kx_step *op)
{
    struct kx_cpu *cs = &cpu_state[cpu];
    if (cpu >= m.ncpus || cs->qlen == KX_QUEUE)
        return false;
    cs->queue[(cs->qhead + cs->qlen++) % KX_QUEUE] = *op;
    return true;
}

bool kx_raise(unsigned cpu, unsigned source, unsigned addr)
{
    struct kx_cpu *cs = &cpu_state[cpu];
    bool nmi = m.nmi & (kx_sources[source % KX_SOURCES] == ProfileTime ? KX_NMI_TIMER : KX_NMI_PMI);
    if (cpu >= m.ncpus)
        return false;
    for (unsigned d = 0; d < cs->depth; d++)
        if (cs->stack[d]->kind == CTX_NMI)
            return false; // NMIs do not nest (the next one waits for the IRET)
    if (!nmi && !interruptible(cpu))
        return false;
    struct kx_ctx *x = push(cpu, nmi ? CTX_NMI : CTX_IRQ);
    x->s = (struct kx_sample){
        .cpu = cpu, .source = source % KX_SOURCES, .ip = kx_addrs[addr % KX_ADDRS]};
    m.samples++;
    return true;
}

bool kx_tick(unsigned cpu)
{
    if (cpu >= m.ncpus || cpu_state[cpu].depth || !cpus[cpu].current_process)
        return false; // the kernel or the idle loop runs there, not ring 3
    push(cpu, CTX_TICK);
    return true;
}

// The context to run next on cpu: a cross-CPU call taken where interrupts
// are on, else the top one, else the next queued operation's task.
static struct kx_ctx *next_on(unsigned cpu)
{
    struct kx_cpu *cs = &cpu_state[cpu];
    if (cs->ncalls && interruptible(cpu))
        return push(cpu, CTX_CALL);
    if (cs->depth)
        return top(cpu);
    if (!cs->qlen)
        return NULL;
    struct kx_step op = cs->queue[cs->qhead];
    cs->qhead = (cs->qhead + 1) % KX_QUEUE;
    cs->qlen--;
    struct kx_ctx *x = push(cpu, CTX_TASK);
    x->op = op;
    return x;
}

bool kx_cpu_step(unsigned cpu)
{
    struct kx_ctx *x = next_on(cpu);
    if (!x)
        return false;
    bool sample = x->kind == CTX_IRQ || x->kind == CTX_NMI;
    if (sample && !x->s.entry) {
        x->s.proc = cpus[cpu].current_process; // fixed while the sample runs
        x->s.entry = ++m.clock;
        x->s.others = m.slices - m.cpu_slices[cpu];
    }
    if (sample)
        kx_watch_begin(&x->s);
    m.now = x;
    m.slices++;
    m.cpu_slices[cpu]++;
    kx_fiber_resume(x->fiber);
    m.now = NULL;
    if (sample)
        kx_watch_end(&x->s);
    if (kx_fiber_done(x->fiber)) {
        kx_stats->held += sample && m.slices - m.cpu_slices[cpu] != x->s.others;
        x->used = false;
        cpu_state[cpu].depth--;
    }
    kx_sets_scan();
    return true;
}

void kx_run_cpu(unsigned cpu, unsigned n)
{
    if (cpu >= m.ncpus)
        return;
    for (unsigned i = 0; i < (n ? n : 4096u) && !kx_failed(); i++) {
        if (!kx_cpu_step(cpu))
            return;
        struct kx_ctx *x = top(cpu);
        if (!n && x && x->waits >= 3)
            return; // waiting on another CPU
    }
}

// Every CPU in turn until none has anything to run. A round in which every
// context only waited, 500 times over, is a deadlock.
bool kx_drain(void)
{
    unsigned stuck = 0;
    for (unsigned round = 0; round < 200000 && !kx_failed(); round++) {
        bool ran = false, progress = false;
        for (unsigned c = 0; c < m.ncpus; c++) {
            if (!kx_cpu_step(c))
                continue;
            ran = true;
            struct kx_ctx *x = top(c);
            progress |= !x || x->waits == 0;
        }
        if (!ran)
            return true;
        stuck = progress ? 0 : stuck + 1;
        if (stuck == 500)
            break;
    }
    char what[256] = "";
    for (unsigned c = 0; c < m.ncpus; c++)
        kx_ctx_describe(c, what + strlen(what), (unsigned)(sizeof what - strlen(what)));
    kx_fail("deadlock: no CPU goes on:%s", what);
    return false;
}

void kx_each_sample(void (*fn)(const struct kx_sample *s, void *arg), void *arg)
{
    for (unsigned c = 0; c < m.ncpus; c++)
        for (unsigned d = 0; d < cpu_state[c].depth; d++) {
            const struct kx_ctx *x = cpu_state[c].stack[d];
            if ((x->kind == CTX_IRQ || x->kind == CTX_NMI) && x->s.entry)
                fn(&x->s, arg);
        }
}

void kx_ctx_describe(unsigned cpu, char *buf, unsigned size)
{
    static const char *const names[] = {"task", "call", "tick", "irq", "nmi"};
    const struct kx_cpu *cs = &cpu_state[cpu];
    int n = snprintf(buf, size, " cpu%u[", cpu);
    for (unsigned d = 0; d < cs->depth && n > 0 && (unsigned)n < size; d++) {
        const struct kx_ctx *x = cs->stack[d];
        n += snprintf(buf + n, size - (unsigned)n, "%s%s%s", d ? " " : "", names[x->kind],
                      x->kind == CTX_TASK && x->irq_off ? "(cli)" : "");
    }
    if (n > 0 && (unsigned)n < size)
        snprintf(buf + n, size - (unsigned)n, "]%s", cs->qlen ? "+queued" : "");
}
