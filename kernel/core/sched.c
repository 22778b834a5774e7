// The scheduler: one run queue, round-robin, per-CPU idle threads.
#include "core/sched.h"

#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"
#include "arch/x86/gdt.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/percpu.h"
#include "arch/x86/user_time.h"
#include "arch/x86/timer.h"
#include "arch/x86/trap.h"
#include "arch/x86/vectors.h"

#include "core/grace.h"
#include "core/heap.h"
#include "core/process.h"
#include "core/spinlock.h"
#include "core/swevent.h"
#include "core/switch_publish.h"
#include "core/vm.h"

void switch_context(uint64_t *save_rsp, uint64_t load_rsp);
void thread_start(void);
void sched_after_switch(void);
void thread_first_run(struct trapframe *tf);

static struct spinlock rq_lock = SPINLOCK_INIT("run queue");
static struct thread *rq_head, *rq_tail; // runnable threads, FIFO
static struct thread *all_threads;       // every thread but the idle ones, for wake-ups
static struct thread idle_threads[MAX_CPUS];
static const volatile bool never_killed;

struct thread *current_thread(void)
{
    return this_cpu()->current;
}

static void enqueue(struct thread *t)
{
    t->run_next = NULL;
    if (rq_tail)
        rq_tail->run_next = t;
    else
        rq_head = t;
    rq_tail = t;
}

static struct thread *dequeue(void)
{
    struct thread *t = rq_head;
    if (t) {
        rq_head = t->run_next;
        if (!rq_head)
            rq_tail = NULL;
    }
    return t;
}

static void resched_ipi(struct trapframe *tf)
{
    UNUSED(tf); // waking the CPU from hlt is the whole point
}

// The scheduler tick, a periodic slot of the per-CPU timer.
void (*sched_tick_hook)(void);

static void sched_timer(const struct intr_frame *f, void *arg)
{
    UNUSED(arg);
    struct cpu *c = this_cpu();
    c->ticks++;
    sched_tick();
    // A tick that interrupted ring 3 is a quiescent state: no kernel code
    // was running, and no sample is half done between two timer slots. From
    // kernel mode, a pass through the scheduler is asked for instead.
    if (grace_waits_for_this_cpu()) {
        if (f->cs & 3)
            grace_quiescent();
        else
            c->need_resched = true;
    }
    // Deferred functions run where grace_poll is called: the idle loop and
    // the end of a system call. CPU 0's tick sends it through the slow return
    // (which polls) too, so that they run when every CPU spins in ring 3.
    if (c->id == 0 && (f->cs & 3) && READ_ONCE(grace_queue))
        c->need_resched = true;
    void (*hook)(void) = READ_ONCE(sched_tick_hook);
    if (hook)
        hook();
}

// Call after timer_init_cpu: the scheduler tick starts here.
void sched_init_cpu(void)
{
    struct cpu *c = this_cpu();
    struct thread *t = &idle_threads[c->id];
    t->state = T_RUNNING;
    t->cpu = (int)c->id;
    t->kstack_top = (uint64_t)c->stack_top;
    t->killed = &never_killed;
    c->idle = t;
    c->current = t;
    c->current_process = NULL;
    c->kill_pending = t->killed;
    c->user_tsc = &t->user_tsc;
    if (c->id == 0) {
        irq_register(VEC_RESCHED, resched_ipi);
        trap_user_return_hook = sched_user_return_slow;
    }
    uint64_t f = irq_save();
    timer_periodic_start(TIMER_SLOT_SCHED, 1000000000ull / SCHED_TICK_HZ, sched_timer, NULL);
    irq_restore(f);
}

// Wake one halted CPU so it picks up new work (rq_lock held).
static void kick_idle_cpu(void)
{
    unsigned self = cpu_id();
    for (unsigned i = 0; i < ncpus; i++) {
        if (i != self && cpus[i].online && READ_ONCE(cpus[i].idling)) {
            lapic_send_ipi(cpus[i].apic_id, VEC_RESCHED);
            return;
        }
    }
}

