// Detection and the interface choice: the boot line for each machine, the
// no-PMU machines (QEMU TCG), and allocation failure.
#include <string.h>
#include "tests.h"

static unsigned lines_in(const char *s)
{
    unsigned n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void check_boot_lines(void)
{
    tap_section("boot line per machine");
    static const struct {
        const struct model_config *m;
        const char *line;
    } want[] = {
        {&MODEL_INTEL_V1, "pmc: interface emon: version 1, 2 GP counters x 40 bits"},
        {&MODEL_INTEL_KVM_V2, "pmc: interface emon: version 2, 8 GP counters x 48 bits "
                              "(full-width writes), 3 fixed x 48 bits, hypervisor KVMKVMKVM"},
        {&MODEL_INTEL_V4,
         "pmc: interface emon: version 4, 4 GP counters x 48 bits, 3 fixed x 48 bits"},
        {&MODEL_INTEL_V5, "pmc: interface emon: version 5, 8 GP counters x 48 bits "
                          "(full-width writes), 3 fixed x 48 bits"},
        {&MODEL_AMD_LEGACY, "pmc: interface amd64: family 10h, 4 counters x 48 bits (legacy)"},
        {&MODEL_AMD_EXT, "pmc: interface amd64: family 15h, 6 counters x 48 bits (PerfCtrExtCore)"},
        {&MODEL_AMD_V2, "pmc: interface amd64: family 19h, 6 counters x 48 bits (PerfCtrExtCore, "
                        "PerfMonV2), "
                        "hypervisor KVMKVMKVM"},
        {&MODEL_TCG_INTEL, "pmc: interface none: CPUID.0AH version 0, hypervisor TCGTCGTCGTCG"},
        {&MODEL_TCG_AMD,
         "pmc: interface none: K7_PERF_CTR0 ignores writes, hypervisor TCGTCGTCGTCG"},
        {&MODEL_VIA, "pmc: interface none: vendor CentaurHauls has no supported PMU"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        boot(want[i].m);
        tap_eq(lines_in(model_console()), 1, "%s: pmc_init prints exactly one line",
               want[i].m->name);
        tap_streq(console_last_line(), want[i].line, "%s: boot line", want[i].m->name);
        finish(want[i].m->name);
    }

    // CPUID advertises a PMU whose MSRs do nothing (a hypervisor with the vPMU off).
    struct model_config dead = MODEL_INTEL_KVM_V2;
    dead.name = "kvm-dead-pmu";
    dead.pmu_ignored = true;
    boot(&dead);
    tap_streq(console_last_line(),
              "pmc: interface none: IA32_PMC0 ignores writes, hypervisor KVMKVMKVM",
              "CPUID says version 2 but PMC0 reads back 0: interface none");
    finish(dead.name);
}

static void check_decoding(void)
{
    tap_section("CPUID decoding");
    boot(&MODEL_INTEL_KVM_V2);
    const struct pmc_caps *c = &pmc_caps;
    tap_ok(c->vendor == PMC_VENDOR_INTEL && strcmp(c->vendor_id, "GenuineIntel") == 0,
           "kvm-v2: vendor");
    tap_ok(c->hypervisor && strcmp(c->hypervisor_id, "KVMKVMKVM") == 0,
           "kvm-v2: hypervisor bit and signature (trailing NULs dropped)");
    tap_ok(c->version == 2 && c->gp_counters == 8 && c->gp_width == 48 && c->ebx_length == 8,
           "kvm-v2: CPUID.0AH EAX decoded");
    tap_ok(c->fixed_counters == 3 && c->fixed_width == 48 && c->fixed_present == 7,
           "kvm-v2: CPUID.0AH EDX decoded");
    tap_ok(c->pdcm && c->full_width && (c->perf_capabilities & (1u << 13)),
           "kvm-v2: PDCM -> IA32_PERF_CAPABILITIES bit 13 -> full-width writes");
    tap_ok(c->msrs_respond, "kvm-v2: presence check passed");
    tap_eq(pmc_ncounters, 11, "kvm-v2: 8 GP + 3 fixed counters described");
    tap_eq(pmc_hw[0].ctr_msr, 0x4C1, "kvm-v2: GP counters written through IA32_A_PMC0");
    tap_eq(pmc_hw[0].max_period, (1ull << 47) - 1, "kvm-v2: full-width max period 2^47-1");
    finish("kvm-v2 decoding");

    boot(&MODEL_INTEL_V4);
    tap_ok(pmc_caps.pdcm && !pmc_caps.full_width, "v4: PDCM without full-width writes");
    tap_eq(pmc_hw[0].ctr_msr, 0xC1, "v4: GP counters written through legacy IA32_PMC0");
    tap_eq(pmc_hw[0].max_period, 0x7FFFFFFF, "v4: legacy writes limit periods to 2^31-1");
    finish("v4 decoding");

    boot(&MODEL_INTEL_V5);
    tap_eq(pmc_caps.fixed_present, 0xF, "v5: fixed counters from EDX[4:0] and the ECX bitmap");
    unsigned fixed = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        fixed += pmc_hw[i].kind == PMC_COUNTER_FIXED;
    tap_eq(fixed, 3, "v5: fixed counters 0-2 used (3, topdown slots, is not)");
    finish("v5 decoding");

    boot(&MODEL_INTEL_V1);
    tap_ok(pmc_caps.version == 1 && pmc_caps.fixed_counters == 0 && !pmc_caps.pdcm,
           "v1: no fixed counters, no PDCM");
    tap_eq(pmc_hw[1].mask, (1ull << 40) - 1, "v1: 40-bit counters");
    finish("v1 decoding");

    boot(&MODEL_AMD_V2);
    tap_ok(pmc_caps.vendor == PMC_VENDOR_AMD && pmc_caps.amd_perfctr_core &&
               pmc_caps.amd_perfmon_v2 && pmc_caps.amd_counters == 6,
           "amd-v2: PerfCtrExtCore, PerfMonV2, 6 counters");
    tap_eq(pmc_hw[5].ctl_msr, 0xC001020A, "amd-v2: counter 5 control at 0xC0010200 + 2*5");
    tap_eq(pmc_hw[5].ctr_msr, 0xC001020B, "amd-v2: counter 5 at 0xC0010201 + 2*5");
    finish("amd-v2 decoding");

    boot(&MODEL_AMD_LEGACY);
    tap_eq(pmc_hw[3].ctr_msr, 0xC0010007, "amd-legacy: PERF_CTR3 at 0xC0010007");
    finish("amd-legacy decoding");
}

// Under TCG only ProfileTime works, and every PMC source says why not.
static void check_no_pmu(const struct model_config *m, const char *reason)
{
    boot(m);
    unsigned wrong = 0;
    for (unsigned s = 1; s < ProfileSourceCount; s++) {
        struct hal_profile_source_details d;
        HalQueryProfileSource((KPROFILE_SOURCE)s, &d);
        if (d.supported || strcmp(d.reason, reason) != 0 || supported((KPROFILE_SOURCE)s))
            wrong++;
    }
    tap_eq(wrong, 0, "%s: all 31 PMC sources unsupported with reason \"%s\"", m->name, reason);
    tap_ok(supported(ProfileTime), "%s: ProfileTime supported", m->name);
    const char *why = NULL;
    NTSTATUS st = HalStartProfileInterrupt(ProfileLLCMisses, &why);
    tap_ok(st == STATUS_NOT_SUPPORTED && why && strcmp(why, reason) == 0,
           "%s: starting a PMC source fails with STATUS_NOT_SUPPORTED and the reason", m->name);
    start_ok(ProfileTime);
    stop_ok(ProfileTime);
    tap_eq(model_lvtpc(0), 0x10000, "%s: LVTPC left masked (never programmed)", m->name);
    model_raise_pmi(1, 0x1234);
    struct pmc_pmi_stats ps;
    pmc_pmi_stats(1, &ps);
    tap_ok(ps.pmis == 1 && ps.spurious == 1 && samples.total == 0,
           "%s: a PMI vector sent by IPI is counted as spurious", m->name);
    finish(m->name);
}

static void check_alloc_failure(void)
{
    tap_section("allocation failure");
    model_reset(&MODEL_INTEL_KVM_V2);
    model_fail_alloc_after(0);
    pmc_init();
    tap_streq(console_last_line(),
              "pmc: interface none: emon counter state allocation failed (5632 bytes), hypervisor "
              "KVMKVMKVM",
              "boot line when 11 counters x 64 CPUs x 8 bytes cannot be allocated");
    unsigned wrong = 0;
    for (unsigned s = 1; s < ProfileSourceCount; s++) {
        struct hal_profile_source_details d;
        HalQueryProfileSource((KPROFILE_SOURCE)s, &d);
        wrong += d.supported || strcmp(d.reason, "counter state allocation failed") != 0;
    }
    tap_eq(wrong, 0, "allocation failure: every PMC source unsupported (as Emon)");
    tap_ok(supported(ProfileTime), "allocation failure: ProfileTime still supported");
    STATUS_EQ(HalStartProfileInterrupt(ProfileInstructionRetired, NULL), STATUS_NOT_SUPPORTED,
              "allocation failure: start of a PMC source refused");
    finish("allocation failure");

    // The AMD interface too.
    model_reset(&MODEL_AMD_LEGACY);
    model_fail_alloc_after(0);
    pmc_init();
    tap_streq(console_last_line(),
              "pmc: interface none: amd64 counter state allocation failed (2048 bytes)",
              "amd-legacy: boot line when 4 counters x 64 CPUs x 8 bytes cannot be allocated");
    tap_ok(!supported(ProfileTotalCycles),
           "amd-legacy allocation failure: ProfileTotalCycles unsupported");
    finish("amd allocation failure");
}

void test_detect(void)
{
    check_boot_lines();
    check_decoding();
    tap_section("no PMU");
    check_no_pmu(&MODEL_TCG_INTEL, "no PMU: CPUID.0AH version 0");
    check_no_pmu(&MODEL_TCG_AMD, "no PMU: K7_PERF_CTR0 ignores writes");
    check_alloc_failure();
}
