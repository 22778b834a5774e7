// The Emon profile interface: Intel architectural performance monitoring,
// versions 1 to 5 (CPUID.0AH; Intel SDM vol. 3B, "Architectural Performance
// Monitoring").
//
// GP counters are IA32_PMCn with IA32_PERFEVTSELn, loaded through the
// full-width aliases IA32_A_PMCn when IA32_PERF_CAPABILITIES allows (otherwise
// a write sets bits 31:0 and sign-extends bit 31, so periods stop at 2^31 - 1).
// From version 2 the fixed counters count instructions, core cycles and
// reference cycles, and IA32_PERF_GLOBAL_CTRL/STATUS/OVF_CTRL gate and report
// every counter. Version 1 has no global registers: an overflowed counter is
// one whose top bit has come back clear.
#include "lib/kprintf.h"

#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/vectors.h"

#include "pmc/hal/detect.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmu_regs.h"
#include "pmc/hal/trace.h"

#define ALL_GP 0xFFFFFFFFu // every Intel GP counter counts every architectural event

static struct {
    unsigned version;
    uint32_t v1_rearmed[MAX_CPUS];       // version 1: counters re-armed, to enable in Thaw
    bool has_fixed;                      // IA32_FIXED_CTR_CTRL exists
    uint64_t status_bits;                // GLOBAL_STATUS bits of the counters in pmc_hw
    uint64_t status_other;               // other GLOBAL_STATUS bits the PMI acknowledges
    bool debugctl;                       // IA32_DEBUGCTL readable: clear its freeze at init
    char reason[ProfileSourceCount][64]; // why each source is unsupported; "" = supported
    uint32_t gp[ProfileSourceCount];     // GP counters that may count each source (0: none)
    int8_t fixed[ProfileSourceCount];    // the fixed counter that counts it, or PMC_NO_FIXED
} emon;

static uint64_t width_mask(unsigned width)
{
    return width >= 64 ? ~0ull : (1ull << width) - 1;
}

static bool fixed_exists(const struct pmc_caps *c, int f)
{
    return emon.has_fixed && f >= 0 && f < 3 && (c->fixed_present >> f) & 1;
}

// Why the GP counters may not count source's event, or NULL when they may:
// the Emon rule, its CPUID.0AH:EBX bit meaningful (below EAX[31:24]) and clear.
static const char *gp_refusal(const struct pmc_caps *c, const struct profile_source_desc *d,
                              char *buf, size_t n)
{
    if (d->ebx_bit == PMC_NO_EBX_BIT || d->intel_select == 0)
        return "no architectural event";
    if (d->intel_fixed_only)
        snprintf(buf, n, "counted only by IA32_FIXED_CTR%d, which this CPU lacks", d->intel_fixed);
    else if ((unsigned)d->ebx_bit >= c->ebx_length)
        snprintf(buf, n, "CPUID.0AH:EBX bit %d beyond EAX[31:24] = %u", d->ebx_bit, c->ebx_length);
    else if (!pmc_ebx_event_available(c, d->ebx_bit))
        snprintf(buf, n, "CPUID.0AH:EBX bit %d set: event unavailable", d->ebx_bit);
    else
        return NULL;
    return buf;
}

// Which counters may count source, and why none may ("" when some can). The
// EBX bits enumerate the GP events only; a fixed counter counts its event
// whenever it exists (Intel SDM vol. 2A, CPUID leaf 0AH).
static void gate_source(const struct pmc_caps *c, KPROFILE_SOURCE s)
{
    const struct profile_source_desc *d = &profile_sources[s];
    char *why = emon.reason[s];
    size_t n = sizeof(emon.reason[s]);
    why[0] = '\0';
    emon.gp[s] = 0;
    emon.fixed[s] = PMC_NO_FIXED;
    if (s == ProfileTime) {
        snprintf(why, n, "counted by the timer, not a PMC");
        return;
    }
    const char *gp_no = gp_refusal(c, d, why, n);
    emon.gp[s] = gp_no ? 0 : ALL_GP;
    emon.fixed[s] = fixed_exists(c, d->intel_fixed) ? d->intel_fixed : PMC_NO_FIXED;
    if (emon.gp[s] || emon.fixed[s] != PMC_NO_FIXED)
        why[0] = '\0';
    else if (gp_no != why)
        snprintf(why, n, "%s", gp_no);
}

