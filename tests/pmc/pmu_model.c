// The PMU model and the host fakes (see pmu_model.h).
#include "pmu_model.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "core/grace.h"
#include "arch/x86/trapframe.h"
#include "arch/x86/nmi.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/pmu_regs.h"
#include "arch/x86/vectors.h"
#include "arch/x86/clock.h"
#include "core/heap.h"
#include "core/uaccess.h"
#include "lib/kprintf.h"
#include "arch/x86/percpu.h"
#include "pmc/hal/pmu.h"
#include "core/smp.h"
#include "core/spinlock.h"
#include "tap.h"

// ---- Machines ----

const struct model_config MODEL_INTEL_V1 = {
    .name = "intel-v1",
    .vendor = MODEL_INTEL,
    .ncpus = 2,
    .version = 1,
    .gp = 2,
    .gp_width = 40,
    .ebx_length = 7,
    .msr_cost_ns = MODEL_COST_BARE_NS,
};
// KVM -cpu host on an Intel host: version 2, full-width writes, 3 fixed, slots hidden.
const struct model_config MODEL_INTEL_KVM_V2 = {
    .name = "intel-kvm-v2",
    .vendor = MODEL_INTEL,
    .ncpus = 4,
    .hypervisor = "KVMKVMKVM",
    .version = 2,
    .gp = 8,
    .gp_width = 48,
    .ebx_length = 8,
    .ebx = 0x80,
    .fixed = 3,
    .fixed_width = 48,
    .pdcm = true,
    .full_width = true,
    .msr_cost_ns = MODEL_COST_KVM_NS,
};
// Version 4 without full-width writes: legacy sign-extending PMC writes.
const struct model_config MODEL_INTEL_V4 = {
    .name = "intel-v4",
    .vendor = MODEL_INTEL,
    .ncpus = 2,
    .version = 4,
    .gp = 4,
    .gp_width = 48,
    .ebx_length = 7,
    .fixed = 3,
    .fixed_width = 48,
    .pdcm = true,
    .full_width = false,
    .msr_cost_ns = MODEL_COST_BARE_NS,
};
// Version 5: EDX reports 1 fixed counter, the ECX bitmap adds 1-3.
const struct model_config MODEL_INTEL_V5 = {
    .name = "intel-v5",
    .vendor = MODEL_INTEL,
    .ncpus = 2,
    .version = 5,
    .gp = 8,
    .gp_width = 48,
    .ebx_length = 8,
    .fixed = 1,
    .fixed_width = 48,
    .fixed_ecx = 0xF,
    .pdcm = true,
    .full_width = true,
    .msr_cost_ns = MODEL_COST_BARE_NS,
};
// Family 10h: four legacy counters.
const struct model_config MODEL_AMD_LEGACY = {
    .name = "amd-legacy",
    .vendor = MODEL_AMD,
    .ncpus = 2,
    .family = 0x10,
    .msr_cost_ns = MODEL_COST_BARE_NS,
};
// Family 15h introduced PerfCtrExtCore (six counters, some events on 0-2 only).
const struct model_config MODEL_AMD_EXT = {
    .name = "amd-perfctr-core",
    .vendor = MODEL_AMD,
    .ncpus = 2,
    .perfctr_core = true,
    .family = 0x15,
    .msr_cost_ns = MODEL_COST_BARE_NS,
};
// KVM on a Zen 4 host (family 19h): PerfMonV2.
const struct model_config MODEL_AMD_V2 = {
    .name = "amd-perfmon-v2",
    .vendor = MODEL_AMD,
    .ncpus = 4,
    .hypervisor = "KVMKVMKVM",
    .perfctr_core = true,
    .perfmon_v2 = true,
    .v2_counters = 6,
    .family = 0x19,
    .msr_cost_ns = MODEL_COST_KVM_NS,
};
// QEMU TCG: CPUID.0AH = 0 (max leaf 0xD), PMU MSRs read 0 and ignore writes.
const struct model_config MODEL_TCG_INTEL = {
    .name = "tcg-intel",
    .vendor = MODEL_INTEL,
    .ncpus = 4,
    .hypervisor = "TCGTCGTCGTCG",
    .max_leaf = 0xD,
    .pmu_ignored = true,
};
const struct model_config MODEL_TCG_AMD = {
    .name = "tcg-amd",
    .vendor = MODEL_AMD,
    .ncpus = 4,
    .hypervisor = "TCGTCGTCGTCG",
    .max_leaf = 0xD,
    .pmu_ignored = true,
};
const struct model_config MODEL_VIA = {
    .name = "via",
    .vendor = MODEL_OTHER,
    .vendor_id = "CentaurHauls",
    .ncpus = 1,
};

// ---- State ----

#define NGP_MAX    16
#define NFIXED_MAX 4

struct mcpu {
    uint64_t ctl[NGP_MAX], ctr[NGP_MAX];
    uint64_t fixed[NFIXED_MAX], fixed_ctrl;
    uint64_t global_ctrl, global_status;
    uint64_t debugctl;
    uint64_t handler_ip; // the IP the running PMI interrupted
    bool handler_user;   // ... in ring 3
    bool entry_phase;    // in the PMI, before its first PMU or LAPIC access
    uint64_t masked_signals, misattributed, int_overflows;
    bool due_exempt; // the due PMI's overflow happened in a PMI's entry phase
    unsigned run;    // the PMI handler run in progress (numbered from 1; 0: none)
    unsigned runs;   // handler runs so far
    // Each counter's overflow (GP n at n, fixed n at NGP_MAX + n) not yet
    // reloaded by the kernel: the handler run it happened in (0: outside
    // one), the run of the PMI it raised (0: none yet), and whether its
    // signal met a masked LVTPC (no PMI of its own will come).
    struct overflow {
        bool open, dropped;
        unsigned in_run, pmi_run;
    } ovf[NGP_MAX + NFIXED_MAX];
    uint32_t lvtpc;
    bool irq_on;
    bool in_pmi;      // running pmc_pmi_handler
    bool pmi_pending; // raised with interrupts off: delivered by irq_restore
    bool pmi_due;     // overflow seen, PMI waits for skid more events
    uint64_t skid_left;
    uint64_t pmi_ip;
    bool pmi_user;
    uint64_t pmis, lost, coalesced, masked_after;
    uint64_t counted[EV_COUNT];
    uint64_t handler_retired; // instructions (and core cycles) the PMI path retired
    uint64_t xclk_carry;      // reference cycles not yet making a whole crystal tick
    uint64_t handler_ns;
    unsigned enable_while_masked;
    struct model_timer timers[TIMER_SLOTS];
    uint64_t cr4;
};

// Each PMI's entry time and duration, for per-window handler time.
#define PMI_LOG 32768
struct pmi_rec {
    uint64_t entry, ns;
};
static struct pmi_rec pmi_log[MODEL_MAX_CPUS][PMI_LOG];
static unsigned pmi_logged[MODEL_MAX_CPUS];

static struct model_config cfg;
static const struct model_cpuid *cpuid_table; // model_set_cpuid's, or NULL
static unsigned cpuid_entries;
static struct mcpu mcpus[MODEL_MAX_CPUS];
static unsigned current;
static unsigned gp_faults, msr_writes, smp_calls, safe_faults, constraint_violations, rdpmc_faults;
static uint64_t now_ns;
static int alloc_countdown = -1;
static size_t heap_in_use;
static char console[16384];
static size_t console_len;

unsigned ncpus;
volatile unsigned ncpus_online;

static unsigned ngp(void)
{
    if (cfg.vendor == MODEL_AMD)
        return cfg.perfctr_core ? (cfg.perfmon_v2 && cfg.v2_counters ? cfg.v2_counters : 6) : 4;
    return cfg.vendor == MODEL_INTEL ? cfg.gp : 0;
}

static uint64_t gp_mask(void)
{
    unsigned w = cfg.vendor == MODEL_AMD ? 48 : cfg.gp_width;
    return w >= 64 ? ~0ull : (1ull << w) - 1;
}

static uint64_t fixed_mask(void)
{
    return cfg.fixed_width >= 64 ? ~0ull : (1ull << cfg.fixed_width) - 1;
}

static bool fixed_exists(unsigned j)
{
    if (cfg.vendor != MODEL_INTEL || cfg.version < 2 || j >= NFIXED_MAX)
        return false;
    return j < cfg.fixed || (cfg.version >= 5 && ((cfg.fixed_ecx >> j) & 1));
}

