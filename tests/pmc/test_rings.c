// User and kernel rings (perf's :u and :k) on the model: the rings a count
// or a sampling source is given reach the USR and OS bits of IA32_PERFEVTSELx
// and AMD's PERF_CTLx (bits 16 and 17: Intel SDM vol. 3B, "Architectural
// Performance Monitoring Version 1"; AMD APM vol. 2, 13.2.1) and the 2-bit
// enable field of IA32_FIXED_CTR_CTRL (1 OS, 2 USR, 3 both: SDM vol. 3B,
// "Fixed-function Performance Counters"), and the model, which counts an
// event only in the rings those bits name, shows the counter counting only
// that ring's events. Then HalProfileSourceCounterInformation: the counters
// each source may use on Intel, AMD legacy, PerfCtrExtCore (family 15h's
// PERF_CTR0-2 events) and a machine without a PMU.
#include <stdio.h>
#include "arch/x86/msr.h"
#include "pmc/hal/counts.h"
#include "tests.h"

#define UIP 0x401000ull           // where user-mode events retire
#define KIP 0xFFFFFFFF80100000ull // where kernel-mode events retire

static const char *ring_name(unsigned rings)
{
    return rings == PMC_RING_USR ? ":u" : rings == PMC_RING_OS ? ":k" : ":uk";
}

struct count_call {
    struct pmc_count *c;
    bool in;
};

static void count_on_cpu(void *arg)
{
    struct count_call *k = arg;
    if (k->in)
        pmc_count_in(k->c, 0);
    else
        pmc_count_out(k->c, 1);
}

// What the counter's control register says about rings: USR and OS of a GP
// counter's event select, the fixed counter's enable field.
static unsigned programmed_rings(unsigned cpu, unsigned row)
{
    const struct pmc_counter_hw *hw = &pmc_hw[row];
    if (hw->kind == PMC_COUNTER_FIXED)
        return (unsigned)(model_fixed_ctrl(cpu) >> (4 * hw->number)) & 3;
    uint64_t ctl = model_gp_ctl(cpu, hw->number);
    return (ctl & PERFEVTSEL_USR ? PMC_RING_USR : 0) | (ctl & PERFEVTSEL_OS ? PMC_RING_OS : 0);
}

// One count of source in rings on cpu 0 while 1000 events retire in ring 3
// and 300 in ring 0.
static void count_in_rings(KPROFILE_SOURCE source, enum model_event ev, unsigned rings)
{
    const char *m = model_config()->name, *why = NULL;
    unsigned row = 0;
    NTSTATUS st = pmc_row_reserve(source, PMC_ROW_THREAD, &row, &why);
    if (!STATUS_EQ(st, STATUS_SUCCESS, "%s: a row for %s", m, src(source)))
        return;
    struct pmc_count c;
    pmc_count_init(&c, source, row, false);
    c.rings = (uint8_t)rings;
    struct count_call k = {&c, true};
    model_on_cpu(0, count_on_cpu, &k);
    tap_eq(programmed_rings(0, row), rings, "%s: %s%s on %s %u: its rings programmed", m,
           src(source), ring_name(rings),
           pmc_hw[row].kind == PMC_COUNTER_FIXED ? "fixed counter" : "GP counter",
           pmc_hw[row].number);
    model_retire(0, ev, 1000, UIP, true);
    model_retire(0, ev, 300, KIP, false);
    k.in = false;
    model_on_cpu(0, count_on_cpu, &k);
    uint64_t want = (rings & PMC_RING_USR ? 1000 : 0) + (rings & PMC_RING_OS ? 300 : 0);
    tap_eq(c.value, want, "%s: %s%s counts %llu of 1000 ring-3 and 300 ring-0 events", m,
           src(source), ring_name(rings), (unsigned long long)want);
    pmc_row_release(row);
}

static void counting_rings(const struct model_config *cfg)
{
    boot(cfg);
    static const unsigned each[] = {PMC_RING_USR, PMC_RING_OS, PMC_RINGS_ALL};
    for (size_t i = 0; i < 3; i++) {
        count_in_rings(ProfileBranchInstructionRetired, EV_BRANCHES, each[i]);
        count_in_rings(ProfileInstructionRetired, EV_INSTRUCTIONS, each[i]); // Intel: FIXED_CTR0
    }
    finish(cfg->name);
}

