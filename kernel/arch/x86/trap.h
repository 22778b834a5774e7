// Trap handling shared by the kernel: exception names and fault fixups.
#pragma once
#include "arch/x86/percpu.h"
#include "arch/x86/trapframe.h"

const char *exception_name(unsigned vector);

// A kernel instruction allowed to fault (user-memory access): if tf->rip is
// registered, resume at its fixup address and return true.
bool fault_fixup(struct trapframe *tf);

// Called for an exception from ring 3 (the process code kills the program).
typedef void (*trap_hook_t)(struct trapframe *tf);
extern trap_hook_t trap_user_exception_hook;

// Asked first about a #GP from ring 3: true when it emulated the faulting
// instruction (tf updated, the program resumes). The PMC code installs it
// for ring-3 rdpmc while CR4.PCE is off (pmc/hal/counts.c).
extern bool (*trap_user_gp_hook)(struct trapframe *tf);

// The way back to ring 3, which every interrupt and system call from there
// takes: preemption and kills happen only here. The scheduler registers what
// to do (trap_user_return_hook) and keeps two per-CPU flags saying whether
// there is anything: need_resched, and the running thread's kill flag. Inline,
// because almost every return has nothing to do.
extern void (*trap_user_return_hook)(void);
// The lean entries (vectors.asm) call it, between user_time_enter and _leave.
void lean_user_work_hook(void);

#ifndef KERNEL_HOSTED
static inline void trap_return_to_user(void)
{
    bool resched;
    __asm__ volatile("cmpb $0, %%gs:%c1"
                     : "=@ccne"(resched)
                     : "i"(offsetof(struct cpu, need_resched)));
    if (resched || *percpu_read(kill_pending))
        trap_user_return_hook();
}
#endif