static struct {
    sched_switch_watcher fn;
    const volatile uint32_t *busy;
} switch_watchers[SCHED_SWITCH_WATCHERS];
static unsigned nswitch_watchers;

void sched_watch_switches(sched_switch_watcher fn, const volatile uint32_t *busy)
{
    assert(nswitch_watchers < SCHED_SWITCH_WATCHERS);
    switch_watchers[nswitch_watchers].fn = fn;
    switch_watchers[nswitch_watchers].busy = busy;
    __atomic_store_n(&nswitch_watchers, nswitch_watchers + 1, __ATOMIC_RELEASE);
}

// Make next the running thread of this CPU. rq_lock held, interrupts off.
static void switch_to(struct cpu *c, struct thread *cur, struct thread *next)
{
    uint64_t now = clock_ns();
    swevent_switch(c, cur, next, now - cur->run_start_ns);
    cur->cpu_ns += now - cur->run_start_ns;
    // The new process runs, for the samples and the CPUs that ask, before
    // the watchers (core/switch_publish.h).
    switch_publish_begin(c);
    switch_publish_process(c, next->proc);
    switch_publish_end(c);
    unsigned watchers = __atomic_load_n(&nswitch_watchers, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < watchers; i++)
        if (__builtin_expect(*switch_watchers[i].busy != 0, 0))
            switch_watchers[i].fn(c, cur, next, now);
    next->run_start_ns = now;
    next->state = T_RUNNING;
    next->cpu = (int)c->id;
    c->current = next;
    c->kill_pending = next->killed;
    c->user_tsc = &next->user_tsc;
    if (next->proc) {
        c->kernel_rsp = next->kstack_top;  // syscall entry stack
        c->tss->rsp[0] = next->kstack_top; // interrupt entry stack from ring 3
        if (read_cr3() != next->proc->as.pml4)
            write_cr3(next->proc->as.pml4);
    } else if (read_cr3() != kernel_cr3) {
        // Idle never keeps a process's tables loaded: they may be freed under it.
        write_cr3(kernel_cr3);
    }
    if (cur->proc && cur->state != T_DEAD)
        fpu_save(cur->fpu);
    if (next->proc)
        fpu_restore(next->fpu);
    switch_context(&cur->ctx_rsp, next->ctx_rsp);
}

// A new thread's first code (switch.asm's thread_start), on its trap frame.
void thread_first_run(struct trapframe *tf)
{
    UNUSED(tf);
    sched_after_switch();
    trap_return_to_user(); // killed before it ever ran?
    user_time_leave();
}

// After any switch, on the new thread: release the lock the old one took and
// free a thread that died on this CPU (its stack was in use until now).
void sched_after_switch(void)
{
    struct cpu *c = this_cpu();
    struct thread *dead = c->prev_dead;
    c->prev_dead = NULL;
    if (dead) { // unlink while the lock is still held
        for (struct thread **pp = &all_threads; *pp; pp = &(*pp)->all_next)
            if (*pp == dead) {
                *pp = dead->all_next;
                break;
            }
    }
    spin_unlock(&rq_lock);
    if (dead) {
        struct process *p = dead->proc;
        thread_free(dead);
        if (p)
            process_thread_gone(p);
    }
}

// Pick the next thread. Called with rq_lock held; returns with it held (taken
// over from whichever thread switched back to us).
static void sched_locked(void)
{
    grace_quiescent(); // every way in (schedule, a sleep, an exit) is outside every handler
    struct cpu *c = this_cpu();
    struct thread *cur = c->current;
    if (cur->state == T_RUNNING && cur != c->idle) {
        cur->state = T_RUNNABLE;
        enqueue(cur);
    }
    if (cur->state == T_DEAD)
        c->prev_dead = cur;
    c->need_resched = false;
    struct thread *next = dequeue();
    if (!next)
        next = c->idle;
    if (next == cur) {
        cur->state = T_RUNNING;
        return;
    }
    switch_to(c, cur, next);
}

void schedule(void)
{
    assert(!irq_enabled());
    spin_lock(&rq_lock);
    sched_locked();
    sched_after_switch();
}

