// What a hypervisor (or odd firmware) changes, against the model configured to
// behave that way: MSR accesses that cost microseconds, the handler's own
// events, PMIs injected late and coalesced, MSRs that #GP although CPUID
// advertises them, counters firmware left running, reserved bits.
#include <stdio.h>
#include <string.h>
#include "arch/x86/clock.h"
#include "arch/x86/percpu.h"
#include "tests.h"

#define IP        0xFFFFFFFF80100000ull
#define WINDOW_NS PMC_THROTTLE_WINDOW_NS
#define LIMIT_NS  ((uint64_t)PMC_THROTTLE_WINDOW_NS * PMC_PMI_MAX_PERCENT / 100)

// Retire ev at `per_ns` events per nanosecond of the interrupted program's time
// for ms milliseconds of it, in chunks of `chunk` events.
static void run_for(unsigned cpu, enum model_event ev, uint64_t ms, uint64_t chunk, uint64_t per_ns)
{
    for (uint64_t t = 0; t < ms * 1000000; t += chunk / per_ns) {
        model_retire(cpu, ev, chunk, IP, false);
        model_advance_time(chunk / per_ns);
    }
}

// pmi_throttle_bounds_handler_time: KVM-like MSR cost (2 us each) and a source
// at the minimum interval on a busy event: unthrottled, the handler would take
// ~93 % of the CPU. Every 10 ms window must stay within 25 %, and samples must
// keep flowing at the adapted rate.
static void pmi_throttle_bounds_handler_time(void)
{
    tap_section("pmi_throttle_bounds_handler_time");
    struct model_config m = MODEL_INTEL_KVM_V2;
    m.name = "kvm-2us-msr";
    m.handler_insns = 200;
    boot(&m);
    set_interval(ProfileBranchInstructionRetired, 1);
    start_ok(ProfileBranchInstructionRetired);
    model_set_time(0);
    run_for(1, EV_BRANCHES, 200, 1000, 1); // 1 branch/ns for 200 ms of program time
    unsigned windows = 0;
    uint64_t worst = model_max_handler_per_window(1, WINDOW_NS, &windows);
    uint64_t now = clock_ns();
    tap_ok(worst <= LIMIT_NS && windows >= 20,
           "handler time per 10 ms window <= %lu us in all %u windows (worst %lu us)",
           (unsigned long)(LIMIT_NS / 1000), windows, (unsigned long)(worst / 1000));
    tap_diag("kvm-like: handler %lu us of %lu us = %lu %% overall, worst window %lu %%",
             (unsigned long)(model_handler_ns(1) / 1000), (unsigned long)(now / 1000),
             (unsigned long)(model_handler_ns(1) * 100 / now),
             (unsigned long)(worst * 100 / WINDOW_NS));
    struct pmc_pmi_stats st;
    pmc_pmi_stats(1, &st);
    tap_ok(st.shift > 0 && st.squeezed > 0,
           "the rate adapted: periods x%lu, budget ran out %lu times", 1ul << st.shift,
           (unsigned long)st.squeezed);
    // Samples keep flowing: the last 50 ms, windows after adaptation, each get samples.
    uint64_t before = samples.count[1][ProfileBranchInstructionRetired];
    unsigned empty = 0;
    for (unsigned w = 0; w < 5; w++) {
        uint64_t b = samples.count[1][ProfileBranchInstructionRetired];
        run_for(1, EV_BRANCHES, 10, 1000, 1);
        empty += samples.count[1][ProfileBranchInstructionRetired] == b;
    }
    uint64_t late = samples.count[1][ProfileBranchInstructionRetired] - before;
    tap_ok(empty == 0 && late >= 50,
           "samples keep flowing at the adapted rate: %lu in the last 5 windows, none empty",
           (unsigned long)late);
    pmc_pmi_stats(1, &st);
    uint64_t periods = model_counted(1, EV_BRANCHES) / 1000;
    uint64_t seen = st.samples + st.throttled + st.lost;
    tap_ok(seen <= periods && seen + (1ull << (st.shift + PMC_SQUEEZE_MAX_SHIFT)) >= periods,
           "samples %lu + throttled %lu + lost %lu account for the %lu periods counted "
           "(less the arm in progress)",
           (unsigned long)st.samples, (unsigned long)st.throttled, (unsigned long)st.lost,
           (unsigned long)periods);
    struct hal_profile_source_details d;
    HalQueryProfileSource(ProfileBranchInstructionRetired, &d);
    tap_eq(d.throttled, st.throttled, "the source reports the throttled periods");
    static char info[16384];
    pmc_info(info, sizeof(info));
    tap_ok(strstr(info, "cpu1: handler ") && strstr(info, "(limit 25%)") &&
               strstr(info, " throttled "),
           "pmc info reports handler time, the limit and the throttle");
    finish(m.name);

    // Bare metal at the same rate: 0.1 us per access, the handler stays cheap
    // and nothing is throttled.
    m = MODEL_INTEL_V4;
    m.name = "bare-0.1us-msr";
    boot(&m);
    set_interval(ProfileBranchInstructionRetired, 10000);
    start_ok(ProfileBranchInstructionRetired);
    model_set_time(0);
    run_for(0, EV_BRANCHES, 50, 1000, 1);
    pmc_pmi_stats(0, &st);
    tap_ok(st.throttled == 0 && st.samples == model_counted(0, EV_BRANCHES) / 10000,
           "bare metal, period 10,000: every period sampled, none throttled (%lu samples, "
           "handler %lu %% of the time)",
           (unsigned long)st.samples, (unsigned long)(model_handler_ns(0) * 100 / clock_ns()));
    finish(m.name);
}

