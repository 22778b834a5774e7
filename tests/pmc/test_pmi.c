// The PMI handler against the model: exact periods over thousands of
// overflows, several sources at once, spurious PMIs, the LVTPC mask, storms,
// a stuck status, and PMIs lost while the LVTPC was masked. What a hypervisor
// changes (handler time, late PMIs, faulting MSRs) is in test_hyper.c.
#include <string.h>
#include "arch/x86/lapic.h"
#include "pmc/hal/pmu_regs.h"
#include "tests.h"
#include "../xorshift.h"

#define IP_BASE 0xFFFFFFFF80100000ull

// A small deterministic generator for chunk sizes.
static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    return xorshift64(&rng);
}

static uint64_t lvtpc_left_masked(void)
{
    uint64_t n = 0;
    for (unsigned cpu = 0; cpu < model_config()->ncpus; cpu++)
        n += model_lvtpc_masked_after_pmi(cpu);
    return n;
}

static uint64_t pmis(void)
{
    uint64_t n = 0;
    for (unsigned cpu = 0; cpu < model_config()->ncpus; cpu++)
        n += model_pmis_delivered(cpu);
    return n;
}

// Retire exactly `periods` periods of ev on every CPU in random chunks, 1 ns per
// event, and expect exactly that many samples per CPU: a single event lost or
// double-counted at any of the re-arms changes the count.
static void exactness(const struct model_config *m, KPROFILE_SOURCE s, enum model_event ev,
                      uint64_t period, uint64_t periods)
{
    uint64_t total = period * periods;
    boot(m);
    set_interval(s, period);
    start_ok(s);
    unsigned ncpu = m->ncpus, wrong_ip = 0;
    for (unsigned cpu = 0; cpu < ncpu; cpu++) {
        uint64_t left = total;
        while (left) {
            uint64_t chunk = 1 + next_rand() % (3 * period);
            if (chunk > left)
                chunk = left;
            uint64_t before = samples.count[cpu][s];
            uint64_t ip = IP_BASE + (next_rand() & 0xFFFF);
            model_retire(cpu, ev, chunk, ip, (chunk & 1) != 0);
            model_advance_time(chunk);
            left -= chunk;
            if (samples.count[cpu][s] != before && samples.last_ip != ip)
                wrong_ip++;
        }
        if (m->skid) // let the last overflow's PMI arrive (fewer than a period)
            model_retire(cpu, ev, m->skid, IP_BASE, false);
    }
    unsigned exact = 0;
    for (unsigned cpu = 0; cpu < ncpu; cpu++)
        exact += samples.count[cpu][s] == total / period;
    tap_ok(exact == ncpu,
           "%s%s: %s period %lu: samples == events / period (%lu) on all %u CPUs, "
           "over %lu overflows",
           m->name, m->skid ? " with skid" : "", src(s), (unsigned long)period,
           (unsigned long)(total / period), ncpu, (unsigned long)(ncpu * (total / period)));
    if (exact != ncpu)
        tap_diag("cpu0 got %lu", (unsigned long)samples.count[0][s]);
    tap_eq(wrong_ip, 0, "%s: every sample carries the IP of the retiring chunk", m->name);
    tap_ok(pmis() >= total / period && lvtpc_left_masked() == 0,
           "%s: LVTPC unmasked after every one of %lu PMIs", m->name, (unsigned long)pmis());
    finish(m->name);
}

static void check_exactness(void)
{
    tap_section("period exactness");
    exactness(&MODEL_INTEL_V1, ProfileLLCMisses, EV_LLC_MISSES, 100003, 3000);
    exactness(&MODEL_INTEL_KVM_V2, ProfileInstructionRetired, EV_INSTRUCTIONS, 100003, 2000);
    exactness(&MODEL_INTEL_KVM_V2, ProfileBranchMispredictsRetired, EV_BRANCH_MISSES, 99991, 2000);
    exactness(&MODEL_INTEL_V4, ProfileUnhaltedCoreCycles, EV_CORE_CYCLES, 250007, 2000);
    exactness(&MODEL_INTEL_V5, ProfileUnhaltedReferenceCycles, EV_REF_CYCLES, 100003, 2000);
    exactness(&MODEL_AMD_LEGACY, ProfileTotalCycles, EV_CORE_CYCLES, 100003, 3000);
    exactness(&MODEL_AMD_EXT, ProfileLLCReference, EV_LLC_REFS, 100003, 3000);
    exactness(&MODEL_AMD_V2, ProfileBranchInstructionRetired, EV_BRANCHES, 100003, 2000);

    // The PMI arrives 37 events after the overflow: re-arming charges them to
    // the next period, so the count stays exact.
    struct model_config skid = MODEL_INTEL_KVM_V2;
    skid.skid = 37;
    exactness(&skid, ProfileLLCReference, EV_LLC_REFS, 100003, 2000);
    skid = MODEL_AMD_LEGACY;
    skid.skid = 1000;
    exactness(&skid, ProfileInstructionRetired, EV_INSTRUCTIONS, 100003, 2000);
    skid = MODEL_INTEL_V1;
    skid.skid = 5;
    exactness(&skid, ProfileTotalIssues, EV_INSTRUCTIONS, 100003, 2000);
}

