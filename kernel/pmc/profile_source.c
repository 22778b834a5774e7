// The KPROFILE_SOURCE table.
//
// Intel columns are seed 000's rows exactly (EBX bit and event select). The
// select values already carry USR|OS (0x00030000); the interfaces add INT|EN to
// sample. AMD columns map the same sources onto AMD's documented events.
// Sources with no row in either column are unsupported by every PMC interface.
#include "pmc/profile_source.h"
#include "arch/x86/msr.h"

// AMD PERF_CTL value counting event ev (12 bits) with unit mask um in both rings.
#define AMD_EVENT(ev, um)                                                                   \
    ((uint64_t)((ev) & 0xFF) | ((uint64_t)(((ev) >> 8) & 0xF) << AMD_PERF_CTL_EVENT_HI_SHIFT) | \
     ((uint64_t)(um) << PERFEVTSEL_UMASK_SHIFT) | PERFEVTSEL_USR | PERFEVTSEL_OS)

#define AMD_CYCLES        AMD_EVENT(0x76, 0x00)
#define AMD_INSTRUCTIONS  AMD_EVENT(0xC0, 0x00)
#define AMD_BRANCHES      AMD_EVENT(0xC2, 0x00)
#define AMD_MISPREDICTS   AMD_EVENT(0xC3, 0x00)
#define AMD_CACHE_REFS    AMD_EVENT(0x7D, 0x07)
#define AMD_CACHE_MISSES  AMD_EVENT(0x7E, 0x07)

#define NONE_ PMC_NO_EBX_BIT
#define NOFX_ PMC_NO_FIXED

// [source] = { name, description, EBX bit, fixed counter, Intel select, AMD select }
const struct profile_source_desc profile_sources[ProfileSourceCount] = {
    // ProfileTime is the LAPIC timer; seed 000 lists a select for it that is never used.
    [ProfileTime]                 = {"ProfileTime", "Time", NONE_, NOFX_, 0x0003003C, 0},
    [ProfileAlignmentFixup]       = {"ProfileAlignmentFixup", "AlignmentFixup", NONE_, NOFX_, 0, 0},
    [ProfileTotalIssues]          = {"ProfileTotalIssues", "TotalIssues", 1, 0, 0x000300C0, AMD_INSTRUCTIONS},
    [ProfilePipelineDry]          = {"ProfilePipelineDry", "PipelineDry", NONE_, NOFX_, 0, 0},
    [ProfileLoadInstructions]     = {"ProfileLoadInstructions", "LoadInstructions", NONE_, NOFX_, 0, 0},
    [ProfilePipelineFrozen]       = {"ProfilePipelineFrozen", "PipelineFrozen", NONE_, NOFX_, 0, 0},
    [ProfileBranchInstructions]   = {"ProfileBranchInstructions", "BranchInstructions", 5, NOFX_, 0x000300C4, AMD_BRANCHES},
    [ProfileTotalNonissues]       = {"ProfileTotalNonissues", "TotalNonissues", NONE_, NOFX_, 0, 0},
    [ProfileDcacheMisses]         = {"ProfileDcacheMisses", "DcacheMisses", NONE_, NOFX_, 0, 0},
    [ProfileIcacheMisses]         = {"ProfileIcacheMisses", "IcacheMisses", NONE_, NOFX_, 0, 0},
    [ProfileCacheMisses]          = {"ProfileCacheMisses", "CacheMisses", 4, NOFX_, 0x0003412E, AMD_CACHE_MISSES},
    [ProfileBranchMispredictions] = {"ProfileBranchMispredictions", "BranchMispredictions", 6, NOFX_, 0x000300C5, AMD_MISPREDICTS},
    [ProfileStoreInstructions]    = {"ProfileStoreInstructions", "StoreInstructions", NONE_, NOFX_, 0, 0},
    [ProfileFpInstructions]       = {"ProfileFpInstructions", "FpInstructions", NONE_, NOFX_, 0, 0},
    [ProfileIntegerInstructions]  = {"ProfileIntegerInstructions", "IntegerInstructions", NONE_, NOFX_, 0, 0},
    [Profile2Issue]               = {"Profile2Issue", "2Issue", NONE_, NOFX_, 0, 0},
    [Profile3Issue]               = {"Profile3Issue", "3Issue", NONE_, NOFX_, 0, 0},
    [Profile4Issue]               = {"Profile4Issue", "4Issue", NONE_, NOFX_, 0, 0},
    [ProfileSpecialInstructions]  = {"ProfileSpecialInstructions", "SpecialInstructions", NONE_, NOFX_, 0, 0},
    [ProfileTotalCycles]          = {"ProfileTotalCycles", "TotalCycles", 0, 1, 0x0003003C, AMD_CYCLES},
    [ProfileIcacheIssues]         = {"ProfileIcacheIssues", "IcacheIssues", NONE_, NOFX_, 0, 0},
    [ProfileDcacheAccesses]       = {"ProfileDcacheAccesses", "DcacheAccesses", NONE_, NOFX_, 0, 0},
    [ProfileMemoryBarrierCycles]  = {"ProfileMemoryBarrierCycles", "MemoryBarrierCycles", NONE_, NOFX_, 0, 0},
    [ProfileLoadLinkedIssues]     = {"ProfileLoadLinkedIssues", "LoadLinkedIssues", NONE_, NOFX_, 0, 0},
    [ProfileMaximum]              = {"ProfileMaximum", "Maximum", NONE_, NOFX_, 0, 0},
    // Emon-specific (seed 000), in the order of their EBX bits.
    [ProfileUnhaltedCoreCycles]       = {"ProfileUnhaltedCoreCycles", "UnhaltedCoreCycles", 0, 1, 0x0003003C, AMD_CYCLES},
    [ProfileInstructionRetired]       = {"ProfileInstructionRetired", "InstructionRetired", 1, 0, 0x000300C0, AMD_INSTRUCTIONS},
    [ProfileUnhaltedReferenceCycles]  = {"ProfileUnhaltedReferenceCycles", "UnhaltedReferenceCycles", 2, 2, 0x0003013C, 0},
    [ProfileLLCReference]             = {"ProfileLLCReference", "LLCReference", 3, NOFX_, 0x00034F2E, AMD_CACHE_REFS},
    [ProfileLLCMisses]                = {"ProfileLLCMisses", "LLCMisses", 4, NOFX_, 0x0003412E, AMD_CACHE_MISSES},
    [ProfileBranchInstructionRetired] = {"ProfileBranchInstructionRetired", "BranchInstructionRetired", 5, NOFX_, 0x000300C4, AMD_BRANCHES},
    [ProfileBranchMispredictsRetired] = {"ProfileBranchMispredictsRetired", "BranchMispredictsRetired", 6, NOFX_, 0x000300C5, AMD_MISPREDICTS},
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
