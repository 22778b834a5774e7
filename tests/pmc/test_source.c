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

// ---- the Intel encodings against Intel's own event tables ----

// tests/fixtures/perfmon/core-events.txt (scripts/perfmon-fixtures.py): rows
// of intel/perfmon's <ARCH>/events/*_core.json. Each architectural event the
// kernel programs on a GP counter must be listed there under its SDM name
// (vol. 3B, "Pre-defined Architectural Performance Events"), on every table
// that lists the encoding at all; each fixed counter must count what the
// profile-source table says.
#define PERFMON_FIXTURE "tests/fixtures/perfmon/core-events.txt"

struct perfmon_row {
    char file[96], name[64], counter[64];
    unsigned code, umask;
};

static const struct {
    unsigned code, umask;
    const char *names; // what the tables call the architectural event, '|'-separated
} arch_names[] = {
    {0x3C, 0x00, "|CPU_CLK_UNHALTED.THREAD_P|CPU_CLK_UNHALTED.CORE_P|"},
    {0xC0, 0x00, "|INST_RETIRED.ANY_P|"},
    {0x2E, 0x4F, "|LONGEST_LAT_CACHE.REFERENCE|L2_REQUESTS.REFERENCE|L2_RQSTS.SELF.DEMAND.MESI|"},
    {0x2E, 0x41, "|LONGEST_LAT_CACHE.MISS|L2_REQUESTS.MISS|L2_RQSTS.SELF.DEMAND.I_STATE|"},
    {0xC4, 0x00, "|BR_INST_RETIRED.ALL_BRANCHES|BR_INST_RETIRED.ANY|"},
    {0xC5, 0x00, "|BR_MISP_RETIRED.ALL_BRANCHES|BR_INST_RETIRED.MISPRED|"},
};

static bool name_in(const char *name, const char *names)
{
    char key[80];
    snprintf(key, sizeof key, "|%s|", name);
    return strstr(names, key) != NULL;
}

static unsigned read_perfmon(struct perfmon_row *rows, unsigned max)
{
    FILE *f = fopen(PERFMON_FIXTURE, "r");
    char line[256];
    unsigned n = 0;
    while (f && n < max && fgets(line, sizeof line, f)) {
        struct perfmon_row *r = &rows[n];
        if (line[0] != '#' && sscanf(line, "%95s %x %x %63s %63s", r->file, &r->code, &r->umask,
                                     r->name, r->counter) == 5)
            n++;
    }
    if (f)
        fclose(f);
    return n;
}

// Tables that list (code, umask) on a GP counter, and those where no such row
// bears one of the architectural names.
static void gp_encoding(const struct perfmon_row *rows, unsigned n, unsigned code, unsigned umask,
                        const char *names, unsigned *tables, unsigned *wrong)
{
    *tables = *wrong = 0;
    for (unsigned i = 0; i < n; i++) {
        if (i > 0 && strcmp(rows[i].file, rows[i - 1].file) == 0)
            continue; // one verdict per table, at its first row
        bool listed = false, named = false;
        for (unsigned j = i; j < n && strcmp(rows[j].file, rows[i].file) == 0; j++) {
            bool here = rows[j].code == code && rows[j].umask == umask &&
                        strncmp(rows[j].counter, "Fixed", 5) != 0;
            listed |= here;
            named |= here && name_in(rows[j].name, names);
        }
        *tables += listed;
        if (listed && !named && (*wrong)++ < 2)
            tap_diag("%s lists %02X/%02X under other names only", rows[i].file, code, umask);
    }
}

static void check_perfmon(void)
{
    tap_section("Intel encodings against intel/perfmon's tables");
    static struct perfmon_row rows[1024];
    unsigned n = read_perfmon(rows, 1024);
    tap_ok(n > 500, "%s: %u rows read", PERFMON_FIXTURE, n);
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        const struct profile_source_desc *d = profile_source((KPROFILE_SOURCE)s);
        if (s == ProfileTime || d->intel_select == 0 || d->intel_fixed_only)
            continue;
        unsigned code = d->intel_select & 0xFF, umask = (d->intel_select >> 8) & 0xFF;
        const char *names = NULL;
        for (size_t k = 0; k < sizeof(arch_names) / sizeof(arch_names[0]); k++)
            if (arch_names[k].code == code && arch_names[k].umask == umask)
                names = arch_names[k].names;
        unsigned tables = 0, wrong = 0;
        if (names)
            gp_encoding(rows, n, code, umask, names, &tables, &wrong);
        tap_ok(names && tables >= 40 && wrong == 0,
               "%s: %02X/%02X is the architectural event in all %u tables that list it", d->name,
               code, umask, tables);
    }
    // 3CH/01H is never FIXED_CTR2's event (CPU_CLK_UNHALTED.REF_TSC): REF_XCLK
    // (crystal), BUS, REF_P, REF, or REF_TSC_P (Golden Cove and later).
    unsigned ref = 0, same = 0;
    for (unsigned i = 0; i < n; i++) {
        if (rows[i].code != 0x3C || rows[i].umask != 0x01)
            continue;
        ref++;
        same += strcmp(rows[i].name, "CPU_CLK_UNHALTED.REF_TSC") == 0;
    }
    tap_ok(ref >= 40 && same == 0,
           "3CH/01H on a GP counter: %u rows, none of them FIXED_CTR2's REF_TSC", ref);
}

// Fixed counter rows: instructions, core cycles, reference cycles at the
// table's fixed counters 0, 1, 2 (counted from 1 in the oldest tables).
static void check_perfmon_fixed(void)
{
    static struct perfmon_row rows[1024];
    unsigned n = read_perfmon(rows, 1024);
    static const char *const fixed_names[3] = {"|INST_RETIRED.ANY|",
                                               "|CPU_CLK_UNHALTED.THREAD|CPU_CLK_UNHALTED.CORE|",
                                               "|CPU_CLK_UNHALTED.REF_TSC|CPU_CLK_UNHALTED.REF|"};
    unsigned checked = 0, wrong = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned num;
        if (sscanf(rows[i].counter, "Fixed_counter_%u", &num) != 1)
            continue;
        bool one_based = false; // INST_RETIRED.ANY on "Fixed counter 1": the oldest tables
        for (unsigned j = 0; j < n; j++)
            one_based |= strcmp(rows[j].file, rows[i].file) == 0 &&
                         strcmp(rows[j].name, "INST_RETIRED.ANY") == 0 &&
                         strcmp(rows[j].counter, "Fixed_counter_1") == 0;
        unsigned f = num - one_based;
        for (unsigned s = 0; f < 3 && s < ProfileSourceCount; s++) {
            if (profile_source((KPROFILE_SOURCE)s)->intel_fixed != (int)f)
                continue;
            checked++;
            bool ok = name_in(rows[i].name, fixed_names[f]) || strstr(rows[i].name, "_ANY") ||
                      strstr(rows[i].name, "PREC_DIST");
            if (!ok && wrong++ < 2)
                tap_diag("%s: fixed counter %u counts %s", rows[i].file, f, rows[i].name);
        }
    }
    tap_ok(checked > 100 && wrong == 0,
           "fixed counters 0-2 count instructions, core cycles, reference cycles in every table "
           "(%u rows)",
           checked);
}

void test_source(void)
{
    check_table();
    check_gating();
    check_perfmon();
    check_perfmon_fixed();
}
