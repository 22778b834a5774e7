// KPROFILE_SOURCE: what each profile source is and how each interface counts it.
//
// One table (hal/profile_source.c) holds every source 0x00-0x1F. The HAL, the
// interfaces, `pmc info` and the trace decoder all read it; nothing else lists
// sources.
#pragma once
#include "lib/abi/profile.h"
#include "lib/types.h"

#include "arch/x86/msr.h"

// The privilege levels a counter counts at, encoded as IA32_FIXED_CTR_CTRL's 2-bit
// enable field of each fixed counter (Intel SDM vol. 3B, "Fixed-function
// Performance Counters": 1 counts at CPL 0, 2 at CPL > 0, 3 at both).
enum pmc_levels {
    PMC_LEVEL_OS = 1,  // kernel mode
    PMC_LEVEL_USR = 2, // CPL 1-3 (here: user mode)
    PMC_LEVELS_ALL = 3,
};

// An event select with its USR (bit 16) and OS (bit 17) bits as levels says:
// the same two bits in Intel's IA32_PERFEVTSELx (SDM vol. 3B,
// "Architectural Performance Monitoring Version 1") and AMD's PERF_CTLx (APM
// vol. 2, 13.2.1 "Performance Event-Select Registers").
static inline uint64_t pmc_select_levels(uint64_t select, unsigned levels)
{
    select &= ~(PERFEVTSEL_USR | PERFEVTSEL_OS);
    return select | (levels & PMC_LEVEL_USR ? PERFEVTSEL_USR : 0) |
           (levels & PMC_LEVEL_OS ? PERFEVTSEL_OS : 0);
}

// What kind of counter a source uses.
// The ABI's numbering (lib/abi/profile.h), so user mode sees the kernel's values unchanged.
enum pmc_counter_kind {
    PMC_COUNTER_NONE = COUNTER_NONE,       // not countable here
    PMC_COUNTER_TIMER = COUNTER_TIMER,     // ProfileTime: the LAPIC timer
    PMC_COUNTER_FIXED = COUNTER_FIXED,     // an Intel fixed-function counter
    PMC_COUNTER_GENERAL = COUNTER_GENERAL, // a general-purpose counter (Intel PMCx, AMD PERF_CTRx)
};

#define PMC_NO_EBX_BIT (-1) // the Emon table gives the source no CPUID.0AH:EBX bit
#define PMC_NO_FIXED   (-1) // no Intel fixed counter counts this source

// What an AMD counter would count for a source; the encoding depends on the
// family (pmc_amd_event).
enum pmc_amd_kind {
    PMC_AMD_NONE,         // no AMD event
    PMC_AMD_CYCLES,       // core cycles not halted
    PMC_AMD_INSTRUCTIONS, // retired instructions
    PMC_AMD_BRANCHES,     // retired branch instructions
    PMC_AMD_MISPREDICTS,  // retired mispredicted branches
    PMC_AMD_CACHE_REFS,   // L2 requests (Linux's "cache-references")
    PMC_AMD_CACHE_MISSES, // L2 misses (Linux's "cache-misses")
    PMC_AMD_KINDS
};

// One AMD event on one family.
struct pmc_amd_event {
    uint64_t select;    // PERF_CTLx value (USR|OS|umask|event); 0 = none on this family
    uint32_t counters;  // bit n: PERF_CTRn can count it
    const char *reason; // when select is 0: why not
};

struct profile_source_desc {
    const char *name;        // WDM.H name, e.g. "ProfileTime"
    const char *description; // the name without "Profile": the HAL's descriptive string
    int8_t ebx_bit;     // CPUID.0AH:EBX bit that must be meaningful and clear (SDM vol. 2A CPUID)
    int8_t intel_fixed; // IA32_FIXED_CTRn able to count it, or PMC_NO_FIXED
    uint32_t intel_select; // the Emon table's IA32_PERFEVTSELx value (USR|OS|umask|event), 0 = none
    uint8_t amd_kind;      // enum pmc_amd_kind
    // Counted only on intel_fixed: intel_select on a GP counter counts another
    // event at another rate (reference cycles: see hal/profile_source.c).
    bool intel_fixed_only;
};

extern const struct profile_source_desc profile_sources[ProfileSourceCount];

// The row for source, or NULL when source is out of range.
const struct profile_source_desc *profile_source(KPROFILE_SOURCE source);

// Name for messages; "Profile?" for values out of range.
const char *profile_source_name(KPROFILE_SOURCE source);

// Whether the source lists show source: every known source but ProfileMaximum,
// which in NT's KPROFILE_SOURCE (wdm.h) ends the portable sources and names no
// event (`profile sources` and `pmc info` agree through this).
bool profile_source_listed(KPROFILE_SOURCE source);

const char *pmc_counter_kind_name(enum pmc_counter_kind kind);

// The encoding of an AMD event kind on a processor family (CPUID.1 base +
// extended family, e.g. 0x19).
struct pmc_amd_event pmc_amd_event(enum pmc_amd_kind kind, unsigned family);
