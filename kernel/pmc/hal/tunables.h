// pmc tunables, one place, one comment each.
#pragma once

#define PMC_MAX_COUNTERS       16       // GP + fixed counters used per CPU (more are ignored)
#define PMC_MAX_GP_INTEL       8        // Intel GP counters used (KVM exposes at most 8)
#define PMC_MIN_INTERVAL       1000     // events: the smallest counter period (hwpmc's mincount)
#define PMC_DEFAULT_INTERVAL   1000000  // events between samples for a PMC source
#define PROFILE_TIME_DEFAULT   78125    // 100 ns units: 7.8125 ms, NT's KiProfileTimeInterval
#define PROFILE_TIME_MIN       1221     // 100 ns units: ~8,192 Hz, NT's RTC HAL minimum
#define PROFILE_TIME_MAX       10000000 // 100 ns units: 1 s
#define PMC_MAX_SAMPLE_RATE    100000   // samples per second per CPU before periods are stretched
#define PMC_THROTTLE_WINDOW_NS 10000000 // handler time and samples are budgeted per 10 ms window
#define PMC_PMI_MAX_PERCENT    25  // share of a window the PMI handler may use (Linux's default)
#define PMC_THROTTLE_MAX_SHIFT 40  // a throttled period is stretched at most 2^40 times
#define PMC_SQUEEZE_MAX_SHIFT  16  // a spent budget stretches one arm at most 2^16 times more
#define PMC_PMI_MAX_LOOPS      100 // overflow re-checks in one PMI before declaring it stuck
