// The AMD64 profile interface: PERF_CTLn/PERF_CTRn pairs, 48-bit counters.
//
// Four legacy pairs at K7_PERF_CTL0/CTR0, or six (PerfCtrExtCore) interleaved
// at F15H_PERF_CTL0 + 2n. Without PerfMonV2 there is no global status: an
// overflowed counter is one whose bit 47 has come back clear. With PerfMonV2,
// AMD_PERF_GLOBAL_CTL gates every counter and GLOBAL_STATUS/STATUS_CLR report
// and acknowledge overflows. AMD's LVTPC does not mask itself on delivery.
// Event encodings depend on the family (hal/profile_source.c: pmc_amd_event).
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/vectors.h"

#include "pmc/hal/detect.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmu_regs.h"
#include "pmc/hal/trace.h"

#define AMD_COUNTER_MASK ((1ull << 48) - 1)

static struct {
    bool v2;                                     // PerfMonV2 global registers
    uint64_t status_bits;                        // GLOBAL_STATUS bits of our counters
    struct pmc_amd_event ev[ProfileSourceCount]; // each source's event on this family
    uint32_t restricted;                         // counters some event is confined to
} amd;

static void amd_setup(const struct pmc_caps *c)
{
    amd.v2 = c->amd_perfmon_v2;
    amd.restricted = 0;
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        amd.ev[s] = pmc_amd_event((enum pmc_amd_kind)profile_sources[s].amd_kind, c->family);
        if (amd.ev[s].select && (amd.ev[s].counters & 0x3F) != 0x3F)
            amd.restricted |= amd.ev[s].counters;
    }
    for (unsigned i = 0; i < c->amd_counters; i++) {
        struct pmc_counter_hw hw = {
            .kind = PMC_COUNTER_GENERAL,
            .number = (uint8_t)i,
            .status_bit = (uint8_t)i,
            .ctl_msr = c->amd_perfctr_core ? MSR_F15H_PERF_CTL0 + 2 * i : MSR_K7_PERF_CTL0 + i,
            .ctr_msr = c->amd_perfctr_core ? MSR_F15H_PERF_CTR0 + 2 * i : MSR_K7_PERF_CTR0 + i,
            .mask = AMD_COUNTER_MASK,
            .max_period = AMD_COUNTER_MASK >> 1,
        };
        pmc_counter_add(&hw);
    }
    amd.status_bits = pmc_ncounters >= 64 ? ~0ull : (1ull << pmc_ncounters) - 1;
}

static bool amd_supported(KPROFILE_SOURCE source)
{
    return source != ProfileTime && amd.ev[source].select != 0 && pmc_ncounters > 0;
}

// Counters a source's event may use, among those this CPU has.
static uint32_t usable(KPROFILE_SOURCE source)
{
    return amd.ev[source].counters & (uint32_t)amd.status_bits;
}

// Claim a counter: an event that may use any counter first tries those no
// event is confined to (family 15h: PERF_CTR3-5), leaving PERF_CTR0-2 to the
// events that can only count there.
static int claim(unsigned cpu, KPROFILE_SOURCE source, unsigned levels)
{
    uint32_t mask = usable(source), spare = mask & ~amd.restricted;
    int i = -1;
    if (amd.restricted && spare != mask && spare)
        i = pmc_counter_claim(cpu, source, levels, PMC_NO_FIXED, spare,
                              pmc_source_interval[source]);
    if (i < 0)
        i = pmc_counter_claim(cpu, source, levels, PMC_NO_FIXED, mask, pmc_source_interval[source]);
    return i;
}

static void write_global_ctl(unsigned cpu)
{
    if (amd.v2)
        pmc_wrmsr(MSR_AMD_PERF_GLOBAL_CTL, pmc_enabled_bits(cpu));
}

static NTSTATUS amd_initialize(void)
{
    unsigned cpu = cpu_id();
    PMC_TRACE_STEP(PMC_STEP_INITIALIZE, PMC_TRACE_NO_SOURCE, 0);
    if (amd.v2)
        pmc_wrmsr(MSR_AMD_PERF_GLOBAL_CTL, 0);
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        pmc_wrmsr(pmc_hw[i].ctl_msr, 0);
        *pmc_counter(cpu, i) = (struct pmc_counter_cpu){0};
    }
    if (amd.v2)
        pmc_wrmsr(MSR_AMD_PERF_GLOBAL_STATUS_CLR, amd.status_bits);
    pmc_lapic_write(LAPIC_LVT_PMC, VEC_PMI);
    return STATUS_SUCCESS;
}

// The event select of source in levels (USR bit 16, OS bit 17: APM vol. 2,
// 13.2.1), enabled.
static uint64_t amd_select(KPROFILE_SOURCE source, unsigned levels)
{
    return pmc_select_levels(amd.ev[source].select, levels) | PERFEVTSEL_EN;
}

