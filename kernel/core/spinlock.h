// Spinlocks that disable interrupts while held and restore the previous state.
//
// A lock taken by an interrupt handler must be taken everywhere with interrupts
// off on the local CPU, or the handler could spin forever on its own CPU.
#pragma once
#include "arch/x86/cpu.h"

struct spinlock {
    volatile uint32_t locked;
    int owner_cpu; // for panic messages; -1 when free
    const char *name;
};

#define SPINLOCK_INIT(n) \
    { \
        0, -1, (n) \
    }

uint64_t spin_lock_irqsave(struct spinlock *l);
void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags);
bool spin_holding(struct spinlock *l);

// For code that already runs with interrupts off (the scheduler, interrupt
// handlers): no flag juggling.
void spin_lock(struct spinlock *l);
void spin_unlock(struct spinlock *l);
