// Interrupts-off time with a known answer (see irqoff.h).
//
// A profiler must charge each half to its own function. Both functions are
// kept out of line and never cloned, and the kernel keeps frame pointers
// (Makefile), so every sample inside them carries its own symbol; the spin
// loop is written into each one (spin_for is always inlined), so neither
// half's time lands in a shared helper.
#include "core/irqoff.h"

#include "lib/param.h"

#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"

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
    irqoff_excuse("SysIrqoffSpin: off on purpose");
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

// --- the tracker ----------------------------------------------------------------

// One CPU's open section and its records, written only by that CPU with
// interrupts off (an NMI never touches them), read by anyone: a report read
// while a record changes may mix two sections, never crash. A cache line
// each, so that CPUs locking at once do not share one.
struct irqoff_cpu {
    uint64_t start; // TSC at the open section's begin; 0: none open
    uint64_t site;
    const char *what, *why;
    uint64_t epoch, ticks; // the CPU's switch epoch and scheduler ticks at the begin
    struct irqoff_record longest, excused;
    uint64_t longest_start, excused_start; // when they began: older than reset_tsc is forgotten
    uint64_t sections;
} __attribute__((aligned(64)));

static struct irqoff_cpu track[MAX_CPUS];
static uint64_t reset_tsc; // sections that began before it no longer count

void irqoff_section_begin(uint64_t site, const char *what)
{
    struct cpu *c = this_cpu();
    struct irqoff_cpu *t = &track[c->id];
    t->site = site;
    t->what = what;
    t->why = NULL;
    // plan_epoch moves at every context switch here (core/switch_publish.h),
    // ticks at every scheduler tick: both are read again at the end.
    t->epoch = READ_ONCE(c->plan_epoch);
    t->ticks = c->ticks;
    t->start = rdtsc();
}

void irqoff_excuse(const char *why)
{
    track[cpu_id()].why = why;
}

static void record(struct irqoff_record *r, uint64_t *r_start, const struct irqoff_cpu *t,
                   uint64_t tsc)
{
    if (*r_start >= READ_ONCE(reset_tsc) && tsc <= r->tsc)
        return;
    *r = (struct irqoff_record){tsc, t->site, t->what, t->why};
    *r_start = t->start;
}

void irqoff_section_end(void)
{
    uint64_t now = rdtsc();
    struct cpu *c = this_cpu();
    struct irqoff_cpu *t = &track[c->id];
    if (!t->start)
        return;
    // A switch (a sleep inside the section) or a tick (interrupts were on)
    // since the begin: the time is not one section's.
    if (t->epoch == READ_ONCE(c->plan_epoch) && t->ticks == c->ticks) {
        t->sections++;
        bool counts = t->start >= READ_ONCE(reset_tsc); // not begun before the reset
        if (counts && t->why)
            record(&t->excused, &t->excused_start, t, now - t->start);
        else if (counts)
            record(&t->longest, &t->longest_start, t, now - t->start);
    }
    t->start = 0;
}

void irqoff_longest(unsigned cpu, struct irqoff_record *longest, struct irqoff_record *excused,
                    uint64_t *sections)
{
    const struct irqoff_cpu *t = &track[cpu % MAX_CPUS];
    uint64_t since = READ_ONCE(reset_tsc);
    static const struct irqoff_record none;
    *longest = t->longest_start >= since ? t->longest : none;
    *excused = t->excused_start >= since ? t->excused : none;
    *sections = t->sections;
}

void irqoff_reset(void)
{
    WRITE_ONCE(reset_tsc, rdtsc());
}