static void check_several(const struct model_config *m)
{
    static const struct {
        KPROFILE_SOURCE s;
        enum model_event ev;
        uint64_t period;
    } run[] = {
        {ProfileLLCMisses, EV_LLC_MISSES, 10007},
        {ProfileInstructionRetired, EV_INSTRUCTIONS, 100003},
        {ProfileBranchMispredictsRetired, EV_BRANCH_MISSES, 5003},
        {ProfileTotalCycles, EV_CORE_CYCLES, 200003},
    };
    const size_t n = sizeof(run) / sizeof(run[0]);
    boot(m);
    for (size_t i = 0; i < n; i++) {
        set_interval(run[i].s, run[i].period);
        start_ok(run[i].s);
    }
    uint64_t totals[4] = {0};
    for (unsigned round = 0; round < 4000; round++) {
        size_t i = next_rand() % n;
        uint64_t chunk = 1 + next_rand() % (run[i].period / 2);
        unsigned cpu = (unsigned)(next_rand() % m->ncpus);
        model_retire(cpu, run[i].ev, chunk, IP_BASE + i, false);
        model_advance_time(100000);
        if (cpu == 0)
            totals[i] += chunk;
    }
    unsigned exact = 0;
    for (size_t i = 0; i < n; i++)
        exact += samples.count[0][run[i].s] == totals[i] / run[i].period;
    tap_eq(exact, n, "%s: four sources at once, each exact on its own counter", m->name);
    uint64_t all = 0;
    for (unsigned s = 0; s < ProfileSourceCount; s++)
        for (unsigned cpu = 0; cpu < m->ncpus; cpu++)
            all += samples.count[cpu][s];
    tap_eq(all, samples.total, "%s: no sample attributed to a source that was not running",
           m->name);
    finish(m->name);
}

static void check_spurious(const struct model_config *m)
{
    boot(m);
    start_ok(ProfileLLCMisses);
    model_retire(0, EV_LLC_MISSES, 999, IP_BASE, false); // counting, not overflowed
    model_raise_pmi(0, IP_BASE);
    model_raise_pmi(0, IP_BASE);
    struct pmc_pmi_stats st;
    pmc_pmi_stats(0, &st);
    tap_ok(st.pmis == 2 && st.spurious == 2 && samples.total == 0,
           "%s: PMIs with nothing overflowed are counted as spurious and report no sample",
           m->name);
    tap_eq(model_lvtpc(0), 0xE1, "%s: LVTPC unmasked after a spurious PMI", m->name);
    uint64_t want =
        (0 - 1000000ull + 999) & ((1ull << (m->vendor == MODEL_AMD ? 48 : m->gp_width)) - 1);
    tap_eq(model_gp_ctr(0, 0), want, "%s: a spurious PMI leaves the running counter alone",
           m->name);
    model_retire(0, EV_LLC_MISSES, 1000000 - 999, IP_BASE + 8, true);
    tap_ok(samples.count[0][ProfileLLCMisses] == 1 && samples.last_ip == IP_BASE + 8 &&
               samples.user == 1,
           "%s: the next real overflow is sampled (IP, user mode)", m->name);
    finish(m->name);
}

static void check_lvtpc_intel_vs_amd(void)
{
    tap_section("LVTPC mask on delivery");
    boot(&MODEL_INTEL_KVM_V2);
    set_interval(ProfileLLCMisses, 1000);
    start_ok(ProfileLLCMisses);
    for (unsigned i = 0; i < 50; i++) {
        model_retire(1, EV_LLC_MISSES, 1000, IP_BASE, false);
        model_advance_time(1000000);
    }
    tap_ok(model_pmis_delivered(1) == 50 && model_lvtpc_masked_after_pmi(1) == 0 &&
               model_pmis_lost(1) == 0 && samples.count[1][ProfileLLCMisses] == 50,
           "intel: 50 PMIs, each leaves the self-masked LVTPC unmasked, none lost");
    finish("intel lvtpc");
}

