// The PMU model and the host fakes (see pmu_model.h).
#include "pmu_model.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/trapframe.h"
#include "arch/x86/vectors.h"
#include "arch/x86/clock.h"
#include "core/heap.h"
#include "lib/kprintf.h"
#include "arch/x86/percpu.h"
#include "pmc/pmc.h"
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
};
const struct model_config MODEL_AMD_LEGACY = {
    .name = "amd-legacy",
    .vendor = MODEL_AMD,
    .ncpus = 2,
};
const struct model_config MODEL_AMD_EXT = {
    .name = "amd-perfctr-core",
    .vendor = MODEL_AMD,
    .ncpus = 2,
    .perfctr_core = true,
};
const struct model_config MODEL_AMD_V2 = {
    .name = "amd-perfmon-v2",
    .vendor = MODEL_AMD,
    .ncpus = 4,
    .hypervisor = "KVMKVMKVM",
    .perfctr_core = true,
    .perfmon_v2 = true,
    .v2_counters = 6,
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
    uint32_t lvtpc;
    bool irq_on;
    bool pmi_pending; // raised with interrupts off: delivered by irq_restore
    bool pmi_due;     // overflow seen, PMI waits for skid more events
    uint64_t skid_left;
    uint64_t pmi_ip;
    bool pmi_user;
    uint64_t pmis, lost, masked_after;
    struct model_timer timers[TIMER_SLOTS];
};

static struct model_config cfg;
static struct mcpu mcpus[MODEL_MAX_CPUS];
static unsigned current;
static unsigned gp_faults, msr_writes, smp_calls;
static uint64_t now_ns;
static int alloc_countdown = -1;
static size_t heap_in_use;
static char console[16384];
static size_t console_len;
static bool in_pmi;

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
    ncpus = ncpus_online = cfg.ncpus;
    current = 0;
    gp_faults = msr_writes = smp_calls = 0;
    now_ns = 0;
    alloc_countdown = -1;
    console_len = 0;
    console[0] = '\0';
    in_pmi = false;
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

struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
    struct cpuid_regs r = {0, 0, 0, 0};
    (void)subleaf;
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
    R_CAPS
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

// TCG: the PMU MSR ranges exist but do nothing.
static bool tcg_pmu_msr(uint32_t msr)
{
    return (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + 8) ||
           (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + 8) ||
           (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + 4) ||
           (msr >= MSR_IA32_FIXED_CTR_CTRL && msr <= MSR_IA32_PERF_GLOBAL_OVF_CTRL) ||
           (msr >= MSR_K7_PERF_CTL0 && msr < MSR_K7_PERF_CTR0 + 4) ||
           (msr >= MSR_F15H_PERF_CTL0 && msr < MSR_F15H_PERF_CTL0 + 12);
}

uint64_t rdmsr(uint32_t msr)
{
    struct mcpu *c = &mcpus[current];
    unsigned i;
    if (cfg.pmu_ignored && tcg_pmu_msr(msr))
        return 0;
    switch (decode(msr, &i)) {
    case R_CTL: return c->ctl[i];
    case R_CTR:
    case R_CTR_FULL: return c->ctr[i];
    case R_FIXED: return c->fixed[i];
    case R_FIXED_CTRL: return c->fixed_ctrl;
    case R_GSTATUS: return c->global_status;
    case R_GCTRL: return c->global_ctrl;
    case R_GOVF: return 0;
    case R_CAPS: return (cfg.full_width ? PERF_CAPABILITIES_FW_WRITE : 0) | 0x3; // + LBR format
    case R_NONE: break;
    }
    gp_fault("rdmsr", msr, 0, "no such MSR");
    return 0;
}