// detect_survives_msr_gp: CPUID advertises a PMU whose MSRs fault.
static void detect_survives_msr_gp(void)
{
    tap_section("detect_survives_msr_gp");
    static const struct {
        const struct model_config *base;
        const char *line;
    } cases[] = {
        {&MODEL_INTEL_KVM_V2, "pmc: interface none: IA32_PERFEVTSEL0 raises #GP on rdmsr, "
                              "hypervisor KVMKVMKVM"},
        {&MODEL_AMD_V2, "pmc: interface none: F15H_PERF_CTL0 raises #GP on rdmsr, hypervisor "
                        "KVMKVMKVM"},
        {&MODEL_AMD_LEGACY, "pmc: interface none: K7_PERF_CTL0 raises #GP on rdmsr"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char name[40];
        struct model_config m = model_variant(cases[i].base, "msr-gp", name);
        m.pmu_faults = true;
        boot(&m); // a plain rdmsr/wrmsr that faults would be a failed check here
        tap_streq(console_last_line(), cases[i].line, "%s: no-PMU interface with the reason", name);
        tap_ok(model_safe_faults() >= 1, "%s: the #GP was taken by a fault-safe probe", name);
        struct hal_profile_source_details d;
        HalQueryProfileSource(ProfileTotalCycles, &d);
        tap_ok(!d.supported && strstr(d.reason, "raises #GP"),
               "%s: PMC sources unsupported, saying why (\"%s\")", name, d.reason);
        tap_ok(supported(ProfileTime), "%s: ProfileTime still works", name);
        finish(name);
    }
}

// detect_reports_firmware_counters: firmware left counters enabled.
static void detect_reports_firmware_counters(void)
{
    tap_section("detect_reports_firmware_counters");
    struct model_config m = MODEL_INTEL_KVM_V2;
    m.name = "firmware-pmc1";
    m.firmware_gp = 0x2;
    m.firmware_fixed = 0x1;
    boot(&m);
    tap_streq(console_last_line(),
              "pmc: interface emon: version 2, 8 GP counters x 48 bits (full-width writes), 3 "
              "fixed x 48 bits, firmware left IA32_PERFEVTSEL1 = 0x43003c enabled (taken over), "
              "hypervisor KVMKVMKVM",
              "the boot line names the first counter firmware left running");
    tap_eq(pmc_caps.firmware_busy, 0x2 | 1ull << 32, "PMC1 and FIXED0 found enabled");
    static char info[16384];
    pmc_info(info, sizeof(info));
    tap_ok(strstr(info, "firmware left counters enabled: mask 0x100000002") != NULL,
           "pmc info lists them");
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 1) == 0 && model_fixed_ctrl(cpu) == 0),
           "InitializeProfiling took them over on every CPU");
    finish(m.name);

    m = MODEL_AMD_EXT;
    m.name = "firmware-amd";
    m.firmware_gp = 0x8;
    boot(&m);
    tap_ok(strstr(console_last_line(), "firmware left F15H_PERF_CTL3 = 0x430076 enabled") != NULL,
           "amd: the boot line names F15H_PERF_CTL3");
    finish(m.name);

    boot(&MODEL_INTEL_KVM_V2);
    tap_ok(pmc_caps.firmware_busy == 0 && !strstr(console_last_line(), "firmware"),
           "clean firmware: nothing reported");
    finish("firmware-clean");
}