static bool any_fixed(void)
{
    for (unsigned j = 0; j < NFIXED_MAX; j++)
        if (fixed_exists(j))
            return true;
    return false;
}

static bool has_global(void)
{
    return (cfg.vendor == MODEL_INTEL && cfg.version >= 2) ||
           (cfg.vendor == MODEL_AMD && cfg.perfmon_v2);
}

// GLOBAL_STATUS bits beyond the counters' that exist, and may be cleared
// through OVF_CTRL: CondChgd from version 2 (KVM's v2 vPMU accepts it too),
// CTR_Frz from version 4 (SDM vol. 3B, IA32_PERF_GLOBAL_STATUS_RESET).
static uint64_t status_extra_bits(void)
{
    if (cfg.vendor != MODEL_INTEL || cfg.version < 2)
        return 0;
    return PERF_GLOBAL_STATUS_COND_CHG | (cfg.version >= 4 ? PERF_GLOBAL_STATUS_CTR_FRZ : 0);
}

// Global ctrl/status bits that exist.
static uint64_t global_bits(void)
{
    uint64_t m = ngp() >= 64 ? ~0ull : (1ull << ngp()) - 1;
    for (unsigned j = 0; j < NFIXED_MAX; j++)
        if (fixed_exists(j))
            m |= 1ull << (32 + j);
    return m;
}

void model_reset(const struct model_config *c)
{
    cfg = *c;
    cpuid_table = NULL;
    model_nmi_hook = NULL;
    cpuid_entries = 0;
    if (cfg.ncpus == 0 || cfg.ncpus > MODEL_MAX_CPUS)
        cfg.ncpus = 1;
    memset(mcpus, 0, sizeof(mcpus));
    for (unsigned i = 0; i < MODEL_MAX_CPUS; i++) {
        mcpus[i].lvtpc = LVT_MASKED; // LAPIC reset state
        mcpus[i].irq_on = true;
        // Intel's reset value of GLOBAL_CTRL enables every GP counter.
        if (cfg.vendor == MODEL_INTEL && cfg.version >= 2)
            mcpus[i].global_ctrl = ngp() >= 64 ? ~0ull : (1ull << ngp()) - 1;
    }
    if (cfg.family == 0)
        cfg.family = cfg.vendor == MODEL_AMD ? 0x10 : 6;
    if (cfg.xclk_ratio == 0)
        cfg.xclk_ratio = 108;
    // Firmware that left counters running: cycles in both levels, enabled.
    for (unsigned i = 0; i < MODEL_MAX_CPUS; i++) {
        for (unsigned n = 0; n < NGP_MAX; n++)
            if ((cfg.firmware_gp >> n) & 1)
                mcpus[i].ctl[n] = PERFEVTSEL_EN | PERFEVTSEL_OS | PERFEVTSEL_USR |
                                  (cfg.vendor == MODEL_AMD ? 0x76 : 0x3C);
        for (unsigned f = 0; f < NFIXED_MAX; f++)
            if ((cfg.firmware_fixed >> f) & 1)
                mcpus[i].fixed_ctrl |= (FIXED_CTR_CTRL_OS | FIXED_CTR_CTRL_USR) << (4 * f);
    }
    for (unsigned i = 0; i < MODEL_MAX_CPUS; i++)
        mcpus[i].debugctl = cfg.firmware_freeze ? DEBUGCTL_FREEZE_PERFMON_ON_PMI : 0;
    memset(pmi_logged, 0, sizeof(pmi_logged));
    ncpus = ncpus_online = cfg.ncpus;
    current = 0;
    gp_faults = msr_writes = smp_calls = safe_faults = constraint_violations = rdpmc_faults = 0;
    now_ns = 0;
    alloc_countdown = -1;
    console_len = 0;
    console[0] = '\0';
}

const struct model_config *model_config(void)
{
    return &cfg;
}

static void gp_fault(const char *op, uint32_t msr, uint64_t v, const char *why)
{
    gp_faults++;
    tap_ok(false, "#GP on %s: %s 0x%x value 0x%llx on cpu %u (%s)", cfg.name, op, msr,
           (unsigned long long)v, current, why);
}

// ---- CPUID ----

static void put_id(uint32_t *a, uint32_t *b, uint32_t *c, const char *s)
{
    char buf[12] = {0};
    size_t n = strlen(s);
    memcpy(buf, s, n > 12 ? 12 : n);
    memcpy(a, buf, 4);
    memcpy(b, buf + 4, 4);
    memcpy(c, buf + 8, 4);
}

void model_set_cpuid(const struct model_cpuid *table, unsigned n)
{
    cpuid_table = table;
    cpuid_entries = n;
}

static struct cpuid_regs cpuid_from_table(uint32_t leaf, uint32_t subleaf)
{
    for (unsigned k = 0; k < cpuid_entries; k++) {
        const struct model_cpuid *e = &cpuid_table[k];
        if (e->leaf == leaf && e->subleaf == subleaf)
            return (struct cpuid_regs){e->eax, e->ebx, e->ecx, e->edx};
    }
    return (struct cpuid_regs){0, 0, 0, 0};
}

struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
    struct cpuid_regs r = {0, 0, 0, 0};
    if (cpuid_table)
        return cpuid_from_table(leaf, subleaf);
    unsigned max = cfg.max_leaf ? cfg.max_leaf : (cfg.vendor == MODEL_INTEL ? 0x16 : 0x10);
    unsigned max_ext = cfg.vendor == MODEL_AMD && cfg.perfmon_v2 ? 0x80000022 : 0x80000008;
    if (leaf == 0) {
        const char *id = cfg.vendor_id               ? cfg.vendor_id
                         : cfg.vendor == MODEL_INTEL ? "GenuineIntel"
                         : cfg.vendor == MODEL_AMD   ? "AuthenticAMD"
                                                     : "UnknownCPU??";
        r.eax = max;
        put_id(&r.ebx, &r.edx, &r.ecx, id);
    } else if (leaf == 1) {
        // Family: base 0Fh plus the extended family above it (SDM vol. 2A, CPUID 01H).
        unsigned fam = cfg.family;
        r.eax = fam >= 0xF ? (0xFu << 8) | (fam - 0xF) << 20 : fam << 8;
        r.ecx = (cfg.pdcm ? CPUID1_ECX_PDCM : 0) | (cfg.hypervisor ? CPUID1_ECX_HYPERVISOR : 0);
        r.edx = CPUID1_EDX_APIC;
    } else if (leaf == CPUID_LEAF_PERFMON && leaf <= max && cfg.vendor == MODEL_INTEL) {
        r.eax = cfg.version | cfg.gp << 8 | cfg.gp_width << 16 | cfg.ebx_length << 24;
        r.ebx = cfg.ebx;
        r.ecx = cfg.version >= 5 ? cfg.fixed_ecx : 0;
        r.edx = cfg.version >= 2 ? (cfg.fixed | cfg.fixed_width << 5) : 0;
    } else if (leaf == CPUID_LEAF_HYPERVISOR && cfg.hypervisor) {
        r.eax = CPUID_LEAF_HYPERVISOR + 1;
        put_id(&r.ebx, &r.ecx, &r.edx, cfg.hypervisor);
    } else if (leaf == CPUID_LEAF_EXT_MAX) {
        r.eax = max_ext;
    } else if (leaf == CPUID_LEAF_EXT_FEATURES) {
        r.ecx = cfg.vendor == MODEL_AMD && cfg.perfctr_core ? CPUIDX1_ECX_PERFCTR_CORE : 0;
    } else if (leaf == CPUID_LEAF_AMD_PERFMON && leaf <= max_ext) {
        r.eax = cfg.perfmon_v2 ? CPUIDX22_EAX_PERFMON_V2 : 0;
        r.ebx = cfg.v2_counters;
    }
    return r;
}

// ---- MSRs ----

enum reg {
    R_NONE,
    R_CTL,
    R_CTR,
    R_CTR_FULL,
    R_FIXED,
    R_FIXED_CTRL,
    R_GSTATUS,
    R_GCTRL,
    R_GOVF,
    R_CAPS,
    R_DEBUGCTL
};

