// Multiprocessor start-up and cross-CPU calls.
#pragma once
#include "lib/types.h"

struct cpu;
// Start every processor in the MADT, each running main (which never returns);
// prints "smp: N CPUs online".
void smp_boot_aps(void (*main)(struct cpu *c));
void smp_init_ipis(void); // the cross-CPU call vector

// Run fn(arg) on every online CPU of mask (the caller's included, in interrupt
// context with interrupts off on each) and return when all have finished:
// one interrupt per other CPU, none when mask names only the caller. Each
// target ran fn at a moment its interrupts were on, so it was inside no
// interrupt handler then. Must be called with interrupts enabled and no
// spinlock held: a CPU spinning with interrupts off would never answer.
// Callers do not wait for one another.
void smp_call_many(uint64_t mask, void (*fn)(void *arg), void *arg);
// smp_call_many on every online CPU: the HAL's start/stop profile calls, which
// change every CPU's counters, are built on this.
void smp_call_all(void (*fn)(void *arg), void *arg);
uint64_t smp_online_mask(void);        // bit i: CPU i is online
uint64_t smp_calls_sent(unsigned cpu); // call interrupts cpu has sent since boot
