// Trap handling shared by the kernel: exception names and fault fixups.
#pragma once
#include "arch/x86/trapframe.h"

const char *exception_name(unsigned vector);

// A kernel instruction allowed to fault (user-memory access): if tf->rip is
// registered, resume at its fixup address and return true.
bool fault_fixup(struct trapframe *tf);

// Called for an exception from ring 3 (issue: processes kill the program).
typedef void (*trap_hook_t)(struct trapframe *tf);
extern trap_hook_t trap_user_exception_hook;
