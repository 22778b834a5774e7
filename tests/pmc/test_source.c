// The KPROFILE_SOURCE table against the Emon rows and WDM.H, and the Emon gating
// rule for every EBX combination and EBX length.
#include <stdio.h>
#include <string.h>
#include "tests.h"

// WDM.H's names for 0x00-0x18, written out independently of the kernel's table.
static const char *const wdm_names[] = {
    "ProfileTime",
    "ProfileAlignmentFixup",
    "ProfileTotalIssues",
    "ProfilePipelineDry",
    "ProfileLoadInstructions",
    "ProfilePipelineFrozen",
    "ProfileBranchInstructions",
    "ProfileTotalNonissues",
    "ProfileDcacheMisses",
    "ProfileIcacheMisses",
    "ProfileCacheMisses",
    "ProfileBranchMispredictions",
    "ProfileStoreInstructions",
    "ProfileFpInstructions",
    "ProfileIntegerInstructions",
    "Profile2Issue",
    "Profile3Issue",
    "Profile4Issue",
    "ProfileSpecialInstructions",
    "ProfileTotalCycles",
    "ProfileIcacheIssues",
    "ProfileDcacheAccesses",
    "ProfileMemoryBarrierCycles",
    "ProfileLoadLinkedIssues",
    "ProfileMaximum",
    "ProfileUnhaltedCoreCycles",
    "ProfileInstructionRetired",
    "ProfileUnhaltedReferenceCycles",
    "ProfileLLCReference",
    "ProfileLLCMisses",
    "ProfileBranchInstructionRetired",
    "ProfileBranchMispredictsRetired",
};

// The Emon table (the Windows HAL's profile sources for the architectural
// events): value, EBX bit, select.
static const struct {
    unsigned value;
    int bit;
    uint32_t select;
} emon_rows[] = {
    {0x02, 1, 0x000300C0}, {0x06, 5, 0x000300C4}, {0x0A, 4, 0x0003412E}, {0x0B, 6, 0x000300C5},
    {0x13, 0, 0x0003003C}, {0x19, 0, 0x0003003C}, {0x1A, 1, 0x000300C0}, {0x1B, 2, 0x0003013C},
    {0x1C, 3, 0x00034F2E}, {0x1D, 4, 0x0003412E}, {0x1E, 5, 0x000300C4}, {0x1F, 6, 0x000300C5},
};

static int emon_bit(unsigned s)
{
    for (size_t i = 0; i < sizeof(emon_rows) / sizeof(emon_rows[0]); i++)
        if (emon_rows[i].value == s)
            return emon_rows[i].bit;
    return -1;
}

static void check_table(void)
{
    tap_section("profile source table");
    _Static_assert(sizeof(wdm_names) / sizeof(wdm_names[0]) == ProfileSourceCount, "32 names");
    unsigned bad_names = 0, bad_desc = 0;
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        const struct profile_source_desc *d = profile_source((KPROFILE_SOURCE)s);
        char want[64];
        snprintf(want, sizeof(want), "Profile%s", d->description);
        if (strcmp(d->name, wdm_names[s]) != 0) {
            bad_names++;
            tap_diag("source 0x%02x is %s, want %s", s, d->name, wdm_names[s]);
        }
        if (strcmp(d->name, want) != 0)
            bad_desc++;
    }
    tap_eq(bad_names, 0, "every source 0x00-0x1F has its WDM.H / Emon name");
    tap_eq(bad_desc, 0, "every name is \"Profile\" + its descriptive string");
    tap_streq(profile_source(ProfileTime)->description, "Time",
              "ProfileTime's description is Time");
    tap_ok(profile_source(ProfileSourceCount) == NULL, "profile_source(0x20) is NULL");
    tap_streq(profile_source_name((KPROFILE_SOURCE)99), "Profile?", "name of an unknown source");

    for (size_t i = 0; i < sizeof(emon_rows) / sizeof(emon_rows[0]); i++) {
        const struct profile_source_desc *d = profile_source((KPROFILE_SOURCE)emon_rows[i].value);
        tap_ok(d->ebx_bit == emon_rows[i].bit && d->intel_select == emon_rows[i].select,
               "Emon row 0x%02x %s: EBX bit %d select 0x%08X", emon_rows[i].value, d->name,
               emon_rows[i].bit, emon_rows[i].select);
    }
    tap_eq(profile_source(ProfileTime)->intel_select, 0x0003003C,
           "the Emon table's ProfileTime select");
    unsigned extra = 0;
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        const struct profile_source_desc *d = profile_source((KPROFILE_SOURCE)s);
        if (emon_bit(s) < 0 && (d->ebx_bit != PMC_NO_EBX_BIT || (s && d->intel_select)))
            extra++;
    }
    tap_eq(extra, 0, "no Intel event for sources outside the Emon table");

    static const struct {
        unsigned s;
        int fixed;
    } fixed[] = {
        {ProfileTotalIssues, 0},
        {ProfileInstructionRetired, 0},
        {ProfileTotalCycles, 1},
        {ProfileUnhaltedCoreCycles, 1},
        {ProfileUnhaltedReferenceCycles, 2},
    };
    unsigned fixed_ok = 0, fixed_total = 0;
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        int want = PMC_NO_FIXED;
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
            if (fixed[i].s == s)
                want = fixed[i].fixed;
        fixed_total++;
        fixed_ok += profile_source((KPROFILE_SOURCE)s)->intel_fixed == want;
    }
    tap_eq(fixed_ok, fixed_total,
           "fixed counters: instructions -> CTR0, core cycles -> CTR1, "
           "reference cycles -> CTR2, nothing else");

    // AMD: which event kind each source counts (encodings per family: test_amd.c).
    static const struct {
        unsigned s;
        enum pmc_amd_kind kind;
    } amd[] = {
        {ProfileTotalIssues, PMC_AMD_INSTRUCTIONS},
        {ProfileBranchInstructions, PMC_AMD_BRANCHES},
        {ProfileCacheMisses, PMC_AMD_CACHE_MISSES},
        {ProfileBranchMispredictions, PMC_AMD_MISPREDICTS},
        {ProfileTotalCycles, PMC_AMD_CYCLES},
        {ProfileUnhaltedCoreCycles, PMC_AMD_CYCLES},
        {ProfileInstructionRetired, PMC_AMD_INSTRUCTIONS},
        {ProfileLLCReference, PMC_AMD_CACHE_REFS},
        {ProfileLLCMisses, PMC_AMD_CACHE_MISSES},
        {ProfileBranchInstructionRetired, PMC_AMD_BRANCHES},
        {ProfileBranchMispredictsRetired, PMC_AMD_MISPREDICTS},
    };
    unsigned wrong = 0, kinds = 0;
    for (size_t i = 0; i < sizeof(amd) / sizeof(amd[0]); i++)
        wrong += profile_source((KPROFILE_SOURCE)amd[i].s)->amd_kind != amd[i].kind;
    for (unsigned s = 0; s < ProfileSourceCount; s++)
        kinds += profile_source((KPROFILE_SOURCE)s)->amd_kind != PMC_AMD_NONE;
    tap_ok(wrong == 0 && kinds == 11, "AMD event kinds: the eleven sources above, nothing else");
    tap_streq(pmc_counter_kind_name(PMC_COUNTER_FIXED), "fixed", "counter kind names");
}