void wrmsr(uint32_t msr, uint64_t v)
{
    struct mcpu *c = &mcpus[current];
    unsigned i;
    msr_writes++;
    if (cfg.pmu_ignored && tcg_pmu_msr(msr))
        return;
    switch (decode(msr, &i)) {
    case R_CTL: {
        uint64_t allowed = cfg.vendor == MODEL_AMD ? 0x0000030FFFFFFFFFull : 0xFFFFFFFFull;
        if (v & ~allowed)
            return gp_fault("wrmsr", msr, v, "reserved event-select bits");
        c->ctl[i] = v;
        return;
    }
    case R_CTR: // legacy Intel write: bits 31:0, sign-extended from bit 31
        c->ctr[i] = (uint64_t)(int64_t)(int32_t)(uint32_t)v & gp_mask();
        return;
    case R_CTR_FULL:
        if (v & ~gp_mask())
            return gp_fault("wrmsr", msr, v, "bits beyond the counter width");
        c->ctr[i] = v;
        return;
    case R_FIXED:
        if (v & ~fixed_mask())
            return gp_fault("wrmsr", msr, v, "bits beyond the fixed counter width");
        c->fixed[i] = v;
        return;
    case R_FIXED_CTRL: {
        uint64_t allowed = 0;
        for (unsigned j = 0; j < NFIXED_MAX; j++)
            if (fixed_exists(j))
                allowed |= 0xFull << (4 * j);
        if (v & ~allowed)
            return gp_fault("wrmsr", msr, v, "reserved fixed-ctrl bits");
        c->fixed_ctrl = v;
        return;
    }
    case R_GCTRL:
        if (v & ~global_bits())
            return gp_fault("wrmsr", msr, v, "reserved global-ctrl bits");
        c->global_ctrl = v;
        return;
    case R_GOVF:
        if (v & ~global_bits())
            return gp_fault("wrmsr", msr, v, "reserved overflow-clear bits");
        if (!cfg.sticky_status)
            c->global_status &= ~v;
        return;
    case R_GSTATUS: return gp_fault("wrmsr", msr, v, "global status is read-only");
    case R_CAPS: return gp_fault("wrmsr", msr, v, "PERF_CAPABILITIES is read-only");
    case R_NONE: break;
    }
    gp_fault("wrmsr", msr, v, "no such MSR");
}

// ---- Counting and PMIs ----

// The event an Intel/AMD event select counts, or EV_COUNT for none.
static enum model_event select_event(uint64_t ctl)
{
    unsigned ev = ctl & 0xFF, um = (ctl >> 8) & 0xFF;
    if (cfg.vendor == MODEL_AMD) {
        ev |= (unsigned)((ctl >> 32) & 0xF) << 8;
        if (ev == 0x76 && um == 0)
            return EV_CORE_CYCLES;
        if (ev == 0xC0 && um == 0)
            return EV_INSTRUCTIONS;
        if (ev == 0xC2 && um == 0)
            return EV_BRANCHES;
        if (ev == 0xC3 && um == 0)
            return EV_BRANCH_MISSES;
        if (ev == 0x7D && um == 0x07)
            return EV_LLC_REFS;
        if (ev == 0x7E && um == 0x07)
            return EV_LLC_MISSES;
        return EV_COUNT;
    }
    if (ev == 0x3C && um == 0x00)
        return EV_CORE_CYCLES;
    if (ev == 0xC0 && um == 0x00)
        return EV_INSTRUCTIONS;
    if (ev == 0x3C && um == 0x01)
        return EV_REF_CYCLES;
    if (ev == 0x2E && um == 0x4F)
        return EV_LLC_REFS;
    if (ev == 0x2E && um == 0x41)
        return EV_LLC_MISSES;
    if (ev == 0xC4 && um == 0x00)
        return EV_BRANCHES;
    if (ev == 0xC5 && um == 0x00)
        return EV_BRANCH_MISSES;
    if (ev == 0xA4 && um == 0x01)
        return EV_SLOTS;
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
};

static unsigned live_counters(struct mcpu *c, enum model_event ev, bool user, struct live *out)
{
    unsigned n = 0;
    if (cfg.pmu_ignored)
        return 0;
    for (unsigned i = 0; i < ngp(); i++) {
        uint64_t ctl = c->ctl[i];
        bool ring = user ? (ctl & PERFEVTSEL_USR) : (ctl & PERFEVTSEL_OS);
        bool gate = !has_global() || ((c->global_ctrl >> i) & 1);
        if ((ctl & PERFEVTSEL_EN) && ring && gate && select_event(ctl) == ev)
            out[n++] = (struct live){&c->ctr[i], gp_mask(), (ctl & PERFEVTSEL_INT) != 0,
                                     has_global() ? (int)i : -1};
    }
    for (unsigned j = 0; j < NFIXED_MAX; j++) {
        unsigned f = (unsigned)(c->fixed_ctrl >> (4 * j)) & 0xF;
        bool ring = user ? (f & FIXED_CTR_CTRL_USR) : (f & FIXED_CTR_CTRL_OS);
        if (fixed_exists(j) && ring && ((c->global_ctrl >> (32 + j)) & 1) && fixed_event[j] == ev)
            out[n++] = (struct live){&c->fixed[j], fixed_mask(), (f & FIXED_CTR_CTRL_PMI) != 0,
                                     (int)(32 + j)};
    }
    return n;
}

