// How a context switch tells the sample path, and the CPUs that ask who runs
// a process (sched.h's sched_cpus_running), that this CPU's running process
// changes. switch_to runs the three steps in order, with interrupts off; an
// NMI may still land between any two (docs/grace-periods.md has the table of
// what a sample sees in each window).
//
// The plan epoch (arch/x86/percpu.h) is a sequence count: odd while the
// running process changes, even otherwise. A sample plan (pmc/ke/sample.c)
// is kept only when made at an even epoch, and made at an even epoch only for
// the process that runs then; every step below is one locked instruction, so
// no epoch a kept plan was made at survives into or past the window, however
// many NMIs land in it. Other CPUs add 2 (sample_plans_drop), keeping the
// parity. Locked instructions have one total order and are not reordered
// with loads or stores (Intel SDM vol. 3A, 8.2.2 and 8.2.3.9).
#pragma once
#include "arch/x86/percpu.h"

// Odd: no plan made from here on is kept, and none kept before holds.
static inline void switch_publish_begin(struct cpu *c)
{
    __atomic_fetch_add(&c->plan_epoch, 1, __ATOMIC_SEQ_CST);
}

// The new process is the running one, for this CPU's samples and for every
// CPU asking (a full fence: a CPU that changes what a process's samples read,
// then asks which CPUs run it, either sees this CPU run it or is seen by this
// CPU's samples and switch watchers from here on).
static inline void switch_publish_process(struct cpu *c, struct process *next)
{
    (void)__atomic_exchange_n(&c->current_process, next, __ATOMIC_SEQ_CST);
}

// Even again: plans made from here on are for the new process, and kept.
static inline void switch_publish_end(struct cpu *c)
{
    __atomic_fetch_add(&c->plan_epoch, 1, __ATOMIC_SEQ_CST);
}