// A sampling source started for ring 0 only: its counter's control says so,
// ring-3 events never reach the period, ring-0 ones sample; a user wanting
// another ring is refused while it runs, one wanting the same is counted.
static void sampling_rings(const struct model_config *cfg, KPROFILE_SOURCE s, enum model_event ev,
                           unsigned rings)
{
    const char *m = cfg->name, *why = NULL;
    boot(cfg);
    set_interval(s, 1000);
    STATUS_EQ(HalStartProfileInterruptEx(s, rings, &why), STATUS_SUCCESS, "%s: %s%s starts", m,
              src(s), ring_name(rings));
    int i = pmc_counter_find(0, s);
    tap_ok(i >= 0 && programmed_rings(0, (unsigned)i) == rings &&
               ALL_CPUS(programmed_rings(cpu, (unsigned)pmc_counter_find(cpu, s)) == rings),
           "%s: %s%s: every CPU's counter counts in those rings only", m, src(s), ring_name(rings));
    bool user = rings == PMC_RING_USR;
    model_retire(0, ev, 10000, user ? KIP : UIP, !user);
    tap_eq(samples.count[0][s], 0, "%s: %s%s: 10,000 events of the other ring, no sample", m,
           src(s), ring_name(rings));
    model_retire(0, ev, 10000, user ? UIP : KIP, user);
    tap_eq(samples.count[0][s], 10, "%s: %s%s: 10,000 of its ring, 10 samples", m, src(s),
           ring_name(rings));
    unsigned other = rings ^ PMC_RINGS_ALL;
    STATUS_EQ(HalStartProfileInterruptEx(s, other, &why), STATUS_PMC_RING_CONFLICT,
              "%s: %s%s while %s runs: refused", m, src(s), ring_name(other), ring_name(rings));
    STATUS_EQ(HalStartProfileInterrupt(s, NULL), STATUS_PMC_RING_CONFLICT,
              "%s: an NT profile (both rings) while it runs: refused", m);
    STATUS_EQ(HalStartProfileInterruptEx(s, rings, NULL), STATUS_SUCCESS,
              "%s: a second user of the same rings", m);
    STATUS_EQ(HalStartProfileInterruptEx(ProfileTime, PMC_RING_USR, NULL), STATUS_SUCCESS,
              "%s: ProfileTime (the timer) takes any rings", m);
    STATUS_EQ(HalStartProfileInterruptEx(s, 0, NULL), STATUS_INVALID_PARAMETER,
              "%s: no ring at all: invalid", m);
    stop_ok(ProfileTime);
    stop_ok(s);
    stop_ok(s);
    finish(m);
}

// ---- which counters each source may use ----

static HAL_PROFILE_SOURCE_COUNTERS counters_of(KPROFILE_SOURCE s)
{
    HAL_PROFILE_SOURCE_COUNTERS q = {.ProfileSource = s};
    uint32_t got = 0;
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceCounterInformation, sizeof q, &q, &got),
              STATUS_SUCCESS, "%s: counters of %s", model_config()->name, src(s));
    return q;
}

static void expect_counters(KPROFILE_SOURCE s, uint32_t gp, uint32_t fixed, uint32_t constraints)
{
    HAL_PROFILE_SOURCE_COUNTERS q = counters_of(s);
    tap_ok(q.GeneralMask == gp && q.FixedMask == fixed && q.Constraints == constraints,
           "%s: %s: GP %#x fixed %#x constraints %#x (want %#x %#x %#x)", model_config()->name,
           src(s), q.GeneralMask, q.FixedMask, q.Constraints, gp, fixed, constraints);
}

static void expect_totals(unsigned gp, unsigned fixed)
{
    HAL_PROFILE_SOURCE_COUNTERS q = counters_of(ProfileTime);
    tap_ok(q.GeneralCount == gp && q.FixedCount == fixed &&
               q.Constraints == PROFILE_COUNTERS_TIMER && !q.GeneralMask && !q.FixedMask,
           "%s: %u GP and %u fixed counters; ProfileTime on the timer, no counter",
           model_config()->name, gp, fixed);
}