static void emon_setup(const struct pmc_caps *c)
{
    emon.version = c->version;
    unsigned ngp = MIN(c->gp_counters, PMC_MAX_GP_INTEL);
    uint64_t mask = width_mask(c->gp_width);
    uint64_t legacy_max = MIN(mask >> 1, 0x7FFFFFFFull); // bit 31 sign-extends
    for (unsigned i = 0; i < ngp; i++) {
        struct pmc_counter_hw hw = {
            .kind = PMC_COUNTER_GENERAL,
            .number = (uint8_t)i,
            .status_bit = (uint8_t)i,
            .ctl_msr = MSR_IA32_PERFEVTSEL0 + i,
            .ctr_msr = (c->full_width ? MSR_IA32_A_PMC0 : MSR_IA32_PMC0) + i,
            .mask = mask,
            .max_period = c->full_width ? mask >> 1 : legacy_max,
        };
        pmc_counter_add(&hw);
    }
    emon.has_fixed = c->version >= 2 && c->fixed_present != 0 && c->fixed_width > 0;
    uint64_t fmask = width_mask(c->fixed_width);
    for (unsigned f = 0; emon.has_fixed && f < 3; f++) { // CTR3 (topdown slots) unused
        if (!(c->fixed_present & (1u << f)))
            continue;
        struct pmc_counter_hw hw = {
            .kind = PMC_COUNTER_FIXED,
            .number = (uint8_t)f,
            .status_bit = (uint8_t)(PERF_GLOBAL_FIXED_SHIFT + f),
            .ctr_msr = MSR_IA32_FIXED_CTR0 + f,
            .mask = fmask,
            .max_period = c->full_width ? fmask >> 1 : MIN(fmask >> 1, 0x7FFFFFFFull),
        };
        pmc_counter_add(&hw);
    }
    emon.status_bits = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        emon.status_bits |= 1ull << pmc_hw[i].status_bit;
    // CondChgd (version 2+) and, from version 4, CTR_Frz: a counter freeze on
    // PMI (IA32_DEBUGCTL bit 12, set by firmware or by other software after
    // boot) stops every counter until CTR_Frz is written to
    // IA32_PERF_GLOBAL_STATUS_RESET (Intel SDM vol. 3B, "Freezing Counters on
    // PMI"; Linux's handler acknowledges whatever the status shows).
    emon.status_other = 0;
    if (c->version >= 2)
        emon.status_other =
            PERF_GLOBAL_STATUS_COND_CHG | (c->version >= 4 ? PERF_GLOBAL_STATUS_CTR_FRZ : 0);
    emon.debugctl = c->debugctl;
    for (unsigned s = 0; s < ProfileSourceCount; s++)
        gate_source(c, (KPROFILE_SOURCE)s);
}

static void write_global_ctrl(unsigned cpu)
{
    if (emon.version >= 2)
        pmc_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, pmc_enabled_bits(cpu));
}

// FREEZE_PERFMON_ON_PMI off on this CPU: the PMI freezes the counters itself
// (GLOBAL_CTRL = 0) and would otherwise find them frozen again after each
// one. Version 2-3 clear GLOBAL_CTRL on such a freeze, which the thaw writes
// anyway; version 4 sets CTR_Frz, which stops the counters until cleared. A
// hypervisor that refuses the write leaves CTR_Frz to the PMI's acknowledge.
static void clear_freeze(void)
{
    uint64_t v;
    if (emon.debugctl && rdmsr_safe(MSR_IA32_DEBUGCTL, &v) && (v & DEBUGCTL_FREEZE_PERFMON_ON_PMI))
        wrmsr_safe(MSR_IA32_DEBUGCTL, v & ~DEBUGCTL_FREEZE_PERFMON_ON_PMI);
}

// Every declared event select starts at zero (as the Emon interface does).
static NTSTATUS emon_initialize(void)
{
    unsigned cpu = cpu_id();
    PMC_TRACE_STEP(PMC_STEP_INITIALIZE, PMC_TRACE_NO_SOURCE, 0);
    if (emon.version >= 2)
        pmc_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    if (emon.has_fixed)
        pmc_wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0);
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        if (pmc_hw[i].kind == PMC_COUNTER_GENERAL)
            pmc_wrmsr(pmc_hw[i].ctl_msr, 0);
        *pmc_counter(cpu, i) = (struct pmc_counter_cpu){0};
    }
    emon.v1_rearmed[cpu] = 0;
    clear_freeze();
    if (emon.version >= 2)
        pmc_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, emon.status_bits);
    pmc_lapic_write(LAPIC_LVT_PMC, VEC_PMI);
    return STATUS_SUCCESS;
}