// Run the real handler on cpu as the CPU would for vector VEC_PMI.
static void run_handler(unsigned cpu, uint64_t ip, bool user)
{
    struct mcpu *c = &mcpus[cpu];
    struct trapframe tf;
    memset(&tf, 0, sizeof(tf));
    tf.vector = VEC_PMI;
    tf.rip = ip;
    tf.cs = user ? 0x2B : 0x08;
    unsigned saved = current;
    current = cpu;
    c->irq_on = false;
    in_pmi = true;
    c->pmis++;
    pmc_pmi_handler(&tf);
    in_pmi = false;
    c->irq_on = true;
    current = saved;
}

// A counter overflow with INT set signals the LVTPC.
static void deliver_pmi(unsigned cpu, uint64_t ip, bool user)
{
    struct mcpu *c = &mcpus[cpu];
    if (c->lvtpc & LVT_MASKED) {
        c->lost++;
        return;
    }
    if (!c->irq_on || in_pmi) {
        c->pmi_pending = true;
        c->pmi_ip = ip;
        c->pmi_user = user;
        return;
    }
    if ((c->lvtpc & 0xFF) != VEC_PMI || (c->lvtpc & (7u << 8)) != 0)
        tap_ok(false, "LVTPC on cpu %u is 0x%x: not VEC_PMI with fixed delivery", cpu, c->lvtpc);
    if (cfg.vendor == MODEL_INTEL)
        c->lvtpc |= LVT_MASKED; // Intel masks the LVTPC when it delivers
    run_handler(cpu, ip, user);
    if (c->lvtpc & LVT_MASKED)
        c->masked_after++;
}

// An IPI at VEC_PMI does not go through the LVTPC.
void model_raise_pmi(unsigned cpu, uint64_t ip)
{
    run_handler(cpu, ip, false);
}

void model_retire(unsigned cpu, enum model_event ev, uint64_t n, uint64_t ip, bool user)
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
            }
        }
        n -= step;
        // A PMI already waiting out its skid absorbs overflows that happen meanwhile.
        bool was_due = c->pmi_due;
        if (was_due)
            c->skid_left -= step;
        if (raise && !was_due && cfg.skid == 0) {
            deliver_pmi(cpu, ip, user);
        } else if (raise && !was_due) {
            c->pmi_due = true;
            c->skid_left = cfg.skid;
        } else if (was_due && c->skid_left == 0) {
            c->pmi_due = false;
            deliver_pmi(cpu, ip, user);
        }
        if (k == 0 && !c->pmi_due)
            break; // nothing counts this event: the rest changes nothing
    }
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
}

void lapic_eoi(void) {}

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
        if (c->pmi_pending && !in_pmi) {
            c->pmi_pending = false;
            deliver_pmi(current, c->pmi_ip, c->pmi_user);
        }
    }
}

void smp_call_all(void (*fn)(void *arg), void *arg)
{
    unsigned saved = current;
    smp_calls++;
    if (in_pmi || !mcpus[current].irq_on)
        tap_ok(false, "smp_call_all called with interrupts off on cpu %u", current);
    for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++) {
        current = cpu;
        mcpus[cpu].irq_on = false;
        fn(arg);
        mcpus[cpu].irq_on = true;
    }
    current = saved;
}

uint64_t spin_lock_irqsave(struct spinlock *l)
{
    uint64_t f = irq_save();
    if (l->locked)
        tap_ok(false, "spinlock %s taken twice", l->name);
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
}

void timer_periodic_stop(enum timer_slot slot)
{
    mcpus[current].timers[slot].running = false;
}

uint64_t timer_periodic_count(enum timer_slot slot)
{
    (void)slot;
    return 0;
}

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
    t->fn(&f, t->arg);
    mcpus[cpu].irq_on = true;
    current = saved;
}

// ---- Time, heap, console ----

uint64_t clock_ns(void)
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

void *kzalloc(size_t size)
{
    void *p = kmalloc(size);
    if (p)
        memset(p, 0, size);
    return p;
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