// Which register msr is on this machine, and its index; R_NONE = #GP.
static enum reg decode(uint32_t msr, unsigned *index)
{
    unsigned n = ngp();
    *index = 0;
    if (cfg.vendor == MODEL_INTEL) {
        if (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + n)
            return *index = msr - MSR_IA32_PMC0, R_CTR;
        if (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + n)
            return *index = msr - MSR_IA32_PERFEVTSEL0, R_CTL;
        if (cfg.full_width && msr >= MSR_IA32_A_PMC0 && msr < MSR_IA32_A_PMC0 + n)
            return *index = msr - MSR_IA32_A_PMC0, R_CTR_FULL;
        if (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + NFIXED_MAX &&
            fixed_exists(msr - MSR_IA32_FIXED_CTR0))
            return *index = msr - MSR_IA32_FIXED_CTR0, R_FIXED;
        if (msr == MSR_IA32_FIXED_CTR_CTRL && any_fixed())
            return R_FIXED_CTRL;
        if (cfg.version >= 2 && msr == MSR_IA32_PERF_GLOBAL_STATUS)
            return R_GSTATUS;
        if (cfg.version >= 2 && msr == MSR_IA32_PERF_GLOBAL_CTRL)
            return R_GCTRL;
        if (cfg.version >= 2 && msr == MSR_IA32_PERF_GLOBAL_OVF_CTRL)
            return R_GOVF;
        if (cfg.pdcm && msr == MSR_IA32_PERF_CAPABILITIES)
            return R_CAPS;
        if (msr == MSR_IA32_DEBUGCTL)
            return R_DEBUGCTL;
    } else if (cfg.vendor == MODEL_AMD) {
        if (msr >= MSR_K7_PERF_CTL0 && msr < MSR_K7_PERF_CTL0 + 4)
            return *index = msr - MSR_K7_PERF_CTL0, R_CTL;
        if (msr >= MSR_K7_PERF_CTR0 && msr < MSR_K7_PERF_CTR0 + 4)
            return *index = msr - MSR_K7_PERF_CTR0, R_CTR_FULL;
        if (cfg.perfctr_core && msr >= MSR_F15H_PERF_CTL0 && msr < MSR_F15H_PERF_CTL0 + 2 * n)
            return *index = (msr - MSR_F15H_PERF_CTL0) / 2,
                   (msr - MSR_F15H_PERF_CTL0) % 2 ? R_CTR_FULL : R_CTL;
        if (cfg.perfmon_v2 && msr == MSR_AMD_PERF_GLOBAL_STATUS)
            return R_GSTATUS;
        if (cfg.perfmon_v2 && msr == MSR_AMD_PERF_GLOBAL_CTL)
            return R_GCTRL;
        if (cfg.perfmon_v2 && msr == MSR_AMD_PERF_GLOBAL_STATUS_CLR)
            return R_GOVF;
    }
    return R_NONE;
}

// The PMU MSR ranges (TCG: they exist but do nothing; pmu_faults: they #GP).
static bool pmu_msr(uint32_t msr)
{
    return (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + 8) ||
           (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + 8) ||
           (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + 4) ||
           (msr >= MSR_IA32_FIXED_CTR_CTRL && msr <= MSR_IA32_PERF_GLOBAL_OVF_CTRL) ||
           (msr >= MSR_K7_PERF_CTL0 && msr < MSR_K7_PERF_CTR0 + 4) ||
           (msr >= MSR_F15H_PERF_CTL0 && msr < MSR_F15H_PERF_CTL0 + 12);
}

static void retire_in_handler(void);
static bool f15_ctr0_2_only(unsigned ev);
static bool interleaving;
static void yield_to_scheduler(bool user);
static void reloaded(struct mcpu *c, unsigned slot);

// Every access takes model time; inside the PMI it also retires the handler's
// own instructions, which running counters count.
static void access_cost(void)
{
    now_ns += cfg.msr_cost_ns;
    if (mcpus[current].in_pmi)
        mcpus[current].entry_phase = false;
    if (mcpus[current].in_pmi)
        retire_in_handler();
}

// Reserved bits and read-only registers as the SDM and APM define them; NULL
// when the access is allowed. The MSR exists (decode said so).
static const char *write_fault(enum reg r, uint64_t v)
{
    switch (r) {
    case R_CTL:
        if (cfg.vendor == MODEL_AMD) // APM vol. 2 §13.2.1: 63:42, 39:36 and 21 reserved
            return v & ~0x0000030FFFDFFFFFull ? "reserved PERF_CTL bits (AnyThread is not AMD's)"
                                              : NULL;
        if (v >> 32) // SDM vol. 3B, IA32_PERFEVTSELx: bits 63:32 reserved
            return "reserved event-select bits 63:32";
        if ((v & PERFEVTSEL_ANY) && (cfg.version < 3 || cfg.hypervisor)) // v3+ only; KVM refuses
            return "AnyThread (bit 21) not supported here";
        return NULL;
    case R_CTR_FULL: return v & ~gp_mask() ? "bits beyond the counter width" : NULL;
    case R_FIXED: return v & ~fixed_mask() ? "bits beyond the fixed counter width" : NULL;
    case R_FIXED_CTRL: {
        uint64_t field = cfg.version >= 3 && !cfg.hypervisor ? 0xF : 0xB; // AnyThread: v3+
        uint64_t allowed = 0;
        for (unsigned j = 0; j < NFIXED_MAX; j++)
            if (fixed_exists(j))
                allowed |= field << (4 * j);
        return v & ~allowed ? "reserved fixed-ctrl bits" : NULL;
    }
    case R_GCTRL: return v & ~global_bits() ? "reserved global-ctrl bits" : NULL;
    case R_GOVF:
        return v & ~(global_bits() | status_extra_bits()) ? "reserved overflow-clear bits" : NULL;
    case R_DEBUGCTL: return v >> 16 ? "reserved IA32_DEBUGCTL bits" : NULL;
    case R_GSTATUS: return "global status is read-only";
    case R_CAPS: return "PERF_CAPABILITIES is read-only";
    default: return NULL;
    }
}

// False when msr is a PMU MSR that does not behave as one: it faults
// (pmu_faults) or is ignored (pmu_ignored, TCG). *why is what a #GP means.
static bool pmu_present(uint32_t msr, const char **why)
{
    *why = "no such MSR";
    for (unsigned k = 0; k < sizeof(cfg.fault_msrs) / sizeof(cfg.fault_msrs[0]); k++) {
        if (cfg.fault_msrs[k] == 0)
            break;
        if (cfg.fault_msrs[k] == msr) {
            *why = "advertised, but this one MSR faults";
            return false;
        }
    }
    if (!pmu_msr(msr) || !(cfg.pmu_faults || cfg.pmu_ignored))
        return true;
    if (cfg.pmu_faults)
        *why = "PMU advertised by CPUID, MSR faults";
    return false;
}

// false: #GP (why says what).
static bool msr_read(uint32_t msr, uint64_t *out, const char **why)
{
    struct mcpu *c = &mcpus[current];
    unsigned i;
    *out = 0;
    if (!pmu_present(msr, why))
        return cfg.pmu_ignored && pmu_msr(msr);
    switch (decode(msr, &i)) {
    case R_CTL: *out = c->ctl[i]; return true;
    case R_CTR:
    case R_CTR_FULL: *out = c->ctr[i]; return true;
    case R_FIXED: *out = c->fixed[i]; return true;
    case R_FIXED_CTRL: *out = c->fixed_ctrl; return true;
    case R_GSTATUS: *out = c->global_status; return true;
    case R_GCTRL: *out = c->global_ctrl; return true;
    case R_GOVF: return true;
    case R_CAPS: *out = (cfg.full_width ? PERF_CAPABILITIES_FW_WRITE : 0) | 0x3; return true;
    case R_DEBUGCTL: *out = c->debugctl; return true;
    case R_NONE: break;
    }
    return false;
}

// A write that makes a PMI-capable counter count while the LVTPC is masked in
// the PMI: an overflow before the unmask would be lost.
static void check_enable_order(enum reg r, unsigned i, uint64_t v)
{
    struct mcpu *c = &mcpus[current];
    if (!c->in_pmi || !(c->lvtpc & LVT_MASKED))
        return;
    bool enables = (r == R_CTL && (v & PERFEVTSEL_EN) && (v & PERFEVTSEL_INT) &&
                    !(c->ctl[i] & PERFEVTSEL_EN)) ||
                   (r == R_GCTRL && (v & ~c->global_ctrl));
    c->enable_while_masked += enables;
}