// An interrupt storm at one instant (no time passes but the handler's own):
// the sample cap and the time budget stop it without stopping the counter,
// the skipped periods are reported, and sampling resumes.
static void check_storm(const struct model_config *m)
{
    boot(m);
    tap_eq(set_interval(ProfileBranchInstructionRetired, 2), 1000,
           "%s: period 2 is raised to the 1,000-event floor", m->name);
    start_ok(ProfileBranchInstructionRetired);
    model_retire(0, EV_BRANCHES, 100000000, IP_BASE, false); // 100,000 periods at once
    struct pmc_pmi_stats st;
    pmc_pmi_stats(0, &st);
    uint64_t got = samples.count[0][ProfileBranchInstructionRetired];
    tap_ok(got > 0 && got <= 1001 && st.squeezed == 1,
           "%s: 100,000 periods at one instant: %lu samples, within one window's cap of 1,000",
           m->name, (unsigned long)got);
    tap_ok(st.handler_ns <= 2500000 + 2 * (st.handler_ns / (st.pmis ? st.pmis : 1)),
           "%s: handler time %lu ns within the window's 2.5 ms budget", m->name,
           (unsigned long)st.handler_ns);
    tap_ok(got + st.throttled + st.lost <= 100000 && got + st.throttled + st.lost >= 100000 - 65536,
           "%s: samples %lu + throttled %lu + lost %lu account for the 100,000 periods (less "
           "the one stretched arm still counting)",
           m->name, (unsigned long)got, (unsigned long)st.throttled, (unsigned long)st.lost);
    tap_eq(model_gp_ctl(0, 0) & PERFEVTSEL_EN, PERFEVTSEL_EN,
           "%s: the throttled counter keeps counting (EN set)", m->name);
    struct hal_profile_source_details d;
    HalQueryProfileSource(ProfileBranchInstructionRetired, &d);
    tap_ok(d.throttled == st.throttled && d.throttled > 0 && d.started,
           "%s: the query reports %lu throttled periods; still started", m->name,
           (unsigned long)d.throttled);
    model_retire(1, EV_BRANCHES, 100000, IP_BASE, false);
    tap_eq(samples.count[1][ProfileBranchInstructionRetired], 100, "%s: other CPUs keep sampling",
           m->name);
    // A second later, at a sane rate, CPU 0 samples again.
    model_advance_time(1000000000);
    uint64_t before = samples.count[0][ProfileBranchInstructionRetired];
    for (unsigned i = 0; i < 2000; i++) {
        model_retire(0, EV_BRANCHES, 100000, IP_BASE, false);
        model_advance_time(1000000);
    }
    tap_ok(samples.count[0][ProfileBranchInstructionRetired] > before + 100,
           "%s: after the storm, CPU 0 samples again (%lu more)", m->name,
           (unsigned long)(samples.count[0][ProfileBranchInstructionRetired] - before));
    finish(m->name);
}

static void check_stuck(void)
{
    tap_section("stuck overflow status");
    struct model_config m = MODEL_INTEL_KVM_V2;
    m.name = "kvm-v2-sticky-status";
    m.sticky_status = true;
    boot(&m);
    set_interval(ProfileLLCMisses, 1000);
    start_ok(ProfileLLCMisses);
    model_retire(2, EV_LLC_MISSES, 1000, IP_BASE, false);
    struct pmc_pmi_stats st;
    pmc_pmi_stats(2, &st);
    tap_ok(st.stuck == 1 && st.pmis == 1,
           "status that never clears: the PMI gives up after 100 rounds");
    tap_eq(model_gp_ctl(2, 0) & 0x400000, 0, "stuck: the counters on that CPU are stopped");
    tap_eq(model_lvtpc(2), 0xE1, "stuck: LVTPC still unmasked on the way out");
    finish(m.name);
}

// A PMI lost behind a masked LVTPC is not raised again by the counter (it
// would have to wrap all its width). The next PMI of another counter finds the
// overflow, samples it once and counts the periods that went by.
static void check_lost(const struct model_config *m)
{
    boot(m);
    set_interval(ProfileLLCReference, 1000);
    set_interval(ProfileBranchInstructionRetired, 1000);
    start_ok(ProfileLLCReference);
    start_ok(ProfileBranchInstructionRetired);
    model_set_lvtpc(0, 0xE1 | 0x10000); // as if a PMI had left it masked
    model_retire(0, EV_LLC_REFS, 4000 + 250, IP_BASE, false);
    tap_ok(model_pmis_lost(0) == 1 && samples.total == 0,
           "%s: overflow with LVTPC masked: PMI lost", m->name);
    model_set_lvtpc(0, 0xE1);
    model_retire(0, EV_BRANCHES, 1000, IP_BASE + 4, false); // the other counter's PMI
    struct pmc_pmi_stats st;
    pmc_pmi_stats(0, &st);
    tap_ok(samples.count[0][ProfileLLCReference] == 1 &&
               samples.count[0][ProfileBranchInstructionRetired] == 1 && st.lost == 3,
           "%s: the next PMI samples both counters once and counts 3 lost periods (%lu)", m->name,
           (unsigned long)st.lost);
    model_retire(0, EV_LLC_REFS, 749, IP_BASE, false);
    tap_eq(samples.count[0][ProfileLLCReference], 1,
           "%s: re-armed for the rest of the period: 749 events, no sample", m->name);
    model_retire(0, EV_LLC_REFS, 1, IP_BASE, false);
    tap_eq(samples.count[0][ProfileLLCReference], 2, "%s: ... and the 750th completes it", m->name);
    finish(m->name);
}