void sched_make_runnable(struct thread *t)
{
    uint64_t f = spin_lock_irqsave(&rq_lock);
    t->state = T_RUNNABLE;
    enqueue(t);
    kick_idle_cpu();
    spin_unlock_irqrestore(&rq_lock, f);
}

// A new thread's memory and kernel stack, not yet on any list; NULL when
// memory is short.
static struct thread *thread_alloc(void)
{
    struct thread *t = kzalloc(sizeof *t);
    uint8_t *stack = kmalloc(KSTACK_SIZE);
    if (!t || !stack) {
        kfree(t);
        kfree(stack);
        return NULL;
    }
    t->kstack = stack;
    t->kstack_top = ALIGN_DOWN((uint64_t)stack + KSTACK_SIZE, 16);
    t->cpu = -1;
    return t;
}

// t's first switch_context pops six callee-saved registers (zero) and
// returns to start, from sp down; then t joins every thread's list.
static struct thread *thread_ready(struct thread *t, uint64_t *sp, void (*start)(void))
{
    *--sp = (uint64_t)start;
    for (int i = 0; i < 6; i++)
        *--sp = 0;
    t->ctx_rsp = (uint64_t)sp;
    uint64_t f = spin_lock_irqsave(&rq_lock);
    t->all_next = all_threads;
    all_threads = t;
    spin_unlock_irqrestore(&rq_lock, f);
    return t;
}

struct thread *thread_create_user(struct process *p, const struct trapframe *tf)
{
    struct thread *t = thread_alloc();
    if (!t)
        return NULL;
    t->proc = p;
    t->killed = &p->killed;
    fpu_init_state(t->fpu);
    // Stack, top down: the trap frame thread_start returns through, then
    // what switch_context pops.
    struct trapframe *frame = (struct trapframe *)(t->kstack_top - sizeof *frame);
    *frame = *tf;
    return thread_ready(t, (uint64_t *)frame, thread_start);
}

// A kernel thread's first code: switch_context "returns" here on the new
// stack, with rq_lock held and interrupts off, as after any switch.
static void NORETURN kernel_thread_start(void)
{
    sched_after_switch();
    sti();
    current_thread()->kernel_fn();
    panic("kernel thread %p returned", (void *)current_thread());
}

struct thread *thread_create_kernel(void (*fn)(void))
{
    struct thread *t = thread_alloc();
    if (!t)
        return NULL;
    t->killed = &never_killed;
    t->kernel_fn = fn;
    // Stack, top down: a zero return address, which ends backtraces and
    // leaves RSP = 8 mod 16 at kernel_thread_start's entry, as after a call
    // (System V AMD64 ABI, 3.2.2); then what switch_context pops, RBP zero.
    uint64_t *sp = (uint64_t *)t->kstack_top;
    *--sp = 0;
    return thread_ready(t, sp, kernel_thread_start);
}

void thread_free(struct thread *t)
{
    kfree(t->kstack);
    kfree(t);
}

void thread_exit(void)
{
    cli();
    spin_lock(&rq_lock);
    current_thread()->state = T_DEAD;
    sched_locked();
    panic("thread_exit: a dead thread ran again");
}

// What ends a sleep besides its event: a kill, or a kill or an alert, or
// neither.
enum wake_also { WAKE_ON_KILL, WAKE_ON_KILL_OR_ALERT, WAKE_ON_EVENT };

static bool sleep_ended(const struct thread *t, enum wake_also also)
{
    if (!t->proc || also == WAKE_ON_EVENT)
        return false;
    return t->proc->killed || (also == WAKE_ON_KILL_OR_ALERT && t->proc->alerted);
}

static void sleep_until(const void *chan, const volatile bool *done, uint64_t wake_ns,
                        enum wake_also also, enum thread_wait why)
{
    assert(!irq_enabled());
    struct thread *t = current_thread();
    spin_lock(&rq_lock);
    if ((done && *done) || sleep_ended(t, also)) {
        spin_unlock(&rq_lock);
        return;
    }
    t->wait_chan = chan;
    t->wake_ns = wake_ns;
    t->wait_why = why;
    t->state = T_SLEEPING;
    sched_locked();
    t->wait_chan = NULL;
    t->wake_ns = 0;
    sched_after_switch();
}

