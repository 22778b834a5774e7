// Interrupts-off time with a known answer (see irqoff.h).
//
// A profiler must charge each half to its own function. Both functions are
// kept out of line and never cloned, and the kernel keeps frame pointers
// (Makefile), so every sample inside them carries its own symbol; the spin
// loop is written into each one (spin_for is always inlined), so neither
// half's time lands in a shared helper.
#include "core/irqoff.h"

#include "arch/x86/cpu.h"

#include "core/spinlock.h"

#if defined(__GNUC__) && !defined(__clang__)
#define IRQOFF_FN __attribute__((noinline, noclone))
#else
#define IRQOFF_FN __attribute__((noinline))
#endif

// One lock for every caller: a CPU that finds it taken waits in
// spin_lock_irqsave with interrupts off too.
static struct spinlock irqoff_lock = SPINLOCK_INIT("irqoff");

// Spin until the TSC has moved ticks past start; the TSC at the end. rdtsc is
// not serializing (Intel SDM vol. 2B, RDTSC), which only matters at the
// granularity of a few instructions.
static inline __attribute__((always_inline)) uint64_t spin_for(uint64_t start, uint64_t ticks)
{
    uint64_t now;
    do
        now = rdtsc();
    while (now - start < ticks);
    return now;
}

IRQOFF_FN uint64_t irqoff_spin_locked(uint64_t ticks)
{
    uint64_t flags = spin_lock_irqsave(&irqoff_lock);
    uint64_t start = rdtsc();
    uint64_t spun = spin_for(start, ticks) - start;
    // The unlock's `sti` lets a pending maskable interrupt in only after the
    // instruction that follows it (Intel SDM vol. 2B, STI): that is where a
    // maskable timer charges the samples of this whole section.
    spin_unlock_irqrestore(&irqoff_lock, flags);
    return spun;
}

IRQOFF_FN uint64_t irqoff_spin_open(uint64_t ticks)
{
    uint64_t start = rdtsc();
    return spin_for(start, ticks) - start;
}
