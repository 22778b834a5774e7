// KPROFILE_SOURCE: what each profile source is and how each interface counts it.
//
// One table (profile_source.c) holds every source 0x00-0x1F. The HAL, the
// interfaces, `pmc info` and the trace decoder all read it; nothing else lists
// sources.
#pragma once
#include "lib/abi.h"
#include "lib/types.h"

// What kind of counter a source uses.
// The ABI's numbering (abi.h), so ring 3 sees the kernel's values unchanged.
enum pmc_counter_kind {
    PMC_COUNTER_NONE = COUNTER_NONE,       // not countable here
    PMC_COUNTER_TIMER = COUNTER_TIMER,     // ProfileTime: the LAPIC timer
    PMC_COUNTER_FIXED = COUNTER_FIXED,     // an Intel fixed-function counter
    PMC_COUNTER_GENERAL = COUNTER_GENERAL, // a general-purpose counter (Intel PMCx, AMD PERF_CTRx)
};

#define PMC_NO_EBX_BIT (-1) // seed 000 gives the source no CPUID.0AH:EBX bit
#define PMC_NO_FIXED   (-1) // no Intel fixed counter counts this source

struct profile_source_desc {
    const char *name;        // WDM.H name, e.g. "ProfileTime"
    const char *description; // the name without "Profile": the HAL's descriptive string
    int8_t ebx_bit;          // seed 000: CPUID.0AH:EBX bit that must be meaningful and clear
    int8_t intel_fixed;      // IA32_FIXED_CTRn able to count it, or PMC_NO_FIXED
    uint32_t intel_select;   // seed 000's IA32_PERFEVTSELx value (USR|OS|umask|event), 0 = none
    uint64_t amd_select;     // AMD PERF_CTLx value (USR|OS|umask|event), 0 = none
};

extern const struct profile_source_desc profile_sources[ProfileSourceCount];

// The row for source, or NULL when source is out of range.
const struct profile_source_desc *profile_source(KPROFILE_SOURCE source);

// Name for messages; "Profile?" for values out of range.
const char *profile_source_name(KPROFILE_SOURCE source);

const char *pmc_counter_kind_name(enum pmc_counter_kind kind);