// Load counter i with value and then enable it with ctl: a GP counter's event
// select, a fixed counter's 4-bit field of IA32_FIXED_CTR_CTRL (0: leave it
// stopped). The counter is stopped while it is written (Intel SDM vol. 3B,
// architectural performance monitoring: clear EN before writing IA32_PMCx).
static void load_counter(unsigned i, uint64_t value, uint64_t ctl)
{
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    if (hw->kind == PMC_COUNTER_FIXED) {
        unsigned shift = 4 * hw->number;
        uint64_t ctrl = pmc_rdmsr(MSR_IA32_FIXED_CTR_CTRL) & ~(0xFull << shift);
        pmc_wrmsr(MSR_IA32_FIXED_CTR_CTRL, ctrl);
        pmc_wrmsr(hw->ctr_msr, value);
        if (ctl)
            pmc_wrmsr(MSR_IA32_FIXED_CTR_CTRL, ctrl | (ctl << shift));
    } else {
        pmc_wrmsr(hw->ctl_msr, 0);
        pmc_wrmsr(hw->ctr_msr, value);
        if (ctl)
            pmc_wrmsr(hw->ctl_msr, ctl);
    }
}

// A sampling counter's event select: the source's event in the counter's
// levels, with the overflow interrupt.
static uint64_t sampling_select(const struct pmc_counter_cpu *c)
{
    return pmc_select_levels(profile_sources[c->source].intel_select, c->levels) | PERFEVTSEL_INT |
           PERFEVTSEL_EN;
}

// Load a sampling counter to interrupt after its period (enable: at once;
// version 1's reload enables it later, in emon_thaw). A fixed counter's
// field is its levels (1 OS, 2 USR, 3 both) and PMI (Intel SDM vol. 3B,
// "Fixed-function Performance Counters").
static void arm_counter(unsigned i, uint64_t value, bool enable)
{
    const struct pmc_counter_cpu *c = pmc_counter(cpu_id(), i);
    if (pmc_hw[i].kind == PMC_COUNTER_FIXED)
        load_counter(i, value, c->levels | FIXED_CTR_CTRL_PMI);
    else
        load_counter(i, value, enable ? sampling_select(c) : 0);
}

static NTSTATUS emon_enable(KPROFILE_SOURCE source, unsigned levels)
{
    unsigned cpu = cpu_id();
    if (emon.reason[source][0])
        return STATUS_NOT_SUPPORTED;
    if (pmc_counter_find(cpu, source) >= 0)
        return STATUS_PROFILING_NOT_STOPPED;
    int i = pmc_counter_claim(cpu, source, levels, emon.fixed[source], emon.gp[source],
                              pmc_source_interval[source]);
    if (i < 0) {
        PMC_TRACE_STEP(PMC_STEP_NO_COUNTER, source, 0);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    PMC_TRACE_STEP(PMC_STEP_ENABLE, source, pmc_hw[i].ctr_msr);
    arm_counter((unsigned)i, pmc_arm_value(&pmc_hw[i], pmc_counter(cpu, (unsigned)i)->period),
                true);
    pmc_counter_loaded(cpu, (unsigned)i);
    write_global_ctrl(cpu);
    return STATUS_SUCCESS;
}

// Clear counter i's enables: it neither counts nor interrupts.
static void halt_counter(unsigned i)
{
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    if (hw->kind == PMC_COUNTER_FIXED) {
        uint64_t ctrl = pmc_rdmsr(MSR_IA32_FIXED_CTR_CTRL);
        pmc_wrmsr(MSR_IA32_FIXED_CTR_CTRL, ctrl & ~(0xFull << (4 * hw->number)));
    } else {
        pmc_wrmsr(hw->ctl_msr, 0);
    }
}

// Stop a sampling counter; the caller decides who owns it. Marked stopped
// before it is halted: version 1 has no global enable, so the PMI's re-arm
// (emon_reload, emon_thaw) writes the counter's IA32_PERFEVTSELx back with
// EN and INT set (Intel SDM vol. 3B, 21.2.1 "Architectural Performance
// Monitoring Version 1"), and an NMI taken right after the halting wrmsr
// would otherwise leave the counter enabled, interrupting for no owner.
static void emon_stop_counter(unsigned i)
{
    pmc_counter_stopping(cpu_id(), i);
    halt_counter(i);
}

static void emon_disable(KPROFILE_SOURCE source)
{
    pmc_counter_disable(&emon_profile_interface, source);
}

static NTSTATUS emon_set_interval(KPROFILE_SOURCE source, uint64_t *interval)
{
    if (emon.reason[source][0])
        return STATUS_NOT_SUPPORTED;
    int i = pmc_counter_preferred(emon.fixed[source], emon.gp[source]);
    if (i < 0)
        return STATUS_NOT_SUPPORTED;
    *interval = pmc_period_clamp(*interval, pmc_hw[i].max_period);
    pmc_source_interval[source] = *interval;
    PMC_TRACE_STEP(PMC_STEP_SET_INTERVAL, source, *interval);
    return STATUS_SUCCESS;
}

static void add_overflow(struct overflow_status *o, unsigned i, const struct pmc_counter_cpu *c)
{
    o->Counter[o->Number] = (uint8_t)i;
    o->Source[o->Number] = (KPROFILE_SOURCE)c->source;
    o->Number++;
}

static void emon_check_overflow(struct overflow_status *o)
{
    unsigned cpu = cpu_id();
    o->Number = 0;
    o->Mask = 0;
    if (emon.version >= 2) {
        uint64_t status = pmc_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
        o->Mask = status & (emon.status_bits | emon.status_other);
        for (unsigned i = 0; i < pmc_ncounters; i++) {
            struct pmc_counter_cpu *c = pmc_counter(cpu, i);
            if ((status >> pmc_hw[i].status_bit) & 1 && c->period && !c->stopped)
                add_overflow(o, i, c);
        }
        return;
    }
    for (unsigned i = 0; i < pmc_ncounters; i++) { // version 1: the top bit
        struct pmc_counter_cpu *c = pmc_counter(cpu, i);
        if (c->period && !c->stopped &&
            pmc_counter_wrapped(&pmc_hw[i], pmc_rdmsr(pmc_hw[i].ctr_msr)))
            add_overflow(o, i, c);
    }
}

static void emon_query(KPROFILE_SOURCE source, struct pmc_source_query *q)
{
    int i = pmc_counter_preferred(emon.fixed[source], emon.gp[source]);
    q->supported = emon.reason[source][0] == '\0' && i >= 0;
    q->reason = emon.reason[source][0] ? emon.reason[source] : i < 0 ? "no counter" : "";
    q->kind = i >= 0 ? pmc_hw[i].kind : PMC_COUNTER_NONE;
    q->max_interval = i >= 0 ? pmc_hw[i].max_period : 0;
}

static bool emon_freeze(void)
{
    if (emon.version >= 2)
        pmc_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    return emon.version >= 2;
}

// Version 1 has no freeze: the counter is stopped while it is reloaded and
// stays stopped until emon_thaw, so the PMI path's own events are not counted
// against its new period.
static void emon_reload(unsigned i, uint64_t period, uint64_t *lost)
{
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    uint64_t value = pmc_reload_value(hw, period, pmc_rdmsr(hw->ctr_msr), lost);
    if (emon.version >= 2) { // frozen by GLOBAL_CTRL = 0: write in place
        pmc_wrmsr(hw->ctr_msr, value);
        return;
    }
    arm_counter(i, value, false);
    emon.v1_rearmed[cpu_id()] |= 1u << i;
}

static void emon_ack(uint64_t mask)
{
    if (emon.version >= 2 && mask)
        pmc_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, mask);
}

