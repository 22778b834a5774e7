// Threads and the scheduler.
//
// One run queue for all CPUs, under one lock: with at most a handful of CPUs
// the lock is cold, and one queue gives global round-robin fairness and free
// load balancing with no migration logic. Each CPU has an idle thread (its boot
// stack) that halts. Threads switch on their own kernel stacks (switch.asm);
// the run-queue lock is handed over across the switch, as in xv6. The kernel is
// not preemptible: a thread is preempted only when it returns to ring 3 with
// need_resched set (the scheduler tick sets it every SCHED_TICK_HZ).
#pragma once
#include "lib/abi/pmc.h"
#include "lib/abi/pmclog.h"
#include "lib/types.h"

#include "arch/x86/percpu.h"
#include "arch/x86/trapframe.h"

struct process;

enum thread_state { T_RUNNABLE = 1, T_RUNNING, T_SLEEPING, T_DEAD };

struct thread {
    uint8_t fpu[512] __attribute__((aligned(16))); // ring-3 x87/SSE registers (fpu.h)
    uint64_t ctx_rsp;                              // saved kernel stack pointer while switched out
    uint8_t *kstack;                               // kmalloc'd kernel stack (NULL for idle threads)
    uint64_t kstack_top;
    enum thread_state state;
    struct process *proc;        // NULL for kernel threads
    const volatile bool *killed; // the process's kill flag (a constant false for kernel threads)
    const void *wait_chan;       // what a T_SLEEPING thread waits for
    enum thread_wait wait_why;   // and what kind of wait that is (lib/abi/pmclog.h)
    uint64_t wake_ns;            // timed sleep: wake at this clock_ns() (0 = none)
    struct thread *run_next;     // run-queue link
    struct thread *all_next;     // every thread, for wake-ups
    int cpu;                     // CPU it last ran on (-1: never ran)
    uint64_t cpu_ns;             // time on CPU
    uint64_t run_start_ns;
    uint64_t sw[PMC_SW_COUNT];  // software events while it ran (core/swevent.h)
    volatile uint64_t user_tsc; // TSC ticks in ring 3 (arch/x86/user_time.h)
    void (*kernel_fn)(void);    // a kernel thread's body (thread_create_kernel)
};

void sched_init_cpu(void);      // make the running boot code this CPU's idle thread
void NORETURN sched_idle(void); // the idle loop

// A new thread that will enter ring 3 through the trap frame *tf (copied onto
// its kernel stack). NULL when out of memory. Not runnable until sched_make_runnable.
struct thread *thread_create_user(struct process *p, const struct trapframe *tf);
void sched_make_runnable(struct thread *t);
// A kernel thread (no process: process_current() is NULL there) that runs
// fn, which never returns, in process context with interrupts on: it may
// sleep, take mutexes and allocate. NULL when out of memory. Not runnable
// until sched_make_runnable.
struct thread *thread_create_kernel(void (*fn)(void));
// The CPUs whose running thread belongs to p now. A CPU not in the mask runs
// no sample of p at the moment of the call, and its next sample of p sees
// every change stored before the call (switch_to's store of the running
// process is a full fence): a change that only p's samples read needs to
// reach the CPUs of this mask, and no other.
uint64_t sched_cpus_running(const struct process *p);
void thread_free(struct thread *t); // a T_DEAD thread's memory

void schedule(void);             // give up the CPU; interrupts must be off
void NORETURN thread_exit(void); // the current thread ends; its stack is freed later

// Sleep until wakeup(chan), until the deadline when wake_ns != 0, or until the
// thread is killed. Call with interrupts off. done (may be NULL) is checked
// under the scheduler's lock before sleeping: a waker sets it, then calls
// wakeup(chan), so no wake-up is lost between the caller's check and the sleep.
// why says what kind of wait it is, for the profiler's off-CPU records.
void sleep_on(const void *chan, const volatile bool *done, uint64_t wake_ns, enum thread_wait why);
// The same, and also until the process's alerted flag is set (a console
// interrupt told to a process in INTERRUPT_NOTIFY mode, lib/abi/syscalls.h): for the waits
// a system call may end with STATUS_ALERTED.
void sleep_alertable(const void *chan, const volatile bool *done, uint64_t wake_ns,
                     enum thread_wait why);
// The same, but a kill does not end the wait (a kill's wake-up only makes the
// caller look again): for a mutex, whose killed waiter must still sleep until
// the holder lets go, or it spins on the lock, and with the kernel not
// preemptible, CPUs full of killed waiters would never let a holder that is
// runnable but not running finish (Linux's mutex_lock sleeps uninterruptibly
// for the same reason).
void sleep_unkillable(const void *chan, const volatile bool *done, uint64_t wake_ns,
                      enum thread_wait why);
void wakeup_thread(struct thread *t);
void wakeup(const void *chan);
void sched_tick(void); // from the per-CPU scheduler timer

struct thread *current_thread(void);

// Switch watchers: the layers above learn of every context switch without
// the scheduler naming them (the PMC layer's switch records and
// process-virtual counters, the context-switch counters). Each is called by switch_to
// when c switches from cur to next at now (clock_ns), with rq_lock held and
// interrupts off, while the watcher's word *busy is non-zero: a switch with
// no watcher busy costs a load and a test for each.
typedef void (*sched_switch_watcher)(struct cpu *c, struct thread *cur, struct thread *next,
                                     uint64_t now);
#define SCHED_SWITCH_WATCHERS 4
// At boot, before the first switch.
void sched_watch_switches(sched_switch_watcher fn, const volatile uint32_t *busy);

// Called on every scheduler tick, in the timer interrupt, while set: the PMC
// layer rotates multiplexed hardware counts (pmc/hwpmc/kind_counting.c).
extern void (*sched_tick_hook)(void);

// What trap_return_to_user (arch/x86/trap.h) calls when a CPU's need_resched
// or the running thread's kill flag is set.
void sched_user_return_slow(void);