static bool msr_write(uint32_t msr, uint64_t v, const char **why)
{
    struct mcpu *c = &mcpus[current];
    unsigned i;
    if (!pmu_present(msr, why))
        return cfg.pmu_ignored && pmu_msr(msr);
    enum reg r = decode(msr, &i);
    if (r == R_NONE)
        return false;
    if ((*why = write_fault(r, v)) != NULL)
        return false;
    check_enable_order(r, i, v);
    if (r == R_CTL && cfg.vendor == MODEL_AMD && (v & PERFEVTSEL_EN) && i > 2 &&
        f15_ctr0_2_only((unsigned)(v & 0xFF) | (unsigned)((v >> 32) & 0xF) << 8))
        constraint_violations++;
    if (r == R_CTR || r == R_CTR_FULL)
        reloaded(c, i);
    else if (r == R_FIXED)
        reloaded(c, NGP_MAX + i);
    switch (r) {
    case R_CTL: c->ctl[i] = v; break;
    case R_CTR: // legacy Intel write: bits 31:0, sign-extended from bit 31
        c->ctr[i] = (uint64_t)(int64_t)(int32_t)(uint32_t)v & gp_mask();
        break;
    case R_CTR_FULL: c->ctr[i] = v; break;
    case R_FIXED: c->fixed[i] = v; break;
    case R_FIXED_CTRL: c->fixed_ctrl = v; break;
    case R_GCTRL: c->global_ctrl = v; break;
    case R_GOVF:
        if (!cfg.sticky_status)
            c->global_status &= ~v;
        break;
    case R_DEBUGCTL:
        if (!cfg.debugctl_ignored)
            c->debugctl = v;
        break;
    default: break;
    }
    return true;
}

void (*model_nmi_hook)(unsigned cpu, uint32_t msr, bool write);
static bool in_nmi_hook;

// An NMI taken right after an access made outside the PMI: where a hypervisor
// injects a pending NMI, on the VM entry after an intercepted rdmsr/wrmsr.
static void nmi_after_access(uint32_t msr, bool write)
{
    if (!model_nmi_hook || in_nmi_hook || mcpus[current].in_pmi)
        return;
    in_nmi_hook = true;
    model_nmi_hook(current, msr, write);
    in_nmi_hook = false;
}

// One access: its cost, and its #GP. A plain rdmsr/wrmsr that faults panics
// the kernel (a failed check); the _safe ones return false, as the fixup does.
static bool access(bool write, bool safe, uint32_t msr, uint64_t *v)
{
    const char *why;
    msr_writes += write;
    bool ok = write ? msr_write(msr, *v, &why) : msr_read(msr, v, &why);
    access_cost();
    if (!ok && safe)
        safe_faults++;
    else if (!ok)
        gp_fault(write ? "wrmsr" : "rdmsr", msr, write ? *v : 0, why);
    nmi_after_access(msr, write);
    if (interleaving)
        yield_to_scheduler(false); // another CPU may run between any two accesses
    return ok;
}

uint64_t rdmsr(uint32_t msr)
{
    uint64_t v;
    access(false, false, msr, &v);
    return v;
}

void wrmsr(uint32_t msr, uint64_t v)
{
    access(true, false, msr, &v);
}

bool rdmsr_safe(uint32_t msr, uint64_t *value)
{
    return access(false, true, msr, value);
}

bool wrmsr_safe(uint32_t msr, uint64_t value)
{
    return access(true, true, msr, &value);
}

// ---- Counting and PMIs ----

// Intel architectural events (SDM vol. 3B, "Pre-defined Architectural
// Performance Events": event select and unit mask of each). 3CH/01H on a GP
// counter is the core crystal clock, REF_XCLK in intel/perfmon's tables
// (SKL/events/skylake_core.json), not FIXED_CTR2's TSC-rate reference cycles.
static enum model_event intel_event(unsigned ev, unsigned um)
{
    static const struct {
        unsigned ev, um;
        enum model_event what;
    } arch[] = {
        {0x3C, 0x00, EV_CORE_CYCLES},   {0xC0, 0x00, EV_INSTRUCTIONS}, {0x3C, 0x01, EV_REF_XCLK},
        {0x2E, 0x4F, EV_LLC_REFS},      {0x2E, 0x41, EV_LLC_MISSES},   {0xC4, 0x00, EV_BRANCHES},
        {0xC5, 0x00, EV_BRANCH_MISSES}, {0xA4, 0x01, EV_SLOTS},
    };
    for (size_t i = 0; i < sizeof(arch) / sizeof(arch[0]); i++)
        if (arch[i].ev == ev && arch[i].um == um)
            return arch[i].what;
    return EV_COUNT;
}

// The model's own AMD event table, per family, from the manuals' "core
// performance monitor counters" event lists (not from kernel/pmc):
//   BKDG for family 0Fh (32559), 10h (31116), 15h models 00h-0Fh (42301):
//     PMCx076 cycles not halted, PMCx0C0 retired instructions, PMCx0C2
//     retired branches, PMCx0C3 retired mispredicted branches, PMCx07D
//     requests to L2 (unit mask 0x07), PMCx07E L2 misses (0x07); family 15h
//     counts PMCx076/07D/07E on PERF_CTR0-2 only;
//   PPR for family 17h model 01h (54945), family 19h model 01h (55898):
//     PMCx076, PMCx0C0, PMCx0C2, PMCx0C3 as before; PMCx060 L2 cache requests
//     (unit mask 0xFF), PMCx064 L2 cache misses (0x09); PMCx07D/07E are gone.
static const struct amd_row {
    unsigned fam_lo, fam_hi, ev, um;
    enum model_event what;
    uint32_t counters; // 0 = any
} amd_events[] = {
    {0x0F, 0xFF, 0x076, 0x00, EV_CORE_CYCLES, 0}, {0x0F, 0xFF, 0x0C0, 0x00, EV_INSTRUCTIONS, 0},
    {0x0F, 0xFF, 0x0C2, 0x00, EV_BRANCHES, 0},    {0x0F, 0xFF, 0x0C3, 0x00, EV_BRANCH_MISSES, 0},
    {0x0F, 0x16, 0x07D, 0x07, EV_LLC_REFS, 0},    {0x0F, 0x16, 0x07E, 0x07, EV_LLC_MISSES, 0},
    {0x17, 0xFF, 0x060, 0xFF, EV_LLC_REFS, 0},    {0x17, 0xFF, 0x064, 0x09, EV_LLC_MISSES, 0},
};

static bool f15_ctr0_2_only(unsigned ev)
{
    return cfg.family == 0x15 && ev >= 0x060 && ev <= 0x07F;
}

// The event counter n counts with select ctl, or EV_COUNT for none.
static enum model_event select_event(uint64_t ctl, unsigned n)
{
    unsigned ev = ctl & 0xFF, um = (ctl >> 8) & 0xFF;
    if (cfg.vendor != MODEL_AMD)
        return intel_event(ev, um);
    ev |= (unsigned)((ctl >> 32) & 0xF) << 8;
    if (f15_ctr0_2_only(ev) && n > 2)
        return EV_COUNT; // on counters 3-5 family 15h counts nothing for it
    for (size_t i = 0; i < sizeof(amd_events) / sizeof(amd_events[0]); i++) {
        const struct amd_row *r = &amd_events[i];
        if (r->ev == ev && r->um == um && cfg.family >= r->fam_lo && cfg.family <= r->fam_hi)
            return r->what;
    }
    return EV_COUNT;
}

static const enum model_event fixed_event[NFIXED_MAX] = {EV_INSTRUCTIONS, EV_CORE_CYCLES,
                                                         EV_REF_CYCLES, EV_SLOTS};

// A counter that counts ev now: its value, mask, and whether it interrupts.
struct live {
    uint64_t *value;
    uint64_t mask;
    bool interrupt;
    int status_bit; // -1: no global status
    unsigned slot;  // index into mcpu.ovf
};