static void emon_thaw(void)
{
    unsigned cpu = cpu_id();
    if (emon.version >= 2) {
        write_global_ctrl(cpu);
        return;
    }
    uint32_t rearmed = emon.v1_rearmed[cpu];
    emon.v1_rearmed[cpu] = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        const struct pmc_counter_cpu *c = pmc_counter(cpu, i);
        if ((rearmed >> i) & 1 && c->period && !c->stopped)
            pmc_wrmsr(pmc_hw[i].ctl_msr, sampling_select(c));
    }
}

// A fixed counter counts its one event; every GP counter counts every
// architectural event (Intel SDM vol. 3B, 21.2.1) but reference cycles'.
static uint32_t emon_counters_for(KPROFILE_SOURCE source)
{
    if (emon.reason[source][0])
        return 0;
    uint32_t m = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        bool fixed = pmc_hw[i].kind == PMC_COUNTER_FIXED;
        if ((!fixed && emon.gp[source]) || (fixed && pmc_hw[i].number == emon.fixed[source]))
            m |= 1u << i;
    }
    return m;
}

static void emon_start_counting(unsigned i, KPROFILE_SOURCE source, unsigned levels, uint64_t value)
{
    if (pmc_hw[i].kind == PMC_COUNTER_FIXED)
        load_counter(i, value, levels);
    else
        load_counter(i, value,
                     pmc_select_levels(profile_sources[source].intel_select, levels) |
                         PERFEVTSEL_EN);
    write_global_ctrl(cpu_id());
}

static void emon_stop_counting(unsigned i)
{
    halt_counter(i);
    write_global_ctrl(cpu_id());
}

const struct halp_profile_interface emon_profile_interface = {
    .name = "emon",
    .Setup = emon_setup,
    .InitializeProfiling = emon_initialize,
    .EnableMonitoring = emon_enable,
    .DisableMonitoring = emon_disable,
    .SetInterval = emon_set_interval,
    .CheckOverflowStatus = emon_check_overflow,
    .QueryInformation = emon_query,
    .FreezeCounters = emon_freeze,
    .ReloadCounter = emon_reload,
    .StopCounter = emon_stop_counter,
    .AcknowledgeOverflow = emon_ack,
    .ThawCounters = emon_thaw,
    .CountersFor = emon_counters_for,
    .StartCounting = emon_start_counting,
    .StopCounting = emon_stop_counting,
};
