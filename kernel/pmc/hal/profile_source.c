// The KPROFILE_SOURCE table.
//
// Intel columns are the Windows HAL's Emon rows exactly (EBX bit and event select). The
// select values already carry USR|OS (0x00030000); the interfaces add INT|EN to
// sample. The AMD column names an event kind; pmc_amd_event gives its encoding
// on the running family. Sources with no row in either column are unsupported
// by every PMC interface.
#include "pmc/hal/profile_source.h"

#include "arch/x86/msr.h"

// AMD PERF_CTL value counting event ev (12 bits) with unit mask um in both levels.
#define AMD_EVENT(ev, um) \
    ((uint64_t)((ev)&0xFF) | ((uint64_t)(((ev) >> 8) & 0xF) << AMD_PERF_CTL_EVENT_HI_SHIFT) | \
     ((uint64_t)(um) << PERFEVTSEL_UMASK_SHIFT) | PERFEVTSEL_USR | PERFEVTSEL_OS)

#define AMD_ANY_COUNTER 0x3Fu // PERF_CTR0-5
#define AMD_CTR0_2      0x07u

#define AMD_CYCLES       PMC_AMD_CYCLES
#define AMD_INSTRUCTIONS PMC_AMD_INSTRUCTIONS
#define AMD_BRANCHES     PMC_AMD_BRANCHES
#define AMD_MISPREDICTS  PMC_AMD_MISPREDICTS
#define AMD_CACHE_REFS   PMC_AMD_CACHE_REFS
#define AMD_CACHE_MISSES PMC_AMD_CACHE_MISSES

// AMD event encodings per family, and where each comes from. The events are
// named as the manuals name them (PMCx0NN), so each can be looked up in the
// "core performance monitor counters" event list of:
//   family 0Fh: AMD BIOS and Kernel Developer's Guide (BKDG) for AMD NPT family
//     0Fh processors, publication 32559;
//   family 10h: BKDG for family 10h, publication 31116;
//   family 15h: BKDG for family 15h models 00h-0Fh, publication 42301;
//   family 17h: Processor Programming Reference (PPR) for family 17h model
//     01h, publication 54945;
//   family 19h: PPR for family 19h model 01h, publication 55898.
// Cycles PMCx076, retired instructions PMCx0C0, retired branches PMCx0C2 and
// retired mispredicted branches PMCx0C3 have the same codes in all of them.
// The L2 events changed with Zen:
//   families 0Fh-16h: PMCx07D "requests to L2 cache" and PMCx07E "L2 cache
//     misses", unit mask 0x07 (instruction fills, data fills, TLB walks);
//   family 17h and later: PMCx060 "L2 cache request" with unit mask 0xFF and
//     PMCx064 "L2 cache miss" with unit mask 0x09 (data and instruction cache
//     misses). Linux's amd_zen1_perfmon_event_map (arch/x86/events/amd/core.c)
//     uses the same two encodings for cache references and misses.
// Family 15h counts events 0x060-0x07F (cycles and the L2 events among them)
// on PERF_CTR0-2 only (the counter restriction given with each PMCx0NN in the
// family 15h BKDG; Linux's amd_get_event_constraints_f15h): elsewhere they
// count nothing. Earlier or unknown families get no L2 events: their encodings
// are not known here, and guessing would silently count something else.
struct pmc_amd_event pmc_amd_event(enum pmc_amd_kind kind, unsigned family)
{
    struct pmc_amd_event e = {0, AMD_ANY_COUNTER, ""};
    bool zen = family >= 0x17, bkdg = family >= 0x0F && family <= 0x16;
    bool f15_cu = family == 0x15;
    switch (kind) {
    case PMC_AMD_CYCLES:
        e.select = AMD_EVENT(0x76, 0x00);
        e.counters = f15_cu ? AMD_CTR0_2 : AMD_ANY_COUNTER;
        break;
    case PMC_AMD_INSTRUCTIONS: e.select = AMD_EVENT(0xC0, 0x00); break;
    case PMC_AMD_BRANCHES: e.select = AMD_EVENT(0xC2, 0x00); break;
    case PMC_AMD_MISPREDICTS: e.select = AMD_EVENT(0xC3, 0x00); break;
    case PMC_AMD_CACHE_REFS:
    case PMC_AMD_CACHE_MISSES: {
        bool refs = kind == PMC_AMD_CACHE_REFS;
        if (zen)
            e.select = refs ? AMD_EVENT(0x60, 0xFF) : AMD_EVENT(0x64, 0x09);
        else if (bkdg)
            e.select = refs ? AMD_EVENT(0x7D, 0x07) : AMD_EVENT(0x7E, 0x07);
        else
            e.reason = "no L2 cache event known for this AMD family";
        e.counters = f15_cu ? AMD_CTR0_2 : AMD_ANY_COUNTER;
        break;
    }
    default: e.reason = "no AMD event for this source"; break;
    }
    return e;
}

// A row: the WDM.H name is "Profile" + the descriptive string, by construction.
#define ROW(desc, ebx_bit, fixed, intel, amd) \
    { \
        "Profile" desc, desc, ebx_bit, fixed, intel, amd, false \
    }
// A row whose Intel event counts only on its fixed counter.
#define ROW_FIXED_ONLY(desc, ebx_bit, fixed, intel, amd) \
    { \
        "Profile" desc, desc, ebx_bit, fixed, intel, amd, true \
    }
#define NO_BIT PMC_NO_EBX_BIT
#define NO_FIX PMC_NO_FIXED

const struct profile_source_desc profile_sources[ProfileSourceCount] = {
    // [source] = ROW(description, CPUID.0AH:EBX bit, fixed counter, Intel select, AMD select)
    // ProfileTime is the LAPIC timer; the Emon table gives it a select that is never used.
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
    // Emon-specific, in the order of their CPUID.0AH:EBX bits.
    [ProfileUnhaltedCoreCycles] = ROW("UnhaltedCoreCycles", 0, 1, 0x0003003C, AMD_CYCLES),
    [ProfileInstructionRetired] = ROW("InstructionRetired", 1, 0, 0x000300C0, AMD_INSTRUCTIONS),
    // Reference cycles are FIXED_CTR2's, at the TSC rate. The Emon row's GP
    // select, 3CH umask 01H, is another event whose rate depends on the
    // microarchitecture (Intel SDM vol. 3B, "Pre-defined Architectural
    // Performance Events"; intel/perfmon's tables: CPU_CLK_UNHALTED.BUS on
    // Bonnell, REF_XCLK, the core crystal clock, from Sandy Bridge to Ice Lake,
    // e.g. SKL/events/skylake_core.json, REF_TSC_P from Golden Cove), never
    // CPU_CLK_UNHALTED.REF_TSC, so one source on both would mix rates; Linux
    // maps ref-cycles to FIXED_CTR2 only (arch/x86/events/intel/core.c). The
    // GP selects of the other rows are checked against those tables by
    // tests/pmc/test_source.c.
    [ProfileUnhaltedReferenceCycles] =
        ROW_FIXED_ONLY("UnhaltedReferenceCycles", 2, 2, 0x0003013C, 0),
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

bool profile_source_listed(KPROFILE_SOURCE source)
{
    return (unsigned)source < ProfileSourceCount && source != ProfileMaximum;
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