static unsigned live_counters(struct mcpu *c, enum model_event ev, bool user, struct live *out)
{
    unsigned n = 0;
    if ((cfg.filtered_events >> ev) & 1)
        return 0;
    if (cfg.pmu_ignored || cfg.pmu_faults || (c->global_status & PERF_GLOBAL_STATUS_CTR_FRZ))
        return 0;
    for (unsigned i = 0; i < ngp(); i++) {
        uint64_t ctl = c->ctl[i];
        bool ring = user ? (ctl & PERFEVTSEL_USR) : (ctl & PERFEVTSEL_OS);
        bool gate = !has_global() || ((c->global_ctrl >> i) & 1);
        if ((ctl & PERFEVTSEL_EN) && ring && gate && select_event(ctl, i) == ev)
            out[n++] = (struct live){&c->ctr[i], gp_mask(), (ctl & PERFEVTSEL_INT) != 0,
                                     has_global() ? (int)i : -1, i};
    }
    for (unsigned j = 0; j < NFIXED_MAX; j++) {
        unsigned f = (unsigned)(c->fixed_ctrl >> (4 * j)) & 0xF;
        bool ring = user ? (f & FIXED_CTR_CTRL_USR) : (f & FIXED_CTR_CTRL_OS);
        if (fixed_exists(j) && ring && ((c->global_ctrl >> (32 + j)) & 1) && fixed_event[j] == ev)
            out[n++] = (struct live){&c->fixed[j], fixed_mask(), (f & FIXED_CTR_CTRL_PMI) != 0,
                                     (int)(32 + j), NGP_MAX + j};
    }
    return n;
}

// A PMI-enabled counter overflowed (slot: its mcpu.ovf index).
static void overflowed(struct mcpu *c, unsigned slot, bool inside)
{
    c->int_overflows++;
    c->ovf[slot] = (struct overflow){true, false, inside ? c->run : 0, 0};
}

// The kernel wrote counter slot: inside a PMI, that is the overflow's sample
// and re-arm. Its sample carries the IP of the run that reloads it, which is
// right if that run is the one it happened in or the one its own PMI started;
// any other run found it after its signal was lost (Linux's and the SDM's
// handlers unmask early enough that none is).
static void reloaded(struct mcpu *c, unsigned slot)
{
    struct overflow *o = &c->ovf[slot];
    if (o->open && c->in_pmi && c->run && !(o->in_run == c->run || o->pmi_run == c->run))
        c->misattributed++;
    o->open = false;
}

// Intel's LVTPC masks itself when it delivers; AMD's does not, unless configured to.
static bool lvtpc_masks_on_delivery(void)
{
    return cfg.vendor == MODEL_INTEL || (cfg.vendor == MODEL_AMD && cfg.amd_lvtpc_masks);
}

// Run the real handler on cpu as the CPU would for vector VEC_PMI.
static void run_handler(unsigned cpu, uint64_t ip, bool user)
{
    struct mcpu *c = &mcpus[cpu];
    struct intr_frame f;
    memset(&f, 0, sizeof(f));
    f.rip = ip;
    f.cs = user ? 0x2B : 0x08;
    unsigned saved = current;
    bool irq_on = c->irq_on; // off already when the PMI is an NMI
    current = cpu;
    c->irq_on = false;
    c->in_pmi = true;
    c->pmis++;
    c->handler_ip = ip;
    c->handler_user = user;
    c->entry_phase = true;
    c->run = ++c->runs;
    for (unsigned k = 0; k < NGP_MAX + NFIXED_MAX; k++) // overflows whose signal this PMI is
        if (c->ovf[k].open && !c->ovf[k].dropped && c->ovf[k].pmi_run == 0)
            c->ovf[k].pmi_run = c->run;
    uint64_t entry = now_ns;
    retire_in_handler(); // the entry stub and the dispatcher run before pmc_pmi_handler
    pmc_pmi_handler(&f);
    c->in_pmi = false;
    c->entry_phase = false;
    c->run = 0;
    c->handler_ns += now_ns - entry;
    if (pmi_logged[cpu] < PMI_LOG)
        pmi_log[cpu][pmi_logged[cpu]++] = (struct pmi_rec){entry, now_ns - entry};
    c->irq_on = irq_on;
    current = saved;
}

// Take the PMI latched on cpu, and any latched while it ran (after the iret).
static void take_pending(unsigned cpu)
{
    struct mcpu *c = &mcpus[cpu];
    bool nmi = (c->lvtpc & (7u << 8)) == LVT_DELIVERY_NMI; // taken with interrupts off too
    for (unsigned n = 0; c->pmi_pending && (c->irq_on || nmi) && !c->in_pmi; n++) {
        if (n == 100000) {
            tap_ok(false, "cpu %u: PMIs kept coming back 100,000 times in a row", cpu);
            return;
        }
        c->pmi_pending = false;
        uint32_t dm = pmc_pmi_as_nmi ? LVT_DELIVERY_NMI : 0; // pmi=nmi or vector
        if ((c->lvtpc & 0xFF) != VEC_PMI || (c->lvtpc & (7u << 8)) != dm)
            tap_ok(false, "LVTPC on cpu %u is 0x%x: not VEC_PMI with %s delivery", cpu, c->lvtpc,
                   dm ? "NMI" : "fixed");
        run_handler(cpu, c->pmi_ip, c->pmi_user);
        if (lvtpc_masks_on_delivery() && (c->lvtpc & LVT_MASKED))
            c->masked_after++;
    }
}

// PMI-enabled counters that are enabled on c.
static unsigned pmi_counters_enabled(const struct mcpu *c)
{
    unsigned n = 0;
    for (unsigned i = 0; i < ngp(); i++)
        n += (c->ctl[i] & PERFEVTSEL_EN) && (c->ctl[i] & PERFEVTSEL_INT);
    for (unsigned j = 0; j < NFIXED_MAX; j++)
        n += fixed_exists(j) && ((c->fixed_ctrl >> (4 * j)) & FIXED_CTR_CTRL_PMI) &&
             ((c->fixed_ctrl >> (4 * j)) & (FIXED_CTR_CTRL_OS | FIXED_CTR_CTRL_USR));
    return n;
}

// A counter overflow with INT set signals the LVTPC: the interrupt is latched
// in the LAPIC (Intel also sets the LVTPC mask bit, SDM vol. 3A "LVT
// performance counter register"), and taken when interrupts are on. Raised by
// the PMI path's own events, it interrupts, after the iret, where that PMI did.
// exempt: the overflow happened before the PMI path's first access, where
// nothing can have unmasked the LVTPC yet; so does a signal arriving there
// (with skid, from an overflow while the previous PMI was latched). The
// handler's own check finds those.
static void deliver_pmi(unsigned cpu, uint64_t ip, bool user, bool exempt)
{
    struct mcpu *c = &mcpus[cpu];
    bool inside = c->in_pmi;
    exempt |= inside && c->entry_phase;
    if (inside) {
        ip = c->handler_ip;
        user = c->handler_user;
    }
    if (c->pmi_pending) {
        c->coalesced++;
        return;
    }
    if (c->lvtpc & LVT_MASKED) {
        c->lost++;
        c->masked_signals += !exempt && pmi_counters_enabled(c) >= 2;
        for (unsigned k = 0; k < NGP_MAX + NFIXED_MAX; k++)
            c->ovf[k].dropped |= c->ovf[k].open && c->ovf[k].pmi_run == 0;
        return;
    }
    if (lvtpc_masks_on_delivery())
        c->lvtpc |= LVT_MASKED;
    c->pmi_pending = true;
    c->pmi_ip = ip;
    c->pmi_user = user;
    if (!cfg.late_pmi)
        take_pending(cpu);
}

// An IPI at VEC_PMI does not go through the LVTPC.
void model_raise_pmi(unsigned cpu, uint64_t ip)
{
    run_handler(cpu, ip, false);
}

void model_deliver_pending(unsigned cpu, uint64_t ip)
{
    if (mcpus[cpu].pmi_pending)
        mcpus[cpu].pmi_ip = ip;
    take_pending(cpu);
}

bool model_pmi_pending(unsigned cpu)
{
    return mcpus[cpu].pmi_pending;
}

// What a PMI request does beside signalling the LVTPC: the firmware's freeze
// (model_config.firmware_freeze) and a hypervisor's CondChgd.
static void overflow_side_effects(struct mcpu *c)
{
    if (cfg.vendor != MODEL_INTEL || cfg.version < 2)
        return;
    if (cfg.cond_chgd)
        c->global_status |= PERF_GLOBAL_STATUS_COND_CHG;
    if (!(c->debugctl & DEBUGCTL_FREEZE_PERFMON_ON_PMI))
        return;
    if (cfg.version >= 4)
        c->global_status |= PERF_GLOBAL_STATUS_CTR_FRZ;
    else
        c->global_ctrl = 0;
}

