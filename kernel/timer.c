// Per-CPU periodic timers on one LAPIC timer (see timer.h for the contract).
#include "timer.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"
#include "clock.h"
#include "panic.h"
#include "percpu.h"
#include "sched.h"

#define MAX_CATCHUP 1000 // periods delivered late in one interrupt before skipping ahead

struct periodic {
    uint64_t period;   // TSC ticks
    uint64_t deadline; // absolute TSC of the next expiry
    uint64_t count;    // expiries since start, delivered or skipped
    uint64_t skipped;  // expiries dropped because the CPU fell too far behind
    timer_fn fn;
    void *arg;
    bool active;
};

struct timer_cpu {
    unsigned active; // bit i: slot i is running (the interrupt visits only these)
    struct periodic slot[TIMER_SLOTS];
} __attribute__((aligned(64)));

static struct timer_cpu timers[MAX_CPUS];
static bool tsc_deadline;
static uint64_t lapic_per_tsc; // LAPIC counts per TSC tick, 32.32 fixed point

// Program the LAPIC timer for deadline next (UINT64_MAX: stop it).
static void program(uint64_t next)
{
    if (tsc_deadline) {
        wrmsr(MSR_IA32_TSC_DEADLINE, next == UINT64_MAX ? 0 : next);
        return;
    }
    if (next == UINT64_MAX) {
        lapic_write(LAPIC_TIMER_INIT, 0);
        return;
    }
    uint64_t now = rdtsc();
    uint64_t delta = next > now ? next - now : 0;
    // Round up: firing early costs an extra interrupt, firing late costs accuracy.
    uint64_t count = (uint64_t)(((unsigned __int128)delta * lapic_per_tsc) >> 32) + 1;
    lapic_write(LAPIC_TIMER_INIT, (uint32_t)MIN(count, 0xFFFFFFFFull));
}

// Arm the LAPIC timer for the earliest active deadline (or stop it).
static void arm(struct timer_cpu *t)
{
    uint64_t next = UINT64_MAX;
    for (unsigned m = t->active; m; m &= m - 1) {
        const struct periodic *p = &t->slot[__builtin_ctz(m)];
        if (p->deadline < next)
            next = p->deadline;
    }
    program(next);
}

static void timer_irq(struct trapframe *tf)
{
    struct timer_cpu *t = &timers[cpu_id()];
    uint64_t now = rdtsc(), next = UINT64_MAX;
    unsigned active = t->active;
    for (unsigned m = active; m; m &= m - 1) {
        struct periodic *p = &t->slot[__builtin_ctz(m)];
        for (int n = 0; p->active && p->deadline <= now; n++) {
            if (n == MAX_CATCHUP) { // hopelessly behind: count the rest, do not replay them
                uint64_t behind = (now - p->deadline) / p->period + 1;
                p->skipped += behind;
                p->count += behind;
                p->deadline += behind * p->period;
                break;
            }
            p->deadline += p->period;
            p->count++;
            p->fn(tf, p->arg);
        }
        if (p->active && p->deadline < next)
            next = p->deadline;
    }
    // A callback may have started or stopped a slot: then look again.
    if (t->active != active)
        arm(t);
    else
        program(next);
}

void timer_periodic_start(enum timer_slot slot, uint64_t period_ns, timer_fn fn, void *arg)
{
    assert(slot < TIMER_SLOTS && period_ns >= 1000 && !irq_enabled());
    struct timer_cpu *t = &timers[cpu_id()];
    struct periodic *p = &t->slot[slot];
    p->period = MAX(ns_to_tsc(period_ns), 1ull);
    p->deadline = rdtsc() + p->period;
    p->count = p->skipped = 0;
    p->fn = fn;
    p->arg = arg;
    p->active = true;
    t->active |= 1u << slot;
    arm(t);
}

// Expiries already due but not yet handled (this CPU was busy with interrupts
// off) are counted as skipped, so that every period that passed is accounted.
void timer_periodic_stop(enum timer_slot slot)
{
    assert(slot < TIMER_SLOTS && !irq_enabled());
    struct timer_cpu *t = &timers[cpu_id()];
    struct periodic *p = &t->slot[slot];
    uint64_t now = rdtsc();
    if (p->active && p->deadline <= now) {
        uint64_t behind = (now - p->deadline) / p->period + 1;
        p->count += behind;
        p->skipped += behind;
    }
    p->active = false;
    t->active &= ~(1u << slot);
    arm(t);
}

uint64_t timer_periodic_count(enum timer_slot slot)
{
    return READ_ONCE(timers[cpu_id()].slot[slot].count);
}

void timer_periodic_stats(unsigned cpu, enum timer_slot slot, uint64_t *count, uint64_t *skipped)
{
    *count = READ_ONCE(timers[cpu].slot[slot].count);
    *skipped = READ_ONCE(timers[cpu].slot[slot].skipped);
}

static void sched_timer(struct trapframe *tf, void *arg)
{
    UNUSED(tf);
    UNUSED(arg);
    this_cpu()->ticks++;
    sched_tick();
}

void timer_init_cpu(void)
{
    if (cpu_id() == 0) {
        tsc_deadline = cpuid(1, 0).ecx & CPUID1_ECX_TSC_DEADLINE;
        lapic_per_tsc = (lapic_timer_hz << 32) / tsc_hz; // clock.c keeps lapic_timer_hz < 2^32
        irq_register(VEC_TIMER, timer_irq);
    }
    if (tsc_deadline) {
        lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_TSC_DEADLINE | VEC_TIMER);
        __asm__ volatile("mfence" ::: "memory"); // LVT write before the first deadline
    } else {
        lapic_write(LAPIC_TIMER_DIV, 0xB); // divide by 1, as calibrated
        lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_ONESHOT | VEC_TIMER);
    }
    uint64_t f = irq_save();
    timer_periodic_start(TIMER_SLOT_SCHED, 1000000000ull / SCHED_TICK_HZ, sched_timer, NULL);
    irq_restore(f);
}
