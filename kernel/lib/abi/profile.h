// KPROFILE_SOURCE and the profile-source rows and per-profile statistics.
//
// Part of the kernel/user ABI: included by the kernel and by userland;
// nothing here may depend on either.
#pragma once
#include <stdint.h>

// KPROFILE_SOURCE: 0x00-0x18 as in WDM.H, 0x19-0x1F Emon-specific.
typedef enum _KPROFILE_SOURCE {
    ProfileTime = 0x00,
    ProfileAlignmentFixup = 0x01,
    ProfileTotalIssues = 0x02,
    ProfilePipelineDry = 0x03,
    ProfileLoadInstructions = 0x04,
    ProfilePipelineFrozen = 0x05,
    ProfileBranchInstructions = 0x06,
    ProfileTotalNonissues = 0x07,
    ProfileDcacheMisses = 0x08,
    ProfileIcacheMisses = 0x09,
    ProfileCacheMisses = 0x0A,
    ProfileBranchMispredictions = 0x0B,
    ProfileStoreInstructions = 0x0C,
    ProfileFpInstructions = 0x0D,
    ProfileIntegerInstructions = 0x0E,
    Profile2Issue = 0x0F,
    Profile3Issue = 0x10,
    Profile4Issue = 0x11,
    ProfileSpecialInstructions = 0x12,
    ProfileTotalCycles = 0x13,
    ProfileIcacheIssues = 0x14,
    ProfileDcacheAccesses = 0x15,
    ProfileMemoryBarrierCycles = 0x16,
    ProfileLoadLinkedIssues = 0x17,
    ProfileMaximum = 0x18,
    ProfileUnhaltedCoreCycles = 0x19,
    ProfileInstructionRetired = 0x1A,
    ProfileUnhaltedReferenceCycles = 0x1B,
    ProfileLLCReference = 0x1C,
    ProfileLLCMisses = 0x1D,
    ProfileBranchInstructionRetired = 0x1E,
    ProfileBranchMispredictsRetired = 0x1F,
    ProfileSourceCount = 0x20 // one past the last source this kernel knows
} KPROFILE_SOURCE;

// SysProfileSources: one row per KPROFILE_SOURCE.
enum profile_counter_kind {
    COUNTER_NONE = 0,
    COUNTER_TIMER = 1,
    COUNTER_FIXED = 2,
    COUNTER_GENERAL = 3
};

struct sys_profile_source {
    uint32_t source; // KPROFILE_SOURCE
    uint32_t supported;
    uint32_t kind;    // enum profile_counter_kind
    uint32_t started; // 1 while the HAL runs it on every CPU
    uint64_t users;   // its users (started profiles and PMCs): 0 when stopped
    uint64_t interval, default_interval, min_interval, max_interval;
    char name[40];   // e.g. "ProfileTime"
    char units[16];  // "100ns" for ProfileTime, "events" otherwise
    char reason[64]; // why it is unsupported ("" when supported)
    // The counters it may use (HalQuerySystemInformation's
    // HalProfileSourceCounterInformation, kernel/pmc/hal/hal.h): bit n of
    // gp_counters is general-purpose counter n (Intel IA32_PMCn, AMD
    // PERF_CTRn), bit n of fixed_counters Intel's IA32_FIXED_CTRn; both 0
    // when no counter can (ProfileTime runs on the LAPIC timer).
    uint32_t gp_counters, fixed_counters;
    uint32_t constraints;          // PROFILE_COUNTERS_* below
    uint8_t gp_total, fixed_total; // the counters this machine has, of each kind
    uint8_t pad[6];
};

// sys_profile_source.constraints
#define PROFILE_COUNTERS_TIMER      0x1 // no counter: the LAPIC timer (ProfileTime)
#define PROFILE_COUNTERS_FIXED_ONLY 0x2 // only its fixed counter (reference cycles: FIXED_CTR2)
#define PROFILE_COUNTERS_GP_SUBSET  0x4 // only some general-purpose counters (AMD family 15h)

// SysProfileStats: what happened to one profile's samples.
struct sys_profile_stats {
    uint64_t delivered;    // samples of this profile's source on its CPUs and process
    uint64_t in_range;     // counted in a bucket
    uint64_t out_of_range; // outside [RangeBase, RangeBase + RangeSize)
    uint64_t throttled;    // dropped by storm throttling
};