static void retire(unsigned cpu, enum model_event ev, uint64_t n, uint64_t ip, bool user)
{
    struct mcpu *c = &mcpus[cpu];
    struct live live[NGP_MAX + NFIXED_MAX];
    while (n > 0) {
        unsigned k = live_counters(c, ev, user, live);
        uint64_t step = n;
        for (unsigned i = 0; i < k; i++) {
            uint64_t to_wrap = (live[i].mask - *live[i].value) + 1; // >= 1
            if (to_wrap != 0 && to_wrap < step)
                step = to_wrap;
        }
        if (c->pmi_due && c->skid_left < step)
            step = c->skid_left ? c->skid_left : step;
        bool raise = false;
        for (unsigned i = 0; i < k; i++) {
            uint64_t old = *live[i].value;
            *live[i].value = (old + step) & live[i].mask;
            if (*live[i].value < old || (step > live[i].mask)) { // wrapped
                if (live[i].status_bit >= 0)
                    c->global_status |= 1ull << live[i].status_bit;
                raise |= live[i].interrupt;
                if (live[i].interrupt)
                    overflowed(c, live[i].slot, c->in_pmi);
            }
        }
        bool inside = c->in_pmi;
        if (raise)
            overflow_side_effects(c);
        if (k)
            c->counted[ev] += step;
        n -= step;
        // A PMI already waiting out its skid absorbs overflows that happen meanwhile.
        bool was_due = c->pmi_due;
        if (was_due)
            c->skid_left -= step;
        bool exempt = inside && c->entry_phase;
        if (raise && !was_due && cfg.skid == 0) {
            deliver_pmi(cpu, ip, user, exempt);
        } else if (raise && !was_due) {
            c->pmi_due = true;
            c->skid_left = cfg.skid;
            c->due_exempt = exempt;
        } else if (was_due && c->skid_left == 0) {
            c->pmi_due = false;
            deliver_pmi(cpu, ip, user, c->due_exempt);
        }
        if (k == 0 && !c->pmi_due)
            break; // nothing counts this event: the rest changes nothing
    }
}

// The PMI path's own work: instructions and cycles in kernel mode.
static void retire_in_handler(void)
{
    if (cfg.handler_insns == 0)
        return;
    mcpus[current].handler_retired += cfg.handler_insns;
    retire(current, EV_INSTRUCTIONS, cfg.handler_insns, MODEL_HANDLER_IP, false);
    retire(current, EV_CORE_CYCLES, cfg.handler_insns, MODEL_HANDLER_IP, false);
}

// Reference cycles tick the crystal clock too, xclk_ratio times slower.
void model_retire(unsigned cpu, enum model_event ev, uint64_t n, uint64_t ip, bool user)
{
    retire(cpu, ev, n, ip, user);
    if (ev != EV_REF_CYCLES)
        return;
    struct mcpu *c = &mcpus[cpu];
    c->xclk_carry += n;
    uint64_t ticks = c->xclk_carry / cfg.xclk_ratio;
    c->xclk_carry %= cfg.xclk_ratio;
    if (ticks)
        retire(cpu, EV_REF_XCLK, ticks, ip, user);
}

// ---- Register views for tests ----

uint64_t model_gp_ctl(unsigned cpu, unsigned i)
{
    return mcpus[cpu].ctl[i];
}
uint64_t model_gp_ctr(unsigned cpu, unsigned i)
{
    return mcpus[cpu].ctr[i];
}
uint64_t model_fixed_ctr(unsigned cpu, unsigned i)
{
    return mcpus[cpu].fixed[i];
}
uint64_t model_fixed_ctrl(unsigned cpu)
{
    return mcpus[cpu].fixed_ctrl;
}
uint64_t model_global_ctrl(unsigned cpu)
{
    return mcpus[cpu].global_ctrl;
}
uint64_t model_global_status(unsigned cpu)
{
    return mcpus[cpu].global_status;
}
uint64_t model_debugctl(unsigned cpu)
{
    return mcpus[cpu].debugctl;
}
uint32_t model_lvtpc(unsigned cpu)
{
    return mcpus[cpu].lvtpc;
}
void model_set_lvtpc(unsigned cpu, uint32_t v)
{
    mcpus[cpu].lvtpc = v;
}
uint64_t model_pmis_delivered(unsigned cpu)
{
    return mcpus[cpu].pmis;
}
uint64_t model_pmis_lost(unsigned cpu)
{
    return mcpus[cpu].lost;
}
uint64_t model_lvtpc_masked_after_pmi(unsigned cpu)
{
    return mcpus[cpu].masked_after;
}
uint64_t model_pmis_coalesced(unsigned cpu)
{
    return mcpus[cpu].coalesced;
}
uint64_t model_counted(unsigned cpu, enum model_event ev)
{
    return mcpus[cpu].counted[ev];
}
uint64_t model_handler_retired(unsigned cpu)
{
    return mcpus[cpu].handler_retired;
}

uint64_t model_handler_ns(unsigned cpu)
{
    return mcpus[cpu].handler_ns;
}
uint64_t model_max_handler_per_window(unsigned cpu, uint64_t window_ns, unsigned *windows)
{
    uint64_t max = 0, sum = 0, w = 0;
    unsigned n = 0;
    for (unsigned i = 0; i < pmi_logged[cpu]; i++) {
        uint64_t wi = pmi_log[cpu][i].entry / window_ns;
        if (n == 0 || wi != w) {
            n++;
            w = wi;
            sum = 0;
        }
        sum += pmi_log[cpu][i].ns;
        if (sum > max)
            max = sum;
    }
    if (windows)
        *windows = n;
    return max;
}
uint64_t model_misattributed(unsigned cpu)
{
    return mcpus[cpu].misattributed;
}
uint64_t model_int_overflows(unsigned cpu)
{
    uint64_t open = 0;
    for (unsigned k = 0; k < NGP_MAX + NFIXED_MAX; k++)
        open += mcpus[cpu].ovf[k].open;
    return mcpus[cpu].int_overflows - open;
}
uint64_t model_masked_signals(unsigned cpu)
{
    return mcpus[cpu].masked_signals;
}
unsigned model_enable_while_masked(unsigned cpu)
{
    return mcpus[cpu].enable_while_masked;
}
unsigned model_constraint_violations(void)
{
    return constraint_violations;
}
unsigned model_safe_faults(void)
{
    return safe_faults;
}
unsigned model_gp_faults(void)
{
    return gp_faults;
}
unsigned model_msr_writes(void)
{
    return msr_writes;
}
unsigned model_smp_calls(void)
{
    return smp_calls;
}

// RDPMC (Intel SDM vol. 2B; AMD APM vol. 3): #GP(0) unless ECX names a
// counter and (CPL 0 or CR4.PCE). Intel: ECX[30] selects the fixed counters,
// the low bits the number; AMD: ECX is PERF_CTRn's n (0-3 legacy, 0-5 with
// PerfCtrExtCore). A PMU whose MSRs do nothing or fault (TCG, pmu_faults) has
// no counter to read. The value is the counter's width of bits.
bool model_rdpmc(unsigned cpu, uint32_t ecx, bool user, uint64_t *value)
{
    bool ok = false;
    *value = 0;
    if (cpu < cfg.ncpus && !cfg.pmu_ignored && !cfg.pmu_faults &&
        (!user || (mcpus[cpu].cr4 & CR4_PCE))) {
        struct mcpu *c = &mcpus[cpu];
        unsigned j = ecx & ~(1u << 30);
        if (cfg.vendor == MODEL_INTEL && (ecx & (1u << 30))) {
            if ((ok = j < NFIXED_MAX && fixed_exists(j)))
                *value = c->fixed[j] & fixed_mask();
        } else if ((ok = ecx < ngp())) {
            *value = c->ctr[ecx] & gp_mask();
        }
    }
    rdpmc_faults += !ok;
    return ok;
}

unsigned model_rdpmc_faults(void)
{
    return rdpmc_faults;
}

// trap.c's hook and core/uaccess.c's copy, for the host: user memory is the
// host's (the trap frame's rip points at the test's instruction bytes).
bool (*trap_user_gp_hook)(struct trapframe *tf);

NTSTATUS copy_from_user(void *dst, uint64_t usrc, size_t n)
{
    memcpy(dst, (const void *)usrc, n);
    return STATUS_SUCCESS;
}

struct user_gp {
    struct trapframe tf;
    bool handled;
};

static void user_gp_fn(void *arg)
{
    struct user_gp *g = arg;
    g->handled = trap_user_gp_hook && trap_user_gp_hook(&g->tf);
}

