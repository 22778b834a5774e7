// Detection: vendor, hypervisor, the perfmon CPUID leaves, a presence check,
// and the choice of profile interface (emon, amd64 or none).
#include "pmc/hal/detect.h"

#include "lib/kprintf.h"
#include "lib/string.h"

#include "arch/x86/msr.h"

#include "pmc/hal/hal_interface.h"
#include "pmc/hal/nopmu.h"
#include "pmc/hal/text.h"

struct pmc_caps pmc_caps;

// Twelve ASCII bytes from three registers, NUL-terminated, trailing NULs dropped.
static void id_string(char out[13], uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t w[3] = {a, b, c};
    for (int i = 0; i < 12; i++)
        out[i] = (char)(w[i / 4] >> (8 * (i % 4)));
    out[12] = '\0';
}

// Every probe access is fault-safe: a hypervisor may advertise a PMU in CPUID
// and still raise #GP on its MSRs (Linux's check_hw_exists probes the same way,
// arch/x86/events/core.c). The first fault is remembered for the reason.
static bool probe_done(struct pmc_caps *c, bool ok, uint32_t msr, bool on_write)
{
    if (!ok && c->gp_msr == 0) {
        c->gp_msr = msr;
        c->gp_on_write = on_write;
    }
    return ok;
}

static bool probe_read(struct pmc_caps *c, uint32_t msr, uint64_t *v)
{
    return probe_done(c, rdmsr_safe(msr, v), msr, false);
}

static bool probe_write(struct pmc_caps *c, uint32_t msr, uint64_t v)
{
    return probe_done(c, wrmsr_safe(msr, v), msr, true);
}

static void firmware_busy(struct pmc_caps *c, unsigned bit, uint32_t msr, uint64_t value)
{
    c->firmware_busy |= 1ull << bit;
    if (c->firmware_msr == 0) {
        c->firmware_msr = msr;
        c->firmware_value = value;
    }
}

// Firmware may leave counters running (for its own use, or by mistake). The
// kernel takes them over at InitializeProfiling, as Linux does, but says so
// instead of overwriting them silently. Reads only; false on a #GP.
static bool firmware_check(struct pmc_caps *c, uint32_t ctl0, unsigned stride, unsigned n,
                           bool fixed)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t v;
        if (!probe_read(c, ctl0 + stride * i, &v))
            return false;
        if (v & PERFEVTSEL_EN)
            firmware_busy(c, i, ctl0 + stride * i, v);
    }
    if (fixed) {
        uint64_t v;
        if (!probe_read(c, MSR_IA32_FIXED_CTR_CTRL, &v))
            return false;
        for (unsigned f = 0; f < 4; f++) {
            bool on = (c->fixed_present >> f) & 1 &&
                      (v >> (4 * f)) & (FIXED_CTR_CTRL_OS | FIXED_CTR_CTRL_USR);
            if (on)
                firmware_busy(c, PERF_GLOBAL_FIXED_SHIFT + f, MSR_IA32_FIXED_CTR_CTRL, v);
        }
    }
    return true;
}

enum presence { PRESENT, IGNORES_WRITES, FAULTS };

// Emulators that do not implement the PMU (QEMU TCG) accept the writes and read
// back 0. A small positive pattern survives sign extension and any width.
static enum presence msrs_respond(struct pmc_caps *c, uint32_t ctl, uint32_t ctr)
{
    const uint64_t pattern = 0x5A5A;
    uint64_t v = 0;
    if (!probe_write(c, ctl, 0) || !probe_write(c, ctr, pattern) || !probe_read(c, ctr, &v))
        return FAULTS;
    bool ok = v == pattern;
    if (!probe_write(c, ctr, 0))
        return FAULTS;
    c->msrs_respond = ok;
    return ok ? PRESENT : IGNORES_WRITES;
}

static const char *msr_name(uint32_t msr, char *buf, size_t size)
{
    const char *name = pmc_msr_name(msr, buf, size);
    return name ? name : "a PMU MSR";
}

static void choose(struct pmc_caps *c, const struct halp_profile_interface *pi,
                   const char *reason_fmt, ...) __attribute__((format(printf, 3, 4)));
