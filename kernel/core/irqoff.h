// Time spent with interrupts off, on purpose: the known answer behind the
// teaching system call SysIrqoffSpin (kernel/lib/abi/syscalls.h) and the program
// irqoff (docs/blind-spots.md).
//
// And the tracker, which measures it where it is not on purpose: each CPU's
// longest interrupts-off section since boot (or since irqoff_reset), and
// where it began. A section is what process context opens by turning
// interrupts off and closes by turning them back on: every
// spin_lock_irqsave ... spin_unlock_irqrestore pair that found interrupts on
// (core/spinlock.c), and what a caller brackets with irqoff_section_begin and
// irqoff_section_end itself (exit's). Interrupt handlers run with interrupts
// off already, so their locks open no section and cost the tracker one test.
#pragma once
#include "lib/types.h"

// Spin for ticks TSC ticks inside a spin_lock_irqsave section (RFLAGS.IF = 0
// from the lock to the unlock); returns the ticks spun.
uint64_t irqoff_spin_locked(uint64_t ticks);
// Spin for ticks TSC ticks with interrupts as the caller has them (on, from a
// system call); returns the ticks spun.
uint64_t irqoff_spin_open(uint64_t ticks);

// Interrupts were on and the caller has just turned them off: a section
// begins here, at site (a code address, for the report), under the name what
// (a lock's). With interrupts off, on this CPU.
void irqoff_section_begin(uint64_t site, const char *what);
// The caller is about to turn interrupts back on (or to hand the CPU on):
// the open section ends. Its time counts only if the CPU neither switched
// threads nor took a scheduler tick since the begin: either would mean that
// interrupts were on in between, and the begin was another section's.
void irqoff_section_end(void);
// The open section is long on purpose (SysIrqoffSpin's): it is kept apart,
// with why, and never counts as the longest.
void irqoff_excuse(const char *why);

struct irqoff_record {
    uint64_t tsc;     // TSC ticks of the longest section; 0: none since the reset
    uint64_t site;    // where it began
    const char *what; // its lock's name
    const char *why;  // excused sections: the reason
};
// CPU cpu's longest section and longest excused one since the last reset;
// sections: how many it measured since boot.
void irqoff_longest(unsigned cpu, struct irqoff_record *longest, struct irqoff_record *excused,
                    uint64_t *sections);
// Forget every CPU's records: only sections that begin from now on count.
void irqoff_reset(void);