static void intel_counters(void)
{
    boot(&MODEL_INTEL_V4); // 4 GP, 3 fixed
    expect_totals(4, 3);
    expect_counters(ProfileInstructionRetired, 0xF, 1u << 0, 0);
    expect_counters(ProfileUnhaltedCoreCycles, 0xF, 1u << 1, 0);
    expect_counters(ProfileUnhaltedReferenceCycles, 0, 1u << 2, PROFILE_COUNTERS_FIXED_ONLY);
    expect_counters(ProfileLLCMisses, 0xF, 0, 0);
    expect_counters(ProfilePipelineDry, 0, 0, 0); // no event: nowhere
    HAL_PROFILE_SOURCE_COUNTERS q = {.ProfileSource = ProfileTime};
    uint32_t got = 0;
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceCounterInformation, sizeof q - 1, &q, &got),
              STATUS_INFO_LENGTH_MISMATCH, "a buffer one byte short");
    tap_eq(got, sizeof q, "the size needed is returned");
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceCounterInformation, sizeof q, NULL, &got),
              STATUS_INVALID_PARAMETER, "no buffer");
    q.ProfileSource = ProfileSourceCount;
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceCounterInformation, sizeof q, &q, &got),
              STATUS_SUCCESS, "an unknown source: no error");
    tap_ok(!q.GeneralMask && !q.FixedMask && !q.Constraints, "an unknown source: no counter");
    finish(MODEL_INTEL_V4.name);
    boot(&MODEL_INTEL_V1); // 2 GP, no fixed counters: no reference cycles at all
    expect_totals(2, 0);
    expect_counters(ProfileInstructionRetired, 0x3, 0, 0);
    expect_counters(ProfileUnhaltedReferenceCycles, 0, 0, 0);
    finish(MODEL_INTEL_V1.name);
}

static void amd_counters(void)
{
    boot(&MODEL_AMD_LEGACY); // family 10h: four PERF_CTRs, every event anywhere
    expect_totals(4, 0);
    expect_counters(ProfileTotalCycles, 0xF, 0, 0);
    expect_counters(ProfileLLCMisses, 0xF, 0, 0);
    expect_counters(ProfileUnhaltedReferenceCycles, 0, 0, 0);
    finish(MODEL_AMD_LEGACY.name);
    boot(&MODEL_AMD_EXT); // family 15h: six, cycles and the L2 events on 0-2 only
    expect_totals(6, 0);
    expect_counters(ProfileInstructionRetired, 0x3F, 0, 0);
    expect_counters(ProfileTotalCycles, 0x7, 0, PROFILE_COUNTERS_GP_SUBSET);
    expect_counters(ProfileLLCReference, 0x7, 0, PROFILE_COUNTERS_GP_SUBSET);
    finish(MODEL_AMD_EXT.name);
    boot(&MODEL_AMD_V2); // family 19h, PerfMonV2: six, no restriction
    expect_totals(6, 0);
    expect_counters(ProfileTotalCycles, 0x3F, 0, 0);
    finish(MODEL_AMD_V2.name);
    boot(&MODEL_TCG_AMD); // no PMU: ProfileTime alone
    expect_totals(0, 0);
    expect_counters(ProfileTotalCycles, 0, 0, 0);
    finish(MODEL_TCG_AMD.name);
}

void test_rings(void)
{
    tap_section("user and kernel rings; the counters of each source");
    counting_rings(&MODEL_INTEL_V4);
    counting_rings(&MODEL_AMD_LEGACY);
    counting_rings(&MODEL_AMD_V2);
    sampling_rings(&MODEL_INTEL_V4, ProfileBranchInstructionRetired, EV_BRANCHES, PMC_RING_OS);
    sampling_rings(&MODEL_INTEL_V4, ProfileInstructionRetired, EV_INSTRUCTIONS, PMC_RING_USR);
    sampling_rings(&MODEL_AMD_EXT, ProfileBranchInstructionRetired, EV_BRANCHES, PMC_RING_USR);
    intel_counters();
    amd_counters();
}
