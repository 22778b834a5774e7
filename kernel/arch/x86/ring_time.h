// Ring-3 time: what task-clock:u counts (core/swevent.h), the time from each
// return to ring 3 to the next entry into the kernel, in TSC ticks.
//
// The entries that stop it are the system call (syscall_dispatch), every
// interrupt and exception through trap() and the timer's way back to ring 3
// when there is work to do (timer_user_work); the returns that restart it
// are theirs and a new thread's first (thread_first_run). A context switch
// always happens in the kernel, where nothing runs. Two entries do not stop
// it: the timer tick that finds nothing to do (the lean path in vectors.asm,
// about 120 instructions, 0.1 % of the time at ProfileTime's finest
// interval) and the NMI; their time is counted as the interrupted ring 3's,
// so the sample path costs no instruction more. The rest of a thread's CPU
// time is its ring-0 time, task-clock:k.
#pragma once
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"

#ifndef KERNEL_HOSTED
// From ring 3, interrupts off: the time since the return to ring 3 is added
// to the thread's and the CPU's totals, then the stamp cleared (in that
// order: a reader on another CPU checks the stamp around its read).
static inline void ring_time_enter(void)
{
    struct cpu *c = this_cpu();
    uint64_t since = c->user_since;
    if (since) {
        uint64_t d = rdtsc() - since;
        *c->user_tsc += d;
        c->cpu_user_tsc += d;
        c->user_since = 0;
    }
}

// On the way back to ring 3, interrupts off, after the last switch.
static inline void ring_time_leave(void)
{
    this_cpu()->user_since = rdtsc();
}
#endif
