// Time since boot, from SysClock.
#pragma once
#include <stdint.h>

uint64_t clock_ns(void); // monotonic nanoseconds; 0 when SysClock fails
