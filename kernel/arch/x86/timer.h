// Per-CPU periodic timers multiplexed on the one LAPIC timer of each CPU.
//
// Each CPU has TIMER_SLOTS periodic users (the scheduler tick, ProfileTime, ...)
// with independent periods. Deadlines are absolute TSC values advanced by whole
// periods, so over any run a user's expiries are floor(elapsed/period) no matter
// how the others are set; a user is called once per interrupt, and expiries a
// late CPU slept through are counted as missed rather than replayed. The LAPIC
// timer is armed one-shot (or in TSC-deadline mode when the CPU has it) for the
// earliest deadline; its interrupt enters through vectors.asm's timer_entry.
#pragma once
#include "lib/types.h"

#include "arch/x86/trapframe.h"

enum timer_slot {
    TIMER_SLOT_SCHED = 0,   // scheduler tick, SCHED_TICK_HZ
    TIMER_SLOT_PROFILE = 1, // ProfileTime (pmc)
    TIMER_SLOT_TEST = 2,    // self-tests
};

#define TIMER_PERIOD_MAX_NS 1000000000ull // 1 s: ProfileTime's longest interval

// Called in the timer interrupt, interrupts off, with the interrupted context.
typedef void (*timer_fn)(const struct intr_frame *f, void *arg);

// Start (or restart with a new period) the periodic timer in slot on the current
// CPU. Call with interrupts off (e.g. from smp_call_all).
// 1000 <= period_ns <= TIMER_PERIOD_MAX_NS.
void timer_periodic_start(enum timer_slot slot, uint64_t period_ns, timer_fn fn, void *arg);
void timer_periodic_stop(enum timer_slot slot);

// Number of expiries delivered in slot on the current CPU since its start.
uint64_t timer_periodic_count(enum timer_slot slot);
// Expiries in slot on any CPU since its start there, and how many of them were
// missed: a user is called at most once per interrupt, so when the CPU comes
// back a period or more late the periods in between are counted, not replayed.
void timer_periodic_stats(unsigned cpu, enum timer_slot slot, uint64_t *count, uint64_t *missed);

// The LAPIC timer's interrupt handler (entered from vectors.asm, timer_entry).
void timer_interrupt(const struct intr_frame *f);

// The LAPIC timer delivered as NMI, chosen at boot (profile_nmi=1, only where
// the machine delivers it: QEMU's TCG): ProfileTime's user then runs in the
// NMI and samples code that runs with interrupts off; the other slots' users
// run in an ordinary interrupt the NMI sends to its own CPU
// (VEC_NMI_WORK). timer_nmi_why says what was chosen and why.
extern bool timer_nmi;
extern const char *timer_nmi_why;

void timer_init_cpu(
    void); // per CPU: the LAPIC timer in one-shot or TSC-deadline mode, every slot stopped