// emon_v1_unmask_before_enable: version 1 has no freeze and no status
// register; the handler's own instructions keep counting. Whatever the skid,
// no re-armed counter may start counting while the LVTPC is masked, and no
// PMI may be lost.
static void emon_v1_unmask_before_enable(void)
{
    tap_section("emon_v1_unmask_before_enable");
    unsigned enabled_masked = 0, lost = 0, stalled = 0, runs = 0;
    for (unsigned skid = 0; skid < 1000; skid += 7) {
        struct model_config m = MODEL_INTEL_V1;
        m.name = "v1-handler-counts";
        m.handler_insns = 150;
        m.skid = skid;
        boot(&m);
        set_interval(ProfileTotalIssues, 1000);
        start_ok(ProfileTotalIssues);
        for (unsigned i = 0; i < 20; i++) {
            model_retire(0, EV_INSTRUCTIONS, 1000, IP, true);
            model_advance_time(100000);
        }
        model_retire(0, EV_INSTRUCTIONS, skid, IP, true); // the last overflow's skid
        enabled_masked += model_enable_while_masked(0);
        lost += (unsigned)model_pmis_lost(0);
        struct pmc_pmi_stats st;
        pmc_pmi_stats(0, &st);
        stalled += samples.count[0][ProfileTotalIssues] + st.lost < 20; // 20,000 + skid retired
        runs++;
        finish(m.name);
    }
    tap_eq(enabled_masked, 0, "v1: no counter enabled while the LVTPC was masked (%u runs)", runs);
    tap_eq(lost, 0, "v1: no PMI lost behind the masked LVTPC");
    tap_eq(stalled, 0,
           "v1: every run kept sampling: samples + lost periods cover the 20 periods retired "
           "(the handler's own instructions add more)");
}

// pmi_late_delivery: PMIs injected at the next VM entry, coalesced.
static void pmi_late_delivery(const struct model_config *base)
{
    char name[40];
    struct model_config m = model_variant(base, "late", name);
    m.late_pmi = true;
    boot(&m);
    set_interval(ProfileLLCMisses, 1000);
    set_interval(ProfileBranchInstructionRetired, 3000);
    start_ok(ProfileLLCMisses);
    start_ok(ProfileBranchInstructionRetired);
    uint64_t misses = 0, branches = 0;
    for (unsigned i = 0; i < 3000; i++) {
        uint64_t n = 1 + (i * 7919) % 2500; // up to 2.5 periods between VM entries
        model_retire(0, EV_LLC_MISSES, n, IP + i, false);
        model_retire(0, EV_BRANCHES, n, IP + i, false);
        misses += n;
        branches += n;
        model_advance_time(1000000);
    }
    model_deliver_pending(0, IP);
    struct pmc_pmi_stats st;
    pmc_pmi_stats(0, &st);
    uint64_t got =
        samples.count[0][ProfileLLCMisses] + samples.count[0][ProfileBranchInstructionRetired];
    uint64_t want = misses / 1000 + branches / 3000;
    tap_ok(got + st.lost == want && st.throttled == 0,
           "%s: samples %lu + lost %lu == %lu periods: none lost, none double-counted", name,
           (unsigned long)got, (unsigned long)st.lost, (unsigned long)want);
    tap_ok(model_pmis_coalesced(0) > 0 && model_pmis_lost(0) == 0,
           "%s: %lu overflows coalesced into pending PMIs, none dropped", name,
           (unsigned long)model_pmis_coalesced(0));
    finish(name);
}

