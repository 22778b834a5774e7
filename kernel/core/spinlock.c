// Test-and-test-and-set spinlocks with the interrupt flag saved and restored.
#include "core/spinlock.h"

#include "lib/panic.h"

#include "arch/x86/percpu.h"

#include "core/irqoff.h"

// A lock that finds interrupts on opens an interrupts-off section for the
// tracker (core/irqoff.h), from before the wait for the lock, which is time
// with interrupts off too; its unlock closes it. One that finds them off (an
// interrupt handler's, a lock taken inside another) is inside a section
// already, or in a handler, and costs the tracker nothing but the test.
uint64_t spin_lock_irqsave(struct spinlock *l)
{
    uint64_t flags = irq_save();
    if (flags & RFLAGS_IF)
        irqoff_section_begin((uint64_t)__builtin_return_address(0), l->name);
    if (spin_holding(l))
        panic("spinlock %s: recursive acquire", l->name);
    while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE)) {
        while (READ_ONCE(l->locked))
            cpu_relax();
    }
    l->owner_cpu = (int)cpu_id();
    return flags;
}

void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags)
{
    if (!spin_holding(l))
        panic("spinlock %s: release by a CPU that does not hold it", l->name);
    l->owner_cpu = -1;
    __atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
    if (flags & RFLAGS_IF)
        irqoff_section_end();
    // An interrupt that came while the lock was held (the timer's, a
    // sample's) is taken once sti has set IF, but only after the instruction
    // that follows the sti (the STI interrupt shadow: Intel SDM vol. 2B,
    // STI). irq_restore's sti would often be followed by this function's ret,
    // so the interrupt would be taken at the caller's next instruction and a
    // profile would charge the section's time to the caller. The nop takes
    // the shadow: the interrupt is taken here, and the unlock is what shows
    // hot (docs/blind-spots.md).
    if (flags & RFLAGS_IF)
        __asm__ volatile("sti\n\tnop" ::: "memory");
}

// Only meaningful with interrupts off (the answer cannot change under us then).
bool spin_holding(struct spinlock *l)
{
    return READ_ONCE(l->locked) && l->owner_cpu == (int)cpu_id();
}

void spin_lock(struct spinlock *l)
{
    if (irq_enabled())
        panic("spinlock %s: spin_lock with interrupts on", l->name);
    (void)spin_lock_irqsave(l);
}

void spin_unlock(struct spinlock *l)
{
    spin_unlock_irqrestore(l, 0); // flags 0: leave interrupts off
}
