// Per-CPU periodic timers on one LAPIC timer (see timer.h for the contract).
#include "arch/x86/timer.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"
#include "arch/x86/clock.h"
#include "lib/panic.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trap.h"

struct periodic {
    uint64_t deadline; // absolute TSC of the next expiry; UINT64_MAX: stopped
    uint64_t period;   // TSC ticks
    uint64_t count;    // expiries since start, delivered or missed
    uint64_t missed;   // expiries not delivered: the CPU was a period or more late
};

struct timer_cpu {
    struct periodic slot[TIMER_SLOTS];
    struct timer_user {
        timer_fn fn;
        void *arg;
    } user[TIMER_SLOTS];
} __attribute__((aligned(64)));

static struct timer_cpu timers[MAX_CPUS];
static bool tsc_deadline;
static uint64_t lapic_per_tsc; // LAPIC counts per TSC tick, 32.32 fixed point

// Load the LAPIC timer to fire in delta TSC ticks (one-shot mode), rounded up:
// firing early costs an extra interrupt, firing late costs accuracy.
static inline void program_delta(uint64_t delta)
{
    uint64_t count = (uint64_t)(((unsigned __int128)delta * lapic_per_tsc) >> 32) + 1;
    lapic_write(LAPIC_TIMER_INIT, (uint32_t)MIN(count, 0xFFFFFFFFull));
}

// Program the LAPIC timer for deadline next (UINT64_MAX: stop it); now is a
// recent TSC reading (a late one only delays the interrupt, never loses it).
static inline void program(uint64_t next, uint64_t now)
{
    if (tsc_deadline)
        wrmsr(MSR_IA32_TSC_DEADLINE, next == UINT64_MAX ? 0 : next);
    else if (next == UINT64_MAX)
        lapic_write(LAPIC_TIMER_INIT, 0);
    else
        program_delta(next > now ? next - now : 0);
}

// The earliest deadline of this CPU's slots (UINT64_MAX: all stopped).
static uint64_t earliest(const struct timer_cpu *t)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < TIMER_SLOTS; i++)
        next = MIN(next, t->slot[i].deadline);
    return next;
}

// Expire p at now (its deadline has passed): the deadline moves past now.
// The user is called once per interrupt however late the CPU is: a CPU that
// was stalled (a vCPU the host descheduled, a long interrupts-off section)
// would otherwise replay every period it slept through back to back, and a
// ProfileTime user would see one stall as a burst of samples at one
// instruction. The periods not delivered are counted in missed.
static inline void expire(struct periodic *p, uint64_t now)
{
    uint64_t late = now - p->deadline, n = 1;
    if (__builtin_expect(late >= p->period, 0)) {
        uint64_t behind = late / p->period;
        p->missed += behind;
        n += behind;
    }
    p->deadline += n * p->period;
    p->count += n;
}

// Call the users of the slots in due, in slot order.
static __attribute__((noinline)) void call_users(const struct timer_cpu *t,
                                                 const struct intr_frame *f, unsigned due)
{
    for (unsigned i = 0; i < TIMER_SLOTS; i++)
        if (due & (1u << i))
            t->user[i].fn(f, t->user[i].arg);
}

// The LAPIC timer's interrupt, entered from timer_entry (vectors.asm) with
// only the CPU's frame: every due deadline moves on, the timer is re-armed for
// the earliest and the interrupt acknowledged (interrupts stay off until the
// iretq, so nothing can nest), then each due slot's user is called once; on
// the way back to ring 3 (timer_entry) the scheduler may preempt or a kill
// take effect.
// A user that starts or stops a slot re-arms the timer itself. A stopped slot
// has the deadline UINT64_MAX, never due, so the loops need no active mask;
// they run over a constant number of slots and unroll.
void timer_interrupt(const struct intr_frame *f)
{
    struct timer_cpu *t = percpu_read(timer);
    uint64_t now = rdtsc(), next = UINT64_MAX;
    unsigned due = 0;
    const struct timer_user *last = NULL; // the user of the last due slot
#pragma GCC unroll 4
    for (unsigned i = 0; i < TIMER_SLOTS; i++) {
        if (t->slot[i].deadline <= now) {
            expire(&t->slot[i], now);
            due |= 1u << i;
            last = &t->user[i];
        }
        next = MIN(next, t->slot[i].deadline);
    }
    // Some slot is always running here (the scheduler tick never stops).
    if (tsc_deadline)
        wrmsr(MSR_IA32_TSC_DEADLINE, next);
    else
        program_delta(next - now); // every deadline moved past now
    lapic_eoi();
    // Usually one slot is due: its user's call is then this function's last
    // act, a tail call, and nothing here needs saving around it.
    if (due & (due - 1))
        call_users(t, f, due);
    else if (last)
        last->fn(f, last->arg);
}

void timer_periodic_start(enum timer_slot slot, uint64_t period_ns, timer_fn fn, void *arg)
{
    assert(slot < TIMER_SLOTS && period_ns >= 1000 && !irq_enabled());
    struct timer_cpu *t = &timers[cpu_id()];
    struct periodic *p = &t->slot[slot];
    uint64_t now = rdtsc();
    p->period = MAX(ns_to_tsc(period_ns), 1ull);
    p->deadline = now + p->period;
    p->count = p->missed = 0;
    t->user[slot] = (struct timer_user){fn, arg};
    program(earliest(t), now);
}

// Expiries already due but not yet handled (this CPU was busy with interrupts
// off) are counted as missed, so that every period that passed is accounted.
void timer_periodic_stop(enum timer_slot slot)
{
    assert(slot < TIMER_SLOTS && !irq_enabled());
    struct timer_cpu *t = &timers[cpu_id()];
    struct periodic *p = &t->slot[slot];
    uint64_t now = rdtsc();
    if (p->deadline <= now) {
        uint64_t behind = (now - p->deadline) / p->period + 1;
        p->count += behind;
        p->missed += behind;
    }
    p->deadline = UINT64_MAX;
    program(earliest(t), now);
}

uint64_t timer_periodic_count(enum timer_slot slot)
{
    return READ_ONCE(timers[cpu_id()].slot[slot].count);
}

void timer_periodic_stats(unsigned cpu, enum timer_slot slot, uint64_t *count, uint64_t *missed)
{
    *count = READ_ONCE(timers[cpu].slot[slot].count);
    *missed = READ_ONCE(timers[cpu].slot[slot].missed);
}

void timer_init_cpu(void)
{
    struct timer_cpu *t = &timers[cpu_id()];
    this_cpu()->timer = t;
    for (unsigned i = 0; i < TIMER_SLOTS; i++)
        t->slot[i].deadline = UINT64_MAX;
    if (cpu_id() == 0) {
        tsc_deadline = cpuid(1, 0).ecx & CPUID1_ECX_TSC_DEADLINE;
        lapic_per_tsc = (lapic_timer_hz << 32) / tsc_hz; // clock.c keeps lapic_timer_hz < 2^32
    }
    if (tsc_deadline) {
        lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_TSC_DEADLINE | VEC_TIMER);
        __asm__ volatile("mfence" ::: "memory"); // LVT write before the first deadline
    } else {
        lapic_write(LAPIC_TIMER_DIV, 0xB); // divide by 1, as calibrated
        lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_ONESHOT | VEC_TIMER);
    }
}