// pmi=nmi: the LVTPC in NMI delivery mode after every write, PMIs taken while
// the CPU runs with interrupts off (a section the vector PMI can only sample
// after its end), late PMIs delivered with interrupts off, a PMI latched
// during the handler taken after it, and the LVTPC unmasked after each one.
static uint64_t irqoff_ip_samples;
static void irqoff_section(void *arg)
{
    uint64_t before = samples.count[0][ProfileBranchInstructionRetired];
    model_retire(0, EV_BRANCHES, 10 * 1000, IP_BASE + 0x40, false);
    irqoff_ip_samples = samples.count[0][ProfileBranchInstructionRetired] - before;
    (void)arg;
}

static void check_pmi_as_nmi(const struct model_config *m, bool nmi)
{
    pmc_pmi_as_nmi = nmi;
    boot(m);
    set_interval(ProfileBranchInstructionRetired, 1000);
    start_ok(ProfileBranchInstructionRetired);
    tap_ok((model_lvtpc(0) & (7u << 8)) == (nmi ? LVT_DELIVERY_NMI : 0u),
           "%s, pmi=%s: the LVTPC's delivery mode is %s", m->name, nmi ? "nmi" : "vector",
           nmi ? "NMI" : "fixed");
    model_on_cpu(0, irqoff_section, NULL);
    if (nmi)
        tap_ok(irqoff_ip_samples == 10 && samples.last_ip == IP_BASE + 0x40 &&
                   lvtpc_left_masked() == 0,
               "%s, pmi=nmi: 10 periods with interrupts off: 10 samples inside, LVTPC unmasked",
               m->name);
    else
        tap_ok(irqoff_ip_samples == 0 && samples.count[0][ProfileBranchInstructionRetired] == 1,
               "%s, pmi=vector: nothing inside; one PMI after the section (the rest coalesced)",
               m->name);
    finish(m->name);
    pmc_pmi_as_nmi = false;
}

static void late_section(void *arg)
{
    model_retire(0, EV_BRANCHES, 1000, IP_BASE + 0x80, false);
    bool pending = model_pmi_pending(0);
    model_deliver_pending(0, IP_BASE + 0x88); // the next VM entry, interrupts still off
    *(bool *)arg = pending && !model_pmi_pending(0);
}

static void check_pmi_as_nmi_late(void)
{
    struct model_config m = MODEL_INTEL_KVM_V2;
    m.late_pmi = true;
    pmc_pmi_as_nmi = true;
    boot(&m);
    set_interval(ProfileBranchInstructionRetired, 1000);
    start_ok(ProfileBranchInstructionRetired);
    bool taken = false;
    model_on_cpu(0, late_section, &taken);
    tap_ok(taken && samples.count[0][ProfileBranchInstructionRetired] == 1 &&
               samples.last_ip == IP_BASE + 0x88 && lvtpc_left_masked() == 0,
           "%s, pmi=nmi, late PMIs: delivered at the next VM entry with interrupts off", m.name);
    finish(m.name);
    pmc_pmi_as_nmi = false;
}

void test_pmi(void)
{
    check_exactness();
    tap_section("several sources at once");
    check_several(&MODEL_INTEL_KVM_V2);
    check_several(&MODEL_INTEL_V5);
    check_several(&MODEL_AMD_V2);
    tap_section("spurious PMIs");
    check_spurious(&MODEL_INTEL_KVM_V2);
    check_spurious(&MODEL_INTEL_V1);
    check_spurious(&MODEL_AMD_LEGACY);
    check_spurious(&MODEL_AMD_V2);
    check_lvtpc_intel_vs_amd();
    tap_section("storm throttling");
    check_storm(&MODEL_INTEL_KVM_V2);
    check_storm(&MODEL_INTEL_V1);
    check_storm(&MODEL_AMD_LEGACY);
    check_stuck();
    tap_section("lost PMIs");
    check_lost(&MODEL_INTEL_KVM_V2);
    check_lost(&MODEL_INTEL_V1);
    check_lost(&MODEL_AMD_EXT);
    tap_section("the PMI as NMI");
    check_pmi_as_nmi(&MODEL_INTEL_KVM_V2, true);
    check_pmi_as_nmi(&MODEL_INTEL_KVM_V2, false);
    check_pmi_as_nmi(&MODEL_AMD_V2, true);
    check_pmi_as_nmi_late();
}
