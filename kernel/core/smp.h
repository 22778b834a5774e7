// Multiprocessor start-up and cross-CPU calls.
#pragma once
#include "lib/types.h"

void smp_boot_aps(void); // start every processor in the MADT; prints "smp: N CPUs online"

// Run fn(arg) on every online CPU (the caller's included, in interrupt context
// with interrupts off on each) and return when all have finished. Must be called
// with interrupts enabled and no spinlock held: a CPU spinning with interrupts off
// would never answer. The HAL's start/stop profile calls are built on this.
void smp_call_all(void (*fn)(void *arg), void *arg);