bool model_user_rdpmc(unsigned cpu, uint32_t ecx, uint64_t *value)
{
    static const uint8_t rdpmc_insn[2] = {0x0F, 0x33};
    struct user_gp g;
    memset(&g, 0, sizeof(g));
    g.tf.vector = 13;
    g.tf.cs = 0x2B;
    g.tf.rip = (uint64_t)(uintptr_t)rdpmc_insn;
    g.tf.rcx = ecx;
    model_on_cpu(cpu, user_gp_fn, &g);
    *value = (g.tf.rdx << 32) | (uint32_t)g.tf.rax;
    return g.handled && g.tf.rip == (uint64_t)(uintptr_t)rdpmc_insn + 2;
}

// ---- LAPIC, CPU, SMP ----

uint32_t lapic_read(uint32_t reg)
{
    return reg == LAPIC_LVT_PMC ? mcpus[current].lvtpc : 0;
}

void lapic_write(uint32_t reg, uint32_t value)
{
    if (reg == LAPIC_LVT_PMC)
        mcpus[current].lvtpc = value;
    else
        tap_ok(false, "pmc wrote LAPIC register 0x%x (only the LVTPC is its business)", reg);
    access_cost(); // an xAPIC MMIO write traps to the hypervisor like an MSR access
    if (interleaving)
        yield_to_scheduler(false);
}

void lapic_eoi(void) {}

uint64_t read_cr4(void)
{
    return mcpus[current].cr4;
}

void write_cr4(uint64_t v)
{
    mcpus[current].cr4 = v;
    if (interleaving)
        yield_to_scheduler(false);
}

uint64_t model_cr4(unsigned cpu)
{
    return mcpus[cpu].cr4;
}

unsigned cpu_id(void)
{
    return current;
}

uint64_t irq_save(void)
{
    uint64_t f = mcpus[current].irq_on ? RFLAGS_IF : 0;
    mcpus[current].irq_on = false;
    return f;
}

void irq_restore(uint64_t flags)
{
    struct mcpu *c = &mcpus[current];
    if (flags & RFLAGS_IF) {
        c->irq_on = true;
        if (!cfg.late_pmi)
            take_pending(current);
    }
}

static void interleaved_call_many(uint64_t mask, void (*fn)(void *arg), void *arg);
static void grace_run_list(struct grace_item *it);
struct grace_item *grace_queue;       // core/grace.h's; unused here: the model defers to grace_head
static struct grace_item *grace_head; // deferred, waiting for a call every CPU answers

void (*model_call_all_hook)(void);

void smp_call_all(void (*fn)(void *arg), void *arg)
{
    smp_call_many(~0ull, fn, arg);
}

// As kernel/core/smp.c: fn on every CPU of mask, the caller's in place.
void smp_call_many(uint64_t mask, void (*fn)(void *arg), void *arg)
{
    void (*hook)(void) = model_call_all_hook;
    model_call_all_hook = NULL;
    if (hook)
        hook();
    uint64_t every = cfg.ncpus >= 64 ? ~0ull : (1ull << cfg.ncpus) - 1;
    struct grace_item *queued = NULL; // safe to run once every CPU has answered
    if ((mask & every) == every) {
        queued = grace_head;
        grace_head = NULL;
    }
    if (interleaving) {
        interleaved_call_many(mask, fn, arg);
        grace_run_list(queued);
        return;
    }
    unsigned saved = current;
    smp_calls++;
    if (mcpus[current].in_pmi || !mcpus[current].irq_on)
        tap_ok(false, "smp_call_all called with interrupts off on cpu %u", current);
    for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++) {
        if (!(mask & (1ull << cpu)))
            continue;
        current = cpu;
        mcpus[cpu].irq_on = false;
        fn(arg);
        mcpus[cpu].irq_on = true;
        take_pending(cpu); // a PMI latched meanwhile arrives as interrupts come back on
    }
    current = saved;
    grace_run_list(queued);
}

// Grace periods (kernel/core/grace.h) on the model: a deferred function runs
// once every CPU has answered a cross-CPU call that began after it was
// queued (the kernel's quiescent states are a superset of that answer).

void grace_defer(struct grace_item *item, void (*fn)(struct grace_item *item))
{
    item->fn = fn;
    item->next = grace_head;
    grace_head = item;
}

static void grace_run_list(struct grace_item *it)
{
    while (it) {
        struct grace_item *next = it->next;
        it->fn(it);
        it = next;
    }
}

static void grace_nothing(void *arg)
{
    (void)arg;
}

void grace_wait(void)
{
    smp_call_many(~0ull, grace_nothing, NULL);
}

void grace_flush(void)
{
    grace_wait(); // runs everything queued before it
}

void grace_run_ready(void) {}

void model_on_cpu(unsigned cpu, void (*fn)(void *arg), void *arg)
{
    if (cpu >= cfg.ncpus) {
        tap_ok(false, "model_on_cpu: no cpu %u on %s", cpu, cfg.name);
        return;
    }
    unsigned saved = current;
    bool irq_on = mcpus[cpu].irq_on;
    current = cpu;
    mcpus[cpu].irq_on = false;
    fn(arg);
    mcpus[cpu].irq_on = irq_on;
    if (irq_on && !cfg.late_pmi)
        take_pending(cpu); // a PMI latched meanwhile arrives as interrupts come back on
    current = saved;
}

// Wait for l with this CPU's interrupts as they are: interleaved, the other
// CPUs run meanwhile; otherwise a held lock is a failed check (one host thread).
void model_spin_wait(struct spinlock *l)
{
    while (l->locked) {
        if (!interleaving) {
            tap_ok(false, "spinlock %s taken twice", l->name);
            return;
        }
        yield_to_scheduler(false);
    }
}

uint64_t spin_lock_irqsave(struct spinlock *l)
{
    uint64_t f = irq_save();
    model_spin_wait(l);
    l->locked = 1;
    l->owner_cpu = (int)current;
    return f;
}

void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags)
{
    l->locked = 0;
    l->owner_cpu = -1;
    irq_restore(flags);
}

bool spin_holding(struct spinlock *l)
{
    return l->locked && l->owner_cpu == (int)current;
}

// ---- Timers ----

void timer_periodic_start(enum timer_slot slot, uint64_t period_ns, timer_fn fn, void *arg)
{
    struct model_timer *t = &mcpus[current].timers[slot];
    if (mcpus[current].irq_on)
        tap_ok(false, "timer_periodic_start with interrupts on (cpu %u)", current);
    if (period_ns < 1000)
        tap_ok(false, "timer_periodic_start period %llu ns < 1000", (unsigned long long)period_ns);
    t->running = true;
    t->period_ns = period_ns;
    t->fn = fn;
    t->arg = arg;
    t->starts++;
    t->fires = 0;
}

void timer_periodic_stop(enum timer_slot slot)
{
    mcpus[current].timers[slot].running = false;
}

uint64_t timer_periodic_count(enum timer_slot slot)
{
    return mcpus[current].timers[slot].fires;
}

void timer_periodic_stats(unsigned cpu, enum timer_slot slot, uint64_t *count, uint64_t *missed)
{
    *count = mcpus[cpu].timers[slot].fires;
    *missed = 0;
}

// No command line in the model (hal/pmi.c reads pmi=): tests set pmc_pmi_as_nmi.
bool cmdline_get(const char *key, char *buf, size_t size)
{
    (void)key, (void)buf, (void)size;
    return false;
}

// No NMI dispatcher in the model: the tests deliver the PMI themselves.
void nmi_register(nmi_handler_t h)
{
    (void)h;
}

// The model's timer is an ordinary interrupt (arch/x86/timer.h: timer_nmi).
bool timer_nmi;
const char *timer_nmi_why = "the PMU model's timer is maskable";

const struct model_timer *model_timer(unsigned cpu, enum timer_slot slot)
{
    return &mcpus[cpu].timers[slot];
}

void model_timer_fire(unsigned cpu, enum timer_slot slot, uint64_t ip, bool user)
{
    struct model_timer *t = &mcpus[cpu].timers[slot];
    if (!t->running)
        return;
    struct intr_frame f = {.rip = ip, .cs = user ? 0x2B : 0x08};
    unsigned saved = current;
    current = cpu;
    mcpus[cpu].irq_on = false;
    t->fires++;
    t->fn(&f, t->arg);
    mcpus[cpu].irq_on = true;
    current = saved;
}

