// Multiprocessor start-up and cross-CPU calls.
#pragma once
#include "lib/types.h"

struct cpu;
// Start every processor in the MADT, each running main (which never returns);
// prints "smp: N CPUs online".
void smp_boot_aps(void (*main)(struct cpu *c));
void smp_init_ipis(void); // the cross-CPU call vector

// Run fn(arg) on every online CPU (the caller's included, in interrupt context
// with interrupts off on each) and return when all have finished. Must be called
// with interrupts enabled and no spinlock held: a CPU spinning with interrupts off
// would never answer. The HAL's start/stop profile calls are built on this.
void smp_call_all(void (*fn)(void *arg), void *arg);
