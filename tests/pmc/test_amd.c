// The AMD64 interface's register programming.
#include <stdio.h>
#include <string.h>
#include "tests.h"

#define CTL_SAMPLE 0x00530000ull // USR | OS | INT | EN
#define M48        ((1ull << 48) - 1)

static void check_machine(const struct model_config *m, unsigned counters)
{
    boot(m);
    tap_ok(ALL_CPUS(model_lvtpc(cpu) == 0xE1), "%s: LVTPC = VEC_PMI on every CPU", m->name);
    start_ok(ProfileTotalCycles);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 0) == (CTL_SAMPLE | 0x76)),
           "%s: PERF_CTL0 = 0x00530076 (cycles)", m->name);
    tap_ok(ALL_CPUS(model_gp_ctr(cpu, 0) == ((0 - 1000000ull) & M48)),
           "%s: PERF_CTR0 = -1,000,000 in 48 bits", m->name);
    start_ok(ProfileLLCReference);
    // The model's own table: L2 requests are PMCx07D/0x07 before family 17h,
    // PMCx060/0xFF from it on.
    uint64_t refs = m->family >= 0x17 ? 0xFF60 : 0x077D;
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 1) == (CTL_SAMPLE | refs)),
           "%s: PERF_CTL1 = 0x0053%04llx (cache refs, family %xh)", m->name,
           (unsigned long long)refs, m->family);
    if (m->perfmon_v2)
        tap_ok(ALL_CPUS(model_global_ctrl(cpu) == 0x3), "%s: PerfMonV2 GLOBAL_CTL = CTR0 | CTR1",
               m->name);

    const char *why = NULL;
    STATUS_EQ(HalStartProfileInterrupt(ProfileUnhaltedReferenceCycles, &why), STATUS_NOT_SUPPORTED,
              "%s: no reference-cycles event", m->name);
    tap_streq(why, "no AMD event for this source", "%s: its reason", m->name);

    static const KPROFILE_SOURCE more[] = {ProfileInstructionRetired,
                                           ProfileBranchInstructionRetired,
                                           ProfileBranchMispredictsRetired,
                                           ProfileLLCMisses,
                                           ProfileTotalIssues,
                                           ProfileCacheMisses};
    unsigned ok = 2, no_counter = 0;
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
        NTSTATUS st = HalStartProfileInterrupt(more[i], &why);
        ok += st == STATUS_SUCCESS;
        no_counter += st == STATUS_INSUFFICIENT_RESOURCES && strcmp(why, "no free counter") == 0;
    }
    tap_ok(ok == counters && no_counter == 8 - counters,
           "%s: %u sources start, the rest get \"no free counter\"", m->name, counters);
    tap_eq(set_interval(ProfileLLCMisses, 1ull << 60), (1ull << 47) - 1,
           "%s: 48-bit counters: max 2^47-1", m->name);

    for (unsigned s = 1; s < ProfileSourceCount; s++)
        HalStopProfileInterrupt((KPROFILE_SOURCE)s, NULL);
    tap_ok(ALL_CPUS(({
               bool clear_ = !m->perfmon_v2 || model_global_ctrl(cpu) == 0;
               for (unsigned i = 0; i < counters; i++)
                   clear_ = clear_ && model_gp_ctl(cpu, i) == 0;
               clear_;
           })),
           "%s: all stopped: every PERF_CTL (and GLOBAL_CTL) is 0 on every CPU", m->name);
    finish(m->name);
}

// amd_events_per_family: on each family, every AMD source the kernel offers
// counts the event the model's table (from the BKDG/PPR) gives that family,
// on a counter that can count it; sources the family lacks are refused.
static void amd_events_per_family(void)
{
    tap_section("amd_events_per_family");
    static const struct {
        unsigned family;
        bool ext; // PerfCtrExtCore (six counters)
    } fams[] = {{0x0F, false}, {0x10, false}, {0x15, true}, {0x17, true}, {0x19, true}};
    static const struct {
        KPROFILE_SOURCE s;
        enum model_event ev;
    } run[] = {
        {ProfileTotalCycles, EV_CORE_CYCLES},
        {ProfileLLCReference, EV_LLC_REFS},
        {ProfileInstructionRetired, EV_INSTRUCTIONS},
        {ProfileLLCMisses, EV_LLC_MISSES},
        {ProfileBranchInstructionRetired, EV_BRANCHES},
        {ProfileBranchMispredictsRetired, EV_BRANCH_MISSES},
    };
    const unsigned nrun = sizeof(run) / sizeof(run[0]);
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
        struct model_config m = fams[f].ext ? MODEL_AMD_EXT : MODEL_AMD_LEGACY;
        char name[32];
        snprintf(name, sizeof(name), "amd-family-%xh", fams[f].family);
        m.name = name;
        m.family = fams[f].family;
        boot(&m);
        unsigned started = 0, exact = 0;
        for (unsigned i = 0; i < nrun; i++) {
            set_interval(run[i].s, 1000);
            started += HalStartProfileInterrupt(run[i].s, NULL) == STATUS_SUCCESS;
        }
        for (unsigned i = 0; i < nrun; i++)
            model_retire(0, run[i].ev, 10000, 0x401000, true);
        for (unsigned i = 0; i < nrun; i++)
            exact += samples.count[0][run[i].s] == (pmc_counter_find(0, run[i].s) >= 0 ? 10 : 0);
        unsigned want = fams[f].ext ? 6 : 4;
        tap_ok(started == want && exact == nrun,
               "%s: %u of the six sources start and each counts its own event (%u started, "
               "%u right)",
               name, want, started, exact);
        tap_eq(model_constraint_violations(), 0, "%s: no event on a counter that cannot count it",
               name);
        finish(name);
    }

    // Family 15h: cycles and the L2 events count on PERF_CTR0-2 only. Started
    // after three unrestricted sources, they must still find those counters.
    struct model_config m = MODEL_AMD_EXT;
    m.name = "amd-family-15h-constraints";
    boot(&m);
    start_ok(ProfileInstructionRetired);
    start_ok(ProfileBranchInstructionRetired);
    start_ok(ProfileBranchMispredictsRetired);
    start_ok(ProfileTotalCycles);
    start_ok(ProfileLLCReference);
    start_ok(ProfileLLCMisses);
    tap_eq(model_constraint_violations(), 0,
           "family 15h: unrestricted events leave PERF_CTR0-2 to cycles and the L2 events");
    STATUS_EQ(HalStartProfileInterrupt(ProfileCacheMisses, NULL), STATUS_INSUFFICIENT_RESOURCES,
              "family 15h: a seventh source finds no counter");
    finish(m.name);

    // A family with no known L2 encoding: those sources are refused, with why.
    m = MODEL_AMD_LEGACY;
    m.name = "amd-family-0eh";
    m.family = 0x0E;
    boot(&m);
    struct hal_profile_source_details d;
    HalQueryProfileSource(ProfileLLCMisses, &d);
    tap_ok(!d.supported && strcmp(d.reason, "no L2 cache event known for this AMD family") == 0,
           "unknown family: LLCMisses unsupported, with the reason (\"%s\")", d.reason);
    tap_ok(supported(ProfileTotalCycles), "unknown family: cycles still supported");
    finish(m.name);
}

void test_amd(void)
{
    tap_section("amd64 programming");
    check_machine(&MODEL_AMD_LEGACY, 4);
    check_machine(&MODEL_AMD_EXT, 6);
    check_machine(&MODEL_AMD_V2, 6);
    amd_events_per_family();
}
