// User and kernel levels (perf's :u and :k) on the model: the levels a count
// or a sampling source is given reach the USR and OS bits of IA32_PERFEVTSELx
// and AMD's PERF_CTLx (bits 16 and 17: Intel SDM vol. 3B, "Architectural
// Performance Monitoring Version 1"; AMD APM vol. 2, 13.2.1) and the 2-bit
// enable field of IA32_FIXED_CTR_CTRL (1 OS, 2 USR, 3 both: SDM vol. 3B,
// "Fixed-function Performance Counters"), and the model, which counts an
// event only in the levels those bits name, shows the counter counting only
// that level's events. Then HalProfileSourceCounterInformation: the counters
// each source may use on Intel, AMD legacy, PerfCtrExtCore (family 15h's
// PERF_CTR0-2 events) and a machine without a PMU.
#include <stdio.h>
#include "arch/x86/msr.h"
#include "pmc/hal/counts.h"
#include "tests.h"

#define UIP 0x401000ull           // where user-mode events retire
#define KIP 0xFFFFFFFF80100000ull // where kernel-mode events retire

static const char *ring_name(unsigned levels)
{
    return levels == PMC_LEVEL_USR ? ":u" : levels == PMC_LEVEL_OS ? ":k" : ":uk";
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

// What the counter's control register says about levels: USR and OS of a GP
// counter's event select, the fixed counter's enable field.
static unsigned programmed_levels(unsigned cpu, unsigned row)
{
    const struct pmc_counter_hw *hw = &pmc_hw[row];
    if (hw->kind == PMC_COUNTER_FIXED)
        return (unsigned)(model_fixed_ctrl(cpu) >> (4 * hw->number)) & 3;
    uint64_t ctl = model_gp_ctl(cpu, hw->number);
    return (ctl & PERFEVTSEL_USR ? PMC_LEVEL_USR : 0) | (ctl & PERFEVTSEL_OS ? PMC_LEVEL_OS : 0);
}

// One count of source in levels on cpu 0 while 1000 events retire in user mode
// and 300 in kernel mode.
static void count_in_levels(KPROFILE_SOURCE source, enum model_event ev, unsigned levels)
{
    const char *m = model_config()->name, *why = NULL;
    unsigned row = 0;
    NTSTATUS st = pmc_row_reserve(source, PMC_ROW_THREAD, &row, &why);
    if (!STATUS_EQ(st, STATUS_SUCCESS, "%s: a row for %s", m, src(source)))
        return;
    struct pmc_count c;
    pmc_count_init(&c, source, row, false);
    c.levels = (uint8_t)levels;
    struct count_call k = {&c, true};
    model_on_cpu(0, count_on_cpu, &k);
    tap_eq(programmed_levels(0, row), levels, "%s: %s%s on %s %u: its levels programmed", m,
           src(source), ring_name(levels),
           pmc_hw[row].kind == PMC_COUNTER_FIXED ? "fixed counter" : "GP counter",
           pmc_hw[row].number);
    model_retire(0, ev, 1000, UIP, true);
    model_retire(0, ev, 300, KIP, false);
    k.in = false;
    model_on_cpu(0, count_on_cpu, &k);
    uint64_t want = (levels & PMC_LEVEL_USR ? 1000 : 0) + (levels & PMC_LEVEL_OS ? 300 : 0);
    tap_eq(c.value, want, "%s: %s%s counts %llu of 1000 user-mode and 300 kernel-mode events", m,
           src(source), ring_name(levels), (unsigned long long)want);
    pmc_row_release(row);
}

static void counting_levels(const struct model_config *cfg)
{
    boot(cfg);
    static const unsigned each[] = {PMC_LEVEL_USR, PMC_LEVEL_OS, PMC_LEVELS_ALL};
    for (size_t i = 0; i < 3; i++) {
        count_in_levels(ProfileBranchInstructionRetired, EV_BRANCHES, each[i]);
        count_in_levels(ProfileInstructionRetired, EV_INSTRUCTIONS, each[i]); // Intel: FIXED_CTR0
    }
    finish(cfg->name);
}

// A sampling source started for kernel mode only: its counter's control says so,
// user-mode events never reach the period, kernel-mode ones sample; a user wanting
// another level widens it to both while it runs, one wanting the same is counted.
static void sampling_levels(const struct model_config *cfg, KPROFILE_SOURCE s, enum model_event ev,
                            unsigned levels)
{
    const char *m = cfg->name, *why = NULL;
    boot(cfg);
    set_interval(s, 1000);
    STATUS_EQ(HalStartProfileInterruptEx(s, levels, &why), STATUS_SUCCESS, "%s: %s%s starts", m,
              src(s), ring_name(levels));
    int i = pmc_counter_find(0, s);
    tap_ok(i >= 0 && programmed_levels(0, (unsigned)i) == levels &&
               ALL_CPUS(programmed_levels(cpu, (unsigned)pmc_counter_find(cpu, s)) == levels),
           "%s: %s%s: every CPU's counter counts in those levels only", m, src(s),
           ring_name(levels));
    bool user = levels == PMC_LEVEL_USR;
    model_retire(0, ev, 10000, user ? KIP : UIP, !user);
    tap_eq(samples.count[0][s], 0, "%s: %s%s: 10,000 events of the other level, no sample", m,
           src(s), ring_name(levels));
    model_retire(0, ev, 10000, user ? UIP : KIP, user);
    tap_eq(samples.count[0][s], 10, "%s: %s%s: 10,000 of its level, 10 samples", m, src(s),
           ring_name(levels));
    // The first user's levels are not held against the next: the source
    // widens to both, on every CPU, and the other level's events sample too.
    unsigned other = levels ^ PMC_LEVELS_ALL;
    STATUS_EQ(HalStartProfileInterruptEx(s, other, &why), STATUS_SUCCESS,
              "%s: %s%s while %s runs: the source widens", m, src(s), ring_name(other),
              ring_name(levels));
    tap_ok(ALL_CPUS(programmed_levels(cpu, (unsigned)pmc_counter_find(cpu, s)) == PMC_LEVELS_ALL),
           "%s: %s: every CPU's counter counts in both levels now", m, src(s));
    model_retire(0, ev, 10000, user ? KIP : UIP, !user);
    tap_eq(samples.count[0][s], 20, "%s: %s: 10,000 events of the other level, 10 more samples", m,
           src(s));
    STATUS_EQ(HalStartProfileInterrupt(s, NULL), STATUS_SUCCESS,
              "%s: an NT profile (both levels) while it runs", m);
    STATUS_EQ(HalStartProfileInterruptEx(s, levels, NULL), STATUS_SUCCESS,
              "%s: a user of the first levels", m);
    STATUS_EQ(HalStartProfileInterruptEx(ProfileTime, PMC_LEVEL_USR, NULL), STATUS_SUCCESS,
              "%s: ProfileTime (the timer) takes any levels", m);
    STATUS_EQ(HalStartProfileInterruptEx(s, 0, NULL), STATUS_INVALID_PARAMETER,
              "%s: no level at all: invalid", m);
    stop_ok(ProfileTime);
    for (unsigned u = 0; u < 4; u++)
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

void test_levels(void)
{
    tap_section("user and kernel levels; the counters of each source");
    counting_levels(&MODEL_INTEL_V4);
    counting_levels(&MODEL_AMD_LEGACY);
    counting_levels(&MODEL_AMD_V2);
    sampling_levels(&MODEL_INTEL_V4, ProfileBranchInstructionRetired, EV_BRANCHES, PMC_LEVEL_OS);
    sampling_levels(&MODEL_INTEL_V4, ProfileInstructionRetired, EV_INSTRUCTIONS, PMC_LEVEL_USR);
    sampling_levels(&MODEL_AMD_EXT, ProfileBranchInstructionRetired, EV_BRANCHES, PMC_LEVEL_USR);
    intel_counters();
    amd_counters();
}
