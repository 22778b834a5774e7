// ProfileTime on the LAPIC timer: a periodic slot of each CPU's timer
// (arch/x86/timer.h) whose tick is a sample of the interrupted context.
#pragma once
#include "lib/types.h"

extern uint64_t profile_time_interval; // 100 ns units
uint64_t profile_time_clamp(uint64_t interval);
void profile_time_start(void);             // every CPU, via smp_call_all
void profile_time_start_cpu(unsigned cpu); // that CPU only (its timer row enabled again)
void profile_time_stop(void);