// shutdown_with_pmi_in_flight: PMIs latched on every CPU when pmc_shutdown
// runs arrive during and after it; none may touch freed state (ASan), sample,
// or find its LVTPC unmasked afterwards.
static void shutdown_with_pmi_in_flight(const struct model_config *base)
{
    char name[40];
    struct model_config m = model_variant(base, "shutdown", name);
    m.late_pmi = true;
    boot(&m);
    set_interval(ProfileInstructionRetired, 1000);
    start_ok(ProfileInstructionRetired);
    for (unsigned cpu = 0; cpu < m.ncpus; cpu++)
        model_retire(cpu, EV_INSTRUCTIONS, 1000, IP, false); // latched, not yet delivered
    tap_ok(ALL_CPUS(model_pmi_pending(cpu)), "%s: a PMI is in flight on every CPU", name);
    uint64_t before = samples.total;
    pmc_shutdown();
    for (unsigned cpu = 0; cpu < m.ncpus; cpu++) {
        model_retire(cpu, EV_INSTRUCTIONS, 5000, IP, false);
        model_deliver_pending(cpu, IP);
    }
    tap_eq(samples.total, before, "%s: nothing sampled after shutdown began", name);
    tap_ok(ALL_CPUS(model_lvtpc(cpu) & 0x10000), "%s: every LVTPC masked after shutdown", name);
    uint64_t spurious = 0;
    for (unsigned cpu = 0; cpu < m.ncpus; cpu++) {
        struct pmc_pmi_stats st;
        pmc_pmi_stats(cpu, &st);
        spurious += st.spurious;
    }
    tap_eq(spurious, m.ncpus, "%s: each late PMI was taken as spurious", name);
    tap_eq(model_heap_in_use(), 0, "%s: state freed", name);
    tap_eq(model_gp_faults(), 0, "%s: no #GP", name);
}

// An interval set while a PMI re-arms (here: from the sample callback, inside
// the PMI) changes nothing until the next start.
static KPROFILE_SOURCE retune_source;
static void retune(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    (void)f;
    unsigned cpu = cpu_id();
    HAL_PROFILE_SOURCE_INTERVAL in = {.ProfileSource = retune_source, .Interval = 7777};
    HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in);
    samples.count[cpu][source]++;
}

static void interval_set_during_pmi(void)
{
    tap_section("interval set during a PMI");
    boot(&MODEL_INTEL_KVM_V2);
    retune_source = ProfileLLCMisses;
    set_interval(ProfileLLCMisses, 1000);
    start_ok(ProfileLLCMisses);
    HAL_PROFILE_INTERRUPT_HANDLER h = retune;
    HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof(h), &h);
    model_retire(2, EV_LLC_MISSES, 100000, IP, false);
    tap_eq(samples.count[2][ProfileLLCMisses], 100,
           "the running counter keeps its period; the new interval waits for the next start");
    stop_ok(ProfileLLCMisses);
    start_ok(ProfileLLCMisses);
    tap_eq(model_gp_ctr(0, 0), (0 - 7777ull) & ((1ull << 48) - 1), "... where it applies");
    finish("interval during PMI");
}

// Reserved bits fault as the manuals say (the kernel never sets them).
static void reserved_bits(void)
{
    tap_section("reserved bits #GP");
    model_reset(&MODEL_AMD_EXT);
    tap_ok(!wrmsr_safe(MSR_F15H_PERF_CTL0, PERFEVTSEL_ANY), "amd: AnyThread (bit 21) faults");
    tap_ok(!wrmsr_safe(MSR_F15H_PERF_CTR0, 1ull << 48), "amd: a counter bit beyond 48 faults");
    model_reset(&MODEL_INTEL_KVM_V2);
    tap_ok(!wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, 1ull << 8), "kvm-v2: GLOBAL_CTRL bit 8 faults");
    tap_ok(!wrmsr_safe(MSR_IA32_PERFEVTSEL0, PERFEVTSEL_ANY), "kvm-v2: AnyThread faults");
    tap_ok(!wrmsr_safe(MSR_IA32_PERFEVTSEL0, 1ull << 32), "kvm-v2: event-select bit 32 faults");
    tap_ok(wrmsr_safe(MSR_IA32_PERFEVTSEL0, 0x0053412E), "kvm-v2: a valid select is accepted");
    tap_eq(model_safe_faults(), 3, "kvm-v2: each fault taken by the fault-safe path");
}

void test_hyper(void)
{
    pmi_throttle_bounds_handler_time();
    detect_survives_msr_gp();
    detect_reports_firmware_counters();
    emon_v1_unmask_before_enable();
    tap_section("pmi_late_delivery");
    pmi_late_delivery(&MODEL_INTEL_KVM_V2);
    pmi_late_delivery(&MODEL_INTEL_V1);
    pmi_late_delivery(&MODEL_AMD_V2);
    tap_section("shutdown_with_pmi_in_flight");
    shutdown_with_pmi_in_flight(&MODEL_INTEL_KVM_V2);
    shutdown_with_pmi_in_flight(&MODEL_AMD_LEGACY);
    interval_set_during_pmi();
    reserved_bits();
}
