// Time spent with interrupts off, on purpose: the known answer behind the
// teaching system call SysIrqoffSpin (kernel/lib/abi/syscalls.h) and the program
// irqoff (docs/blind-spots.md).
#pragma once
#include "lib/types.h"

// Spin for ticks TSC ticks inside a spin_lock_irqsave section (RFLAGS.IF = 0
// from the lock to the unlock); returns the ticks spun.
uint64_t irqoff_spin_locked(uint64_t ticks);
// Spin for ticks TSC ticks with interrupts as the caller has them (on, from a
// system call); returns the ticks spun.
uint64_t irqoff_spin_open(uint64_t ticks);
