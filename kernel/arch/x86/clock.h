// Time: TSC and LAPIC-timer frequencies (calibrated once on the boot CPU) and a
// monotonic nanosecond clock.
#pragma once
#include "lib/types.h"

extern uint64_t tsc_hz;         // TSC ticks per second
extern uint64_t lapic_timer_hz; // LAPIC timer counts per second at divide-by-1
extern uint64_t boot_tsc;       // TSC at kernel entry

void clock_calibrate(void); // boot CPU only
uint64_t clock_ns(void);    // nanoseconds since kernel entry, monotonic
uint64_t ns_to_tsc(uint64_t ns);
uint64_t tsc_to_ns(uint64_t tsc);
void udelay(uint64_t us); // busy-wait