// The kernel's per-CPU data (arch/x86/percpu.c): the PMI handler counts in it.
struct cpu cpus[MAX_CPUS];

// ---- Time, heap, console ----

uint64_t clock_ns(void)
{
    return now_ns;
}
// The model's TSC counts its nanoseconds (a 1 GHz TSC).
uint64_t rdtsc(void)
{
    return now_ns;
}
void model_set_time(uint64_t ns)
{
    now_ns = ns;
}
void model_advance_time(uint64_t ns)
{
    now_ns += ns;
    if (cfg.late_pmi) // the next VM entries inject the PMIs latched meanwhile
        for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++)
            take_pending(cpu);
}

struct alloc_header {
    size_t size;
    size_t pad; // keep 16-byte alignment
};

void model_fail_alloc_after(int n)
{
    alloc_countdown = n;
}
size_t model_heap_in_use(void)
{
    return heap_in_use;
}
size_t heap_bytes_in_use(void)
{
    return heap_in_use;
}

void *kmalloc(size_t size)
{
    if (alloc_countdown == 0) {
        alloc_countdown = -1;
        return NULL;
    }
    if (alloc_countdown > 0)
        alloc_countdown--;
    struct alloc_header *h = malloc(sizeof(*h) + size);
    if (h == NULL)
        return NULL;
    h->size = size;
    heap_in_use += size;
    memset(h + 1, 0xA5, size); // kmalloc does not zero
    return h + 1;
}

void kfree(void *p)
{
    if (p == NULL)
        return;
    struct alloc_header *h = (struct alloc_header *)p - 1;
    heap_in_use -= h->size;
    free(h);
}

int kprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(console + console_len, sizeof(console) - console_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        console_len += (size_t)n < sizeof(console) - console_len
                           ? (size_t)n
                           : sizeof(console) - 1 - console_len;
    return n;
}

const char *model_console(void)
{
    return console;
}
void model_console_clear(void)
{
    console_len = 0;
    console[0] = '\0';
}

// ---- Interleaving: the CPUs as coroutines ----
//
// model_interleave runs a program on every model CPU at once, each CPU a
// coroutine (ucontext) with its own stack, switched by a seeded random
// scheduler at every preemption point: each MSR and LAPIC access, CR4
// write, spinlock wait, and the program's own model_user_point. A CPU with
// interrupts on takes, at its preemption points, the cross-CPU call waiting
// for it (smp_call_all posts one to every other CPU, as kernel/core/smp.c
// does with its IPI, and waits with interrupts on) and its latched PMI. So
// calls, counting switches, reservations and PMIs of different CPUs
// interleave at every register access, deterministically for a seed.

#define INTERLEAVE_STACK (512 * 1024)

// AddressSanitizer is told about each stack switch (its fiber interface), so
// that it checks the coroutines' stacks as it does the main one.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MODEL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MODEL_ASAN 1
#endif
#include "../xorshift.h"
#ifdef MODEL_ASAN
#include <sanitizer/common_interface_defs.h>
#define FIBER_START(save, bottom, size)  __sanitizer_start_switch_fiber(save, bottom, size)
#define FIBER_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define FIBER_START(save, bottom, size)  ((void)(save), (void)(bottom), (void)(size))
#define FIBER_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif
static const void *sched_stack; // the scheduler's (the test's) stack, for the switches back
static size_t sched_stack_size;
static void *sched_fake; // ASan's fake-stack cookies of each side

static struct icpu {
    ucontext_t ctx;
    void *stack;
    bool finished; // its program returned: it only answers calls now
    bool at_user;  // parked at model_user_point
    bool mail;     // the current smp_call_all waits for it
    void *fake;
} icpus[MODEL_MAX_CPUS];
static ucontext_t sched_ctx;
static uint64_t rng_state;
static void (*prog_fn)(unsigned cpu, void *arg);
static void *prog_arg;
static struct {
    void (*fn)(void *arg);
    void *arg;
    unsigned left; // CPUs that have not run it yet
    bool busy;
} call;

static uint64_t next_rand(void)
{
    return xorshift64(&rng_state);
}

// The call waiting for cpu, taken as the IPI would be: interrupts on, not in the PMI.
static void take_call(unsigned cpu)
{
    struct mcpu *c = &mcpus[cpu];
    if (!icpus[cpu].mail || !c->irq_on || c->in_pmi)
        return;
    icpus[cpu].mail = false;
    c->irq_on = false;
    call.fn(call.arg);
    c->irq_on = true;
    call.left--;
    take_pending(cpu);
}

static void yield_to_scheduler(bool user)
{
    unsigned me = current;
    icpus[me].at_user = user;
    FIBER_START(&icpus[me].fake, sched_stack, sched_stack_size);
    swapcontext(&icpus[me].ctx, &sched_ctx);
    FIBER_FINISH(icpus[me].fake, NULL, NULL);
    icpus[me].at_user = false;
    current = me;
    take_call(me);
    take_pending(me);
}

void model_user_point(void)
{
    if (interleaving)
        yield_to_scheduler(true);
}

bool model_interleaving(void)
{
    return interleaving;
}

void model_yield(void)
{
    if (interleaving)
        yield_to_scheduler(false);
}

static void interleaved_call_many(uint64_t mask, void (*fn)(void *arg), void *arg)
{
    if (mcpus[current].in_pmi || !mcpus[current].irq_on)
        tap_ok(false, "smp_call_all called with interrupts off on cpu %u", current);
    smp_calls++;
    while (call.busy) // one call at a time; answer the others' meanwhile
        yield_to_scheduler(false);
    call.busy = true;
    call.fn = fn;
    call.arg = arg;
    call.left = 0;
    for (unsigned c = 0; c < cfg.ncpus; c++) {
        icpus[c].mail = c != current && (mask & (1ull << c));
        call.left += icpus[c].mail;
    }
    uint64_t f = irq_save();
    if (mask & (1ull << current))
        fn(arg);
    irq_restore(f);
    while (call.left)
        yield_to_scheduler(false);
    call.busy = false;
}

static void cpu_entry(int cpu)
{
    FIBER_FINISH(NULL, &sched_stack, &sched_stack_size);
    current = (unsigned)cpu;
    prog_fn((unsigned)cpu, prog_arg);
    icpus[cpu].finished = true;
    for (;;)
        yield_to_scheduler(true); // idle: answers calls
}

static void make_cpu_context(unsigned c)
{
    getcontext(&icpus[c].ctx);
    icpus[c].stack = malloc(INTERLEAVE_STACK);
    icpus[c].ctx.uc_stack.ss_sp = icpus[c].stack;
    icpus[c].ctx.uc_stack.ss_size = INTERLEAVE_STACK;
    icpus[c].ctx.uc_link = NULL;
    makecontext(&icpus[c].ctx, (void (*)(void))cpu_entry, 1, (int)c);
}

static bool all_finished(void)
{
    bool done = !call.busy;
    for (unsigned c = 0; c < cfg.ncpus; c++)
        done = done && icpus[c].finished;
    return done;
}

uint64_t model_interleave(uint64_t seed, void (*program)(unsigned cpu, void *arg), void *arg,
                          void (*check)(unsigned cpu, void *arg), uint64_t max_steps)
{
    unsigned saved = current;
    memset(icpus, 0, sizeof(icpus));
    memset(&call, 0, sizeof(call));
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    prog_fn = program;
    prog_arg = arg;
    for (unsigned c = 0; c < cfg.ncpus; c++)
        make_cpu_context(c);
    interleaving = true;
    uint64_t steps = 0;
    for (; steps < max_steps && !all_finished(); steps++) {
        current = (unsigned)(next_rand() % cfg.ncpus);
        FIBER_START(&sched_fake, icpus[current].stack, INTERLEAVE_STACK);
        swapcontext(&sched_ctx, &icpus[current].ctx);
        FIBER_FINISH(sched_fake, NULL, NULL);
        for (unsigned c = 0; check && c < cfg.ncpus; c++)
            if (icpus[c].at_user)
                check(c, arg);
    }
    interleaving = false;
    if (steps == max_steps)
        tap_ok(false, "interleave seed %llu: not finished after %llu steps (a deadlock?)",
               (unsigned long long)seed, (unsigned long long)max_steps);
    for (unsigned c = 0; c < cfg.ncpus; c++)
        free(icpus[c].stack);
    current = saved;
    return steps;
}
