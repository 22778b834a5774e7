// Interrupt vector assignment: one table. Exceptions are 0-31.
#pragma once

#define VEC_IRQ_BASE 0x20 // legacy ISA IRQ n arrives at VEC_IRQ_BASE + n via the IOAPIC
// The APIC serves the highest class (vector >> 4) first: the cross-CPU calls
// sit below the timer and the PMI, so a call that stops a profile on a CPU
// never overtakes a sample already pending there.
#define VEC_CALL     0xD0 // IPI: run a function on this CPU (smp_call_all)
#define VEC_RESCHED  0xD1 // IPI: reschedule
#define VEC_TIMER    0xE0 // LAPIC timer: the per-CPU multiplexed timer (timer.c)
#define VEC_PMI      0xE1 // LVTPC: performance-monitoring interrupt (pmc)
#define VEC_NMI_WORK 0xE2 // self-IPI: timer slots an NMI found due, run here (timer.c)
#define VEC_LINT0    0xF8 // LAPIC LVT LINT0 (masked)
#define VEC_LINT1    0xF9 // LAPIC LVT LINT1 (masked)
#define VEC_ERROR    0xFE // LAPIC error
#define VEC_SPURIOUS 0xFF // LAPIC spurious (must have low nibble 0xF on old CPUs)