void sleep_on(const void *chan, const volatile bool *done, uint64_t wake_ns, enum thread_wait why)
{
    sleep_until(chan, done, wake_ns, WAKE_ON_KILL, why);
}

void sleep_alertable(const void *chan, const volatile bool *done, uint64_t wake_ns,
                     enum thread_wait why)
{
    sleep_until(chan, done, wake_ns, WAKE_ON_KILL_OR_ALERT, why);
}

void sleep_unkillable(const void *chan, const volatile bool *done, uint64_t wake_ns,
                      enum thread_wait why)
{
    sleep_until(chan, done, wake_ns, WAKE_ON_EVENT, why);
}

static void wake_locked(struct thread *t)
{
    t->state = T_RUNNABLE;
    t->wait_chan = NULL;
    enqueue(t);
}

void wakeup(const void *chan)
{
    uint64_t f = spin_lock_irqsave(&rq_lock);
    bool any = false;
    for (struct thread *t = all_threads; t; t = t->all_next)
        if (t->state == T_SLEEPING && t->wait_chan == chan) {
            wake_locked(t);
            any = true;
        }
    if (any)
        kick_idle_cpu();
    spin_unlock_irqrestore(&rq_lock, f);
}

// Wake t whatever it sleeps on (a kill must not wait for the event).
void wakeup_thread(struct thread *t)
{
    uint64_t f = spin_lock_irqsave(&rq_lock);
    if (t->state == T_SLEEPING) {
        wake_locked(t);
        kick_idle_cpu();
    }
    spin_unlock_irqrestore(&rq_lock, f);
}

void sched_tick(void)
{
    struct cpu *c = this_cpu();
    uint64_t period = 1000000000ull / SCHED_TICK_HZ;
    if (c->current == c->idle)
        c->idle_ns += period;
    else
        c->busy_ns += period;
    spin_lock(&rq_lock);
    if (c->id == 0) { // timed sleepers
        uint64_t now = clock_ns();
        bool any = false;
        for (struct thread *t = all_threads; t; t = t->all_next)
            if (t->state == T_SLEEPING && t->wake_ns && t->wake_ns <= now) {
                wake_locked(t);
                any = true;
            }
        if (any)
            kick_idle_cpu();
    }
    if (rq_head && c->current != c->idle)
        c->need_resched = true; // time slice over and someone is waiting
    spin_unlock(&rq_lock);
}

void sched_user_return_slow(void)
{
    struct cpu *c = this_cpu();
    struct thread *t = c->current;
    if (t->proc && READ_ONCE(t->proc->killed))
        process_exit_current(PROCESS_KILLED_STATUS);
    if (c->need_resched)
        schedule();
    if (t->proc && READ_ONCE(t->proc->killed))
        process_exit_current(PROCESS_KILLED_STATUS);
    if (READ_ONCE(grace_queue)) { // process context: the deferred functions may run
        sti();
        grace_poll();
        cli();
    }
}

uint64_t sched_cpus_running(const struct process *p)
{
    uint64_t mask = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST); // the caller's change is seen before this
    for (unsigned i = 0; i < ncpus; i++)
        if (__atomic_load_n(&cpus[i].current_process, __ATOMIC_ACQUIRE) == p)
            mask |= 1ull << i;
    return mask;
}

void sched_idle(void)
{
    struct cpu *c = this_cpu();
    for (;;) {
        grace_quiescent(); // between interrupts: no sample is in progress here
        grace_poll();
        cli();
        if (READ_ONCE(rq_head))
            schedule();
        c->idling = true;
        if (!READ_ONCE(rq_head))
            __asm__ volatile("sti; hlt" ::: "memory"); // sti's shadow covers hlt: no lost wake-up
        else
            sti();
        c->idling = false;
    }
}
