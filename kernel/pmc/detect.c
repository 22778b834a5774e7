// Detection: vendor, hypervisor, the perfmon CPUID leaves, a presence check,
// and the choice of profile interface (emon, amd64 or none).
#include "pmc/detect.h"
#include "arch/x86/msr.h"
#include "lib/kprintf.h"
#include "lib/string.h"
#include "pmc/hal_interface.h"
#include "pmc/trace.h"

struct pmc_caps pmc_caps;

// Twelve ASCII bytes from three registers, NUL-terminated, trailing NULs dropped.
static void id_string(char out[13], uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t w[3] = {a, b, c};
    for (int i = 0; i < 12; i++)
        out[i] = (char)(w[i / 4] >> (8 * (i % 4)));
    out[12] = '\0';
}

bool pmc_ebx_event_available(const struct pmc_caps *caps, int bit)
{
    if (bit < 0 || (unsigned)bit >= caps->ebx_length || bit >= 32)
        return false;
    return (caps->perfmon.ebx & (1u << bit)) == 0;
}

// Emulators that do not implement the PMU (QEMU TCG) accept the writes and read
// back 0. A small positive pattern survives sign extension and any width.
static bool msrs_respond(uint32_t ctl, uint32_t ctr)
{
    const uint64_t pattern = 0x5A5A;
    pmc_wrmsr(ctl, 0);
    pmc_wrmsr(ctr, pattern);
    bool ok = pmc_rdmsr(ctr) == pattern;
    pmc_wrmsr(ctr, 0);
    return ok;
}

static void choose(struct pmc_caps *c, const struct halp_profile_interface *pi,
                   const char *reason_fmt, ...) __attribute__((format(printf, 3, 4)));
static void choose(struct pmc_caps *c, const struct halp_profile_interface *pi,
                   const char *reason_fmt, ...)
{
    va_list ap;
    va_start(ap, reason_fmt);
    vsnprintf(c->reason, sizeof(c->reason), reason_fmt, ap);
    va_end(ap);
    c->choice = pi;
    if (pi == &nopmu_profile_interface)
        snprintf(nopmu_reason, sizeof(nopmu_reason), "no PMU: %s", c->reason);
}

static void detect_intel(struct pmc_caps *c)
{
    if (c->max_leaf >= CPUID_LEAF_PERFMON)
        c->perfmon = cpuid(CPUID_LEAF_PERFMON, 0);
    uint32_t eax = c->perfmon.eax, edx = c->perfmon.edx;
    c->version = eax & 0xFF;
    c->gp_counters = (eax >> 8) & 0xFF;
    c->gp_width = (eax >> 16) & 0xFF;
    c->ebx_length = eax >> 24;
    if (c->version > 1) {
        c->fixed_counters = edx & 0x1F;
        c->fixed_width = (edx >> 5) & 0xFF;
        c->fixed_present = c->fixed_counters >= 32 ? ~0u : (1u << c->fixed_counters) - 1;
        if (c->version >= 5)
            c->fixed_present |= c->perfmon.ecx;
    }
    if (c->pdcm) {
        c->perf_capabilities = pmc_rdmsr(MSR_IA32_PERF_CAPABILITIES);
        c->full_width = (c->perf_capabilities & PERF_CAPABILITIES_FW_WRITE) != 0;
    }

    if (c->version == 0) {
        choose(c, &nopmu_profile_interface, "CPUID.0AH version 0");
        return;
    }
    if (c->gp_counters == 0 || c->gp_width < 32) {
        choose(c, &nopmu_profile_interface, "CPUID.0AH version %u with %u counters x %u bits",
               c->version, c->gp_counters, c->gp_width);
        return;
    }
    c->msrs_respond = msrs_respond(MSR_IA32_PERFEVTSEL0, MSR_IA32_PMC0);
    if (!c->msrs_respond) {
        choose(c, &nopmu_profile_interface, "IA32_PMC0 ignores writes");
        return;
    }
    unsigned fixed = 0;
    for (unsigned i = 0; i < 3; i++) // instructions, core cycles, reference cycles
        fixed += (c->fixed_present >> i) & 1;
    if (fixed && c->fixed_width)
        choose(c, &emon_profile_interface,
               "version %u, %u GP counters x %u bits%s, %u fixed x %u bits", c->version,
               c->gp_counters, c->gp_width, c->full_width ? " (full-width writes)" : "", fixed,
               c->fixed_width);
    else
        choose(c, &emon_profile_interface, "version %u, %u GP counters x %u bits%s", c->version,
               c->gp_counters, c->gp_width, c->full_width ? " (full-width writes)" : "");
}