static void choose(struct pmc_caps *c, const struct halp_profile_interface *pi,
                   const char *reason_fmt, ...)
{
    va_list ap;
    va_start(ap, reason_fmt);
    int n = vsnprintf(c->reason, sizeof(c->reason), reason_fmt, ap);
    va_end(ap);
    c->choice = pi;
    if (pi != &nopmu_profile_interface && c->firmware_busy && n > 0 &&
        (size_t)n < sizeof(c->reason)) {
        char name[32];
        size_t len = (size_t)n;
        len += (size_t)snprintf(c->reason + len, sizeof(c->reason) - len, ", firmware left %s",
                                msr_name(c->firmware_msr, name, sizeof(name)));
        if (len < sizeof(c->reason))
            snprintf(c->reason + len, sizeof(c->reason) - len, " = 0x%lx enabled (taken over)",
                     (unsigned long)c->firmware_value);
    }
    size_t len = strlen(c->reason);
    if (pi == &emon_profile_interface && c->firmware_freeze && len < sizeof(c->reason))
        snprintf(c->reason + len, sizeof(c->reason) - len,
                 ", firmware left IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI set (cleared)");
    if (pi == &nopmu_profile_interface)
        snprintf(nopmu_reason, sizeof(nopmu_reason), "no PMU: %s", c->reason);
}

// What to probe: every PMU MSR the interface will go on to access with plain
// rdmsr/wrmsr, which panics on a #GP. A hypervisor may advertise registers it
// does not implement, one by one, so each is tried here with the fault-safe
// accessors (Linux's check_hw_exists, arch/x86/events/core.c, does the same
// for the first counters).
struct probe {
    uint32_t ctl0, ctr0; // control and counter of GP counter 0
    unsigned stride, counters;
    bool fixed_ctrl;    // IA32_FIXED_CTR_CTRL (Intel v2+ with fixed counters)
    uint32_t reads[3];  // further registers read: global control and status (0 ends)
    uint32_t zeroes[6]; // further registers written with 0: status clear, fixed counters
};

// Every counter after 0 and the further registers. False on the first #GP.
static bool probe_rest(struct pmc_caps *c, const struct probe *p)
{
    uint64_t v;
    for (unsigned i = 1; i < p->counters; i++)
        if (!probe_write(c, p->ctr0 + p->stride * i, 0))
            return false;
    for (unsigned k = 0; k < ARRAY_SIZE(p->reads) && p->reads[k]; k++)
        if (!probe_read(c, p->reads[k], &v))
            return false;
    for (unsigned k = 0; k < ARRAY_SIZE(p->zeroes) && p->zeroes[k]; k++)
        if (!probe_write(c, p->zeroes[k], 0))
            return false;
    return true;
}

// Firmware check (every control register read), the write/read-back test on
// counter 0, then the rest. False (and the no-PMU interface chosen, with the
// reason) if the PMU is not usable.
static bool probe(struct pmc_caps *c, const struct probe *p)
{
    enum presence present = FAULTS;
    if (firmware_check(c, p->ctl0, p->stride, p->counters, p->fixed_ctrl))
        present = msrs_respond(c, p->ctl0, p->ctr0);
    if (present == PRESENT && !probe_rest(c, p))
        present = FAULTS;
    char name[32];
    if (present == FAULTS)
        choose(c, &nopmu_profile_interface, "%s raises #GP on %s",
               msr_name(c->gp_msr, name, sizeof(name)), c->gp_on_write ? "wrmsr" : "rdmsr");
    else if (present == IGNORES_WRITES)
        choose(c, &nopmu_profile_interface, "%s ignores writes",
               msr_name(p->ctr0, name, sizeof(name)));
    return present == PRESENT;
}

// IA32_PERF_CAPABILITIES may claim full-width writes that IA32_A_PMCx do not
// take: each alias is written once, and one #GP means legacy writes (periods
// up to 2^31 - 1) rather than no PMU.
static void probe_full_width(struct pmc_caps *c, unsigned ngp)
{
    for (unsigned i = 0; c->full_width && i < ngp; i++) {
        if (!wrmsr_safe(MSR_IA32_A_PMC0 + i, 0)) {
            c->full_width = false;
            c->full_width_msr = MSR_IA32_A_PMC0 + i;
        }
    }
}

static void decode_intel(struct pmc_caps *c)
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
    // A PERF_CAPABILITIES that faults despite PDCM only costs full-width writes.
    if (c->pdcm && rdmsr_safe(MSR_IA32_PERF_CAPABILITIES, &c->perf_capabilities))
        c->full_width = (c->perf_capabilities & PERF_CAPABILITIES_FW_WRITE) != 0;
    // Firmware may leave FREEZE_PERFMON_ON_PMI set: every PMI would then
    // freeze the counters (Intel SDM vol. 3B, "Freezing Counters on PMI").
    // InitializeProfiling clears it on each CPU (hal/emon.c).
    uint64_t debugctl;
    c->debugctl = c->version >= 2 && rdmsr_safe(MSR_IA32_DEBUGCTL, &debugctl);
    c->firmware_freeze = c->debugctl && (debugctl & DEBUGCTL_FREEZE_PERFMON_ON_PMI);
}

