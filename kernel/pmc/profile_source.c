// The KPROFILE_SOURCE table.
//
// Intel columns are seed 000's rows exactly (EBX bit and event select). The
// select values already carry USR|OS (0x00030000); the interfaces add INT|EN to
// sample. AMD columns map the same sources onto AMD's documented events.
// Sources with no row in either column are unsupported by every PMC interface.
#include "pmc/profile_source.h"
#include "arch/x86/msr.h"

// AMD PERF_CTL value counting event ev (12 bits) with unit mask um in both rings.
#define AMD_EVENT(ev, um) \
    ((uint64_t)((ev)&0xFF) | ((uint64_t)(((ev) >> 8) & 0xF) << AMD_PERF_CTL_EVENT_HI_SHIFT) | \
     ((uint64_t)(um) << PERFEVTSEL_UMASK_SHIFT) | PERFEVTSEL_USR | PERFEVTSEL_OS)

#define AMD_CYCLES       AMD_EVENT(0x76, 0x00)
#define AMD_INSTRUCTIONS AMD_EVENT(0xC0, 0x00)
#define AMD_BRANCHES     AMD_EVENT(0xC2, 0x00)
#define AMD_MISPREDICTS  AMD_EVENT(0xC3, 0x00)
#define AMD_CACHE_REFS   AMD_EVENT(0x7D, 0x07)
#define AMD_CACHE_MISSES AMD_EVENT(0x7E, 0x07)

// A row: the WDM.H name is "Profile" + the descriptive string, by construction.
#define ROW(desc, ebx_bit, fixed, intel, amd) \
    { \
        "Profile" desc, desc, ebx_bit, fixed, intel, amd \
    }
#define NO_BIT PMC_NO_EBX_BIT
#define NO_FIX PMC_NO_FIXED

const struct profile_source_desc profile_sources[ProfileSourceCount] = {
    // [source] = ROW(description, CPUID.0AH:EBX bit, fixed counter, Intel select, AMD select)
    // ProfileTime is the LAPIC timer; seed 000 gives it a select that is never used.
    [ProfileTime] = ROW("Time", NO_BIT, NO_FIX, 0x0003003C, 0),
    [ProfileAlignmentFixup] = ROW("AlignmentFixup", NO_BIT, NO_FIX, 0, 0),
    [ProfileTotalIssues] = ROW("TotalIssues", 1, 0, 0x000300C0, AMD_INSTRUCTIONS),
    [ProfilePipelineDry] = ROW("PipelineDry", NO_BIT, NO_FIX, 0, 0),
    [ProfileLoadInstructions] = ROW("LoadInstructions", NO_BIT, NO_FIX, 0, 0),
    [ProfilePipelineFrozen] = ROW("PipelineFrozen", NO_BIT, NO_FIX, 0, 0),
    [ProfileBranchInstructions] = ROW("BranchInstructions", 5, NO_FIX, 0x000300C4, AMD_BRANCHES),
    [ProfileTotalNonissues] = ROW("TotalNonissues", NO_BIT, NO_FIX, 0, 0),
    [ProfileDcacheMisses] = ROW("DcacheMisses", NO_BIT, NO_FIX, 0, 0),
    [ProfileIcacheMisses] = ROW("IcacheMisses", NO_BIT, NO_FIX, 0, 0),
    [ProfileCacheMisses] = ROW("CacheMisses", 4, NO_FIX, 0x0003412E, AMD_CACHE_MISSES),
    [ProfileBranchMispredictions] =
        ROW("BranchMispredictions", 6, NO_FIX, 0x000300C5, AMD_MISPREDICTS),
    [ProfileStoreInstructions] = ROW("StoreInstructions", NO_BIT, NO_FIX, 0, 0),
    [ProfileFpInstructions] = ROW("FpInstructions", NO_BIT, NO_FIX, 0, 0),
    [ProfileIntegerInstructions] = ROW("IntegerInstructions", NO_BIT, NO_FIX, 0, 0),
    [Profile2Issue] = ROW("2Issue", NO_BIT, NO_FIX, 0, 0),
    [Profile3Issue] = ROW("3Issue", NO_BIT, NO_FIX, 0, 0),
    [Profile4Issue] = ROW("4Issue", NO_BIT, NO_FIX, 0, 0),
    [ProfileSpecialInstructions] = ROW("SpecialInstructions", NO_BIT, NO_FIX, 0, 0),
    [ProfileTotalCycles] = ROW("TotalCycles", 0, 1, 0x0003003C, AMD_CYCLES),
    [ProfileIcacheIssues] = ROW("IcacheIssues", NO_BIT, NO_FIX, 0, 0),
    [ProfileDcacheAccesses] = ROW("DcacheAccesses", NO_BIT, NO_FIX, 0, 0),
    [ProfileMemoryBarrierCycles] = ROW("MemoryBarrierCycles", NO_BIT, NO_FIX, 0, 0),
    [ProfileLoadLinkedIssues] = ROW("LoadLinkedIssues", NO_BIT, NO_FIX, 0, 0),
    [ProfileMaximum] = ROW("Maximum", NO_BIT, NO_FIX, 0, 0),
    // Emon-specific (seed 000), in the order of their EBX bits.
    [ProfileUnhaltedCoreCycles] = ROW("UnhaltedCoreCycles", 0, 1, 0x0003003C, AMD_CYCLES),
    [ProfileInstructionRetired] = ROW("InstructionRetired", 1, 0, 0x000300C0, AMD_INSTRUCTIONS),
    [ProfileUnhaltedReferenceCycles] = ROW("UnhaltedReferenceCycles", 2, 2, 0x0003013C, 0),
    [ProfileLLCReference] = ROW("LLCReference", 3, NO_FIX, 0x00034F2E, AMD_CACHE_REFS),
    [ProfileLLCMisses] = ROW("LLCMisses", 4, NO_FIX, 0x0003412E, AMD_CACHE_MISSES),
    [ProfileBranchInstructionRetired] =
        ROW("BranchInstructionRetired", 5, NO_FIX, 0x000300C4, AMD_BRANCHES),
    [ProfileBranchMispredictsRetired] =
        ROW("BranchMispredictsRetired", 6, NO_FIX, 0x000300C5, AMD_MISPREDICTS),
};

const struct profile_source_desc *profile_source(KPROFILE_SOURCE source)
{
    if ((unsigned)source >= ProfileSourceCount)
        return NULL;
    return &profile_sources[source];
}

const char *profile_source_name(KPROFILE_SOURCE source)
{
    const struct profile_source_desc *d = profile_source(source);
    return d ? d->name : "Profile?";
}

const char *pmc_counter_kind_name(enum pmc_counter_kind kind)
{
    switch (kind) {
    case PMC_COUNTER_TIMER: return "timer";
    case PMC_COUNTER_FIXED: return "fixed";
    case PMC_COUNTER_GENERAL: return "general";
    default: return "none";
    }
}