static void detect_amd(struct pmc_caps *c)
{
    if (c->max_ext_leaf >= CPUID_LEAF_EXT_FEATURES)
        c->amd_perfctr_core =
            (cpuid(CPUID_LEAF_EXT_FEATURES, 0).ecx & CPUIDX1_ECX_PERFCTR_CORE) != 0;
    unsigned v2_counters = 0;
    if (c->max_ext_leaf >= CPUID_LEAF_AMD_PERFMON) {
        struct cpuid_regs r = cpuid(CPUID_LEAF_AMD_PERFMON, 0);
        c->amd_perfmon_v2 = (r.eax & CPUIDX22_EAX_PERFMON_V2) != 0;
        v2_counters = r.ebx & 0xF;
    }
    c->amd_counters = c->amd_perfctr_core ? 6 : 4;
    if (c->amd_perfctr_core && c->amd_perfmon_v2 && v2_counters)
        c->amd_counters = v2_counters;
    if (c->amd_counters > PMC_MAX_COUNTERS)
        c->amd_counters = PMC_MAX_COUNTERS;

    c->msrs_respond = c->amd_perfctr_core ? msrs_respond(MSR_F15H_PERF_CTL0, MSR_F15H_PERF_CTR0)
                                          : msrs_respond(MSR_K7_PERF_CTL0, MSR_K7_PERF_CTR0);
    if (!c->msrs_respond) {
        choose(c, &nopmu_profile_interface, "%s ignores writes",
               c->amd_perfctr_core ? "F15H_PERF_CTR0" : "K7_PERF_CTR0");
        return;
    }
    choose(c, &amd64_profile_interface, "%u counters x 48 bits (%s%s)", c->amd_counters,
           c->amd_perfctr_core ? "PerfCtrExtCore" : "legacy",
           c->amd_perfmon_v2 ? ", PerfMonV2" : "");
}

void pmc_detect(struct pmc_caps *c)
{
    memset(c, 0, sizeof(*c));
    struct cpuid_regs r = cpuid(0, 0);
    c->max_leaf = r.eax;
    id_string(c->vendor_id, r.ebx, r.edx, r.ecx);
    if (strcmp(c->vendor_id, "GenuineIntel") == 0)
        c->vendor = PMC_VENDOR_INTEL;
    else if (strcmp(c->vendor_id, "AuthenticAMD") == 0 || strcmp(c->vendor_id, "HygonGenuine") == 0)
        c->vendor = PMC_VENDOR_AMD;

    if (c->max_leaf >= 1) {
        r = cpuid(1, 0);
        c->hypervisor = (r.ecx & CPUID1_ECX_HYPERVISOR) != 0;
        c->pdcm = (r.ecx & CPUID1_ECX_PDCM) != 0;
    }
    if (c->hypervisor) {
        r = cpuid(CPUID_LEAF_HYPERVISOR, 0);
        id_string(c->hypervisor_id, r.ebx, r.ecx, r.edx);
    }
    r = cpuid(CPUID_LEAF_EXT_MAX, 0);
    c->max_ext_leaf = r.eax >= CPUID_LEAF_EXT_MAX ? r.eax : 0;

    if (c->vendor == PMC_VENDOR_INTEL)
        detect_intel(c);
    else if (c->vendor == PMC_VENDOR_AMD)
        detect_amd(c);
    else
        choose(c, &nopmu_profile_interface, "vendor %s has no supported PMU", c->vendor_id);
}