static NTSTATUS amd_enable(KPROFILE_SOURCE source, unsigned levels)
{
    unsigned cpu = cpu_id();
    if (!amd_supported(source))
        return STATUS_NOT_SUPPORTED;
    if (pmc_counter_find(cpu, source) >= 0)
        return STATUS_PROFILING_NOT_STOPPED;
    int i = claim(cpu, source, levels);
    if (i < 0) {
        PMC_TRACE_STEP(PMC_STEP_NO_COUNTER, source, 0);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    PMC_TRACE_STEP(PMC_STEP_ENABLE, source, pmc_hw[i].ctr_msr);
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    pmc_wrmsr(hw->ctl_msr, 0); // stopped while loaded
    pmc_wrmsr(hw->ctr_msr, pmc_arm_value(hw, pmc_counter(cpu, (unsigned)i)->period));
    pmc_wrmsr(hw->ctl_msr, amd_select(source, levels) | PERFEVTSEL_INT);
    pmc_counter_loaded(cpu, (unsigned)i);
    write_global_ctl(cpu);
    return STATUS_SUCCESS;
}

// Marked stopped before it is halted, as hal/emon.c's: a PMI taken right after
// the halting wrmsr does not sample a counter being stopped.
static void amd_stop_counter(unsigned i)
{
    pmc_counter_stopping(cpu_id(), i);
    pmc_wrmsr(pmc_hw[i].ctl_msr, 0);
}

static void amd_disable(KPROFILE_SOURCE source)
{
    pmc_counter_disable(&amd64_profile_interface, source);
}

static NTSTATUS amd_set_interval(KPROFILE_SOURCE source, uint64_t *interval)
{
    if (!amd_supported(source))
        return STATUS_NOT_SUPPORTED;
    *interval = pmc_period_clamp(*interval, pmc_hw[0].max_period);
    pmc_source_interval[source] = *interval;
    PMC_TRACE_STEP(PMC_STEP_SET_INTERVAL, source, *interval);
    return STATUS_SUCCESS;
}

static void amd_check_overflow(struct overflow_status *o)
{
    unsigned cpu = cpu_id();
    uint64_t status = 0;
    o->Number = 0;
    o->Mask = 0;
    if (amd.v2) {
        status = pmc_rdmsr(MSR_AMD_PERF_GLOBAL_STATUS);
        o->Mask = status & amd.status_bits;
    }
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        struct pmc_counter_cpu *c = pmc_counter(cpu, i);
        if (!c->period || c->stopped)
            continue;
        bool hit = amd.v2 ? (status >> i) & 1
                          : pmc_counter_wrapped(&pmc_hw[i], pmc_rdmsr(pmc_hw[i].ctr_msr));
        if (hit) {
            o->Counter[o->Number] = (uint8_t)i;
            o->Source[o->Number] = (KPROFILE_SOURCE)c->source;
            o->Number++;
        }
    }
}

static void amd_query(KPROFILE_SOURCE source, struct pmc_source_query *q)
{
    q->supported = amd_supported(source);
    q->reason = q->supported                       ? ""
                : source == ProfileTime            ? "counted by the timer, not a PMC"
                : amd.ev[source].reason[0] != '\0' ? amd.ev[source].reason
                                                   : "no counter";
    q->kind = q->supported ? PMC_COUNTER_GENERAL : PMC_COUNTER_NONE;
    q->max_interval = q->supported ? pmc_hw[0].max_period : 0;
}

static bool amd_freeze(void)
{
    if (amd.v2)
        pmc_wrmsr(MSR_AMD_PERF_GLOBAL_CTL, 0);
    return amd.v2;
}

static void amd_reload(unsigned i, uint64_t period, uint64_t *lost)
{
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    pmc_wrmsr(hw->ctr_msr, pmc_reload_value(hw, period, pmc_rdmsr(hw->ctr_msr), lost));
}

static void amd_ack(uint64_t mask)
{
    if (amd.v2 && mask)
        pmc_wrmsr(MSR_AMD_PERF_GLOBAL_STATUS_CLR, mask);
}

static void amd_thaw(void)
{
    write_global_ctl(cpu_id());
}

static uint32_t amd_counters_for(KPROFILE_SOURCE source)
{
    return amd_supported(source) ? usable(source) : 0;
}

static void amd_start_counting(unsigned i, KPROFILE_SOURCE source, unsigned levels, uint64_t value)
{
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    pmc_wrmsr(hw->ctl_msr, 0); // stopped while loaded
    pmc_wrmsr(hw->ctr_msr, value);
    pmc_wrmsr(hw->ctl_msr, amd_select(source, levels));
    write_global_ctl(cpu_id());
}

static void amd_stop_counting(unsigned i)
{
    pmc_wrmsr(pmc_hw[i].ctl_msr, 0);
    write_global_ctl(cpu_id());
}

const struct halp_profile_interface amd64_profile_interface = {
    .name = "amd64",
    .Setup = amd_setup,
    .InitializeProfiling = amd_initialize,
    .EnableMonitoring = amd_enable,
    .DisableMonitoring = amd_disable,
    .SetInterval = amd_set_interval,
    .CheckOverflowStatus = amd_check_overflow,
    .QueryInformation = amd_query,
    .FreezeCounters = amd_freeze,
    .ReloadCounter = amd_reload,
    .StopCounter = amd_stop_counter,
    .AcknowledgeOverflow = amd_ack,
    .ThawCounters = amd_thaw,
    .CountersFor = amd_counters_for,
    .StartCounting = amd_start_counting,
    .StopCounting = amd_stop_counting,
};