// The Intel probe list: GP counters, fixed counters 0-2 present, and from
// version 2 the global control, status and overflow-clear registers.
static void intel_probe_list(const struct pmc_caps *c, unsigned ngp, struct probe *p)
{
    bool fixed = c->version >= 2 && c->fixed_present && c->fixed_width;
    *p = (struct probe){MSR_IA32_PERFEVTSEL0, MSR_IA32_PMC0, 1, ngp, fixed, {0}, {0}};
    unsigned z = 0;
    if (c->version >= 2) {
        p->reads[0] = MSR_IA32_PERF_GLOBAL_CTRL;
        p->reads[1] = MSR_IA32_PERF_GLOBAL_STATUS;
        p->zeroes[z++] = MSR_IA32_PERF_GLOBAL_OVF_CTRL;
    }
    for (unsigned f = 0; fixed && f < 3; f++)
        if ((c->fixed_present >> f) & 1)
            p->zeroes[z++] = MSR_IA32_FIXED_CTR0 + f;
}

static void detect_intel(struct pmc_caps *c)
{
    decode_intel(c);
    if (c->version == 0) {
        choose(c, &nopmu_profile_interface, "CPUID.0AH version 0");
        return;
    }
    if (c->gp_counters == 0 || c->gp_width < 32) {
        choose(c, &nopmu_profile_interface, "CPUID.0AH version %u with %u counters x %u bits",
               c->version, c->gp_counters, c->gp_width);
        return;
    }
    unsigned ngp = c->gp_counters < PMC_MAX_GP_INTEL ? c->gp_counters : PMC_MAX_GP_INTEL;
    struct probe pr;
    intel_probe_list(c, ngp, &pr);
    if (!probe(c, &pr))
        return;
    probe_full_width(c, ngp);
    char writes[64] = "";
    char name[32];
    if (c->full_width)
        snprintf(writes, sizeof(writes), " (full-width writes)");
    else if (c->full_width_msr)
        snprintf(writes, sizeof(writes), " (%s raises #GP: legacy writes)",
                 msr_name(c->full_width_msr, name, sizeof(name)));
    unsigned fixed = 0;
    for (unsigned i = 0; i < 3; i++) // instructions, core cycles, reference cycles
        fixed += (c->fixed_present >> i) & 1;
    if (fixed && c->fixed_width)
        choose(c, &emon_profile_interface,
               "version %u, %u GP counters x %u bits%s, %u fixed x %u bits", c->version,
               c->gp_counters, c->gp_width, writes, fixed, c->fixed_width);
    else
        choose(c, &emon_profile_interface, "version %u, %u GP counters x %u bits%s", c->version,
               c->gp_counters, c->gp_width, writes);
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

    struct probe pr = {c->amd_perfctr_core ? MSR_F15H_PERF_CTL0 : MSR_K7_PERF_CTL0,
                       c->amd_perfctr_core ? MSR_F15H_PERF_CTR0 : MSR_K7_PERF_CTR0,
                       c->amd_perfctr_core ? 2 : 1,
                       c->amd_counters,
                       false,
                       {0},
                       {0}};
    if (c->amd_perfmon_v2) {
        pr.reads[0] = MSR_AMD_PERF_GLOBAL_CTL;
        pr.reads[1] = MSR_AMD_PERF_GLOBAL_STATUS;
        pr.zeroes[0] = MSR_AMD_PERF_GLOBAL_STATUS_CLR;
    }
    if (!probe(c, &pr))
        return;
    choose(c, &amd64_profile_interface, "family %xh, %u counters x 48 bits (%s%s)", c->family,
           c->amd_counters, c->amd_perfctr_core ? "PerfCtrExtCore" : "legacy",
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
        // Family and model: the extended fields count only for base family 0Fh
        // (and, for the model, 06h): Intel SDM vol. 2A, CPUID leaf 01H; AMD
        // APM vol. 3, appendix E, CPUID Fn0000_0001_EAX.
        unsigned base_family = (r.eax >> 8) & 0xF, base_model = (r.eax >> 4) & 0xF;
        c->family = base_family == 0xF ? base_family + ((r.eax >> 20) & 0xFF) : base_family;
        c->model = base_family == 0xF || base_family == 0x6
                       ? base_model | ((r.eax >> 16) & 0xF) << 4
                       : base_model;
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
