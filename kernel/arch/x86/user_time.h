// Ring-3 time: what task-clock:u counts (core/swevent.h), the time from each
// return to user mode to the next entry into the kernel, in TSC ticks.
//
// The entries that stop it are the system call (syscall_dispatch), every
// interrupt and exception through trap() and the lean entries' way back to
// user mode when there is work to do (lean_user_work_hook); the returns that
// restart it are theirs and a new thread's first (thread_first_run). A
// context switch always happens in the kernel, where nothing runs. Three
// entries do not stop it: the timer tick and the PMI that find nothing to do
// (the lean path in vectors.asm, about 120 instructions, 0.1 % of the time at
// ProfileTime's finest interval) and the NMI; their time is counted as the interrupted user mode's,
// so the sample path costs no instruction more. The rest of a thread's CPU
// time is its kernel-mode time, task-clock:k.
#pragma once
#include "arch/x86/percpu.h"

#ifndef KERNEL_HOSTED
// Written as assembly because they run on every system call: the per-CPU
// words are reached through GS directly (no load of this_cpu() first), and
// rdtsc's halves are joined without the zero-extension C adds (rdtsc clears
// bits 63:32 of RAX and RDX: Intel SDM vol. 2B, RDTSC).

// From user mode, interrupts off: the time since the return to user mode is added
// to the thread's and the CPU's totals, then the stamp cleared (in that
// order: a reader on another CPU checks the stamp around its read). A zero
// stamp (no return to user mode seen) adds nothing.
static inline void user_time_enter(void)
{
    __asm__ volatile("movq %%gs:%c0, %%rcx\n\t"
                     "testq %%rcx, %%rcx\n\t"
                     "jz 1f\n\t"
                     "rdtsc\n\t"
                     "shlq $32, %%rdx\n\t"
                     "orq %%rdx, %%rax\n\t"
                     "subq %%rcx, %%rax\n\t"
                     "movq %%gs:%c1, %%rcx\n\t"
                     "addq %%rax, (%%rcx)\n\t"
                     "addq %%rax, %%gs:%c2\n\t"
                     "movq $0, %%gs:%c0\n"
                     "1:"
                     :
                     : "i"(offsetof(struct cpu, user_since)), "i"(offsetof(struct cpu, user_tsc)),
                       "i"(offsetof(struct cpu, cpu_user_tsc))
                     : "rax", "rcx", "rdx", "cc", "memory");
}

// On the way back to user mode, interrupts off, after the last switch.
static inline void user_time_leave(void)
{
    __asm__ volatile("rdtsc\n\t"
                     "shlq $32, %%rdx\n\t"
                     "orq %%rdx, %%rax\n\t"
                     "movq %%rax, %%gs:%c0"
                     :
                     : "i"(offsetof(struct cpu, user_since))
                     : "rax", "rdx", "memory");
}
#endif