// The fixed counter that counts source (profile_sources' intel_fixed), or -1.
static int fixed_of(unsigned s)
{
    return profile_source((KPROFILE_SOURCE)s)->intel_fixed;
}

// Emon: a PMC source is supported on the GP counters iff its EBX bit is <
// EAX[31:24] and clear (reference cycles never: their GP event is the crystal
// clock), and on its fixed counter whenever that exists, whatever EBX says.
static void check_gating(void)
{
    tap_section("Emon gating: every EBX combination x EBX length 0..8");
    struct model_config m = MODEL_INTEL_KVM_V2;
    m.name = "gating";
    m.ncpus = 1;
    for (unsigned len = 0; len <= 8; len++) {
        unsigned mismatches = 0, checked = 0;
        for (uint32_t ebx = 0; ebx < 128; ebx++) {
            m.ebx_length = len;
            m.ebx = ebx;
            boot(&m);
            for (unsigned s = 1; s < ProfileSourceCount; s++) {
                int bit = emon_bit(s);
                bool gp = bit >= 0 && (unsigned)bit < len && !(ebx & (1u << bit)) &&
                          s != ProfileUnhaltedReferenceCycles;
                bool want = gp || fixed_of(s) >= 0; // kvm-v2 has FIXED_CTR0-2
                bool got = supported((KPROFILE_SOURCE)s);
                checked++;
                if (got != want && mismatches++ < 3)
                    tap_diag("len %u ebx 0x%02x: %s supported=%d, want %d", len, ebx, src(s), got,
                             want);
            }
            if (!supported(ProfileTime))
                mismatches++;
        }
        tap_ok(mismatches == 0 && checked == 128 * 31,
               "EBX length %u: support of all 31 PMC sources for all 128 EBX values", len);
    }

    struct hal_profile_source_details d;
    m.ebx_length = 6;
    m.ebx = 1u << 5;
    boot(&m);
    HalQueryProfileSource(ProfileBranchInstructionRetired, &d);
    tap_contains(d.reason, "EBX bit 5 set", "reason names the set EBX bit");
    finish("gating");
    m.ebx_length = 4;
    m.ebx = 1u << 1;
    boot(&m);
    tap_ok(supported(ProfileInstructionRetired),
           "EBX bit 1 set: instructions still supported, on FIXED_CTR0");
    HalQueryProfileSource(ProfileLLCMisses, &d);
    tap_contains(d.reason, "EBX bit 4 beyond EAX[31:24] = 4", "reason names the EBX length");
    HalQueryProfileSource(ProfileDcacheMisses, &d);
    tap_contains(d.reason, "no architectural event", "reason for a source without an event");
    tap_ok(supported(ProfileLLCReference), "bit 3 < length 4 and clear: LLCReference supported");
    finish("gating");
}

void test_source(void)
{
    check_table();
    check_gating();
}
