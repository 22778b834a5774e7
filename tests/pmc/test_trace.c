// `pmc trace`: the binary records each CPU's ring holds (as SysPmcTrace hands
// them out; their text is userland's, tested in userland/tests), and `pmc info`.
#include <stdio.h>
#include <string.h>
#include "pmc/hal/deliver.h"
#include "pmc/hal/text.h"
#include "arch/x86/lapic.h"
#include "tests.h"

// A drain of every ring into memory, as SysPmcTrace's does into user memory.
static uint8_t out[MODEL_MAX_CPUS * (PMC_TRACE_RING_BYTES + sizeof(struct pmclog_lost))];
static uint64_t fail_at = UINT64_MAX; // a copy to here fails, as a fault would

static NTSTATUS copy_mem(void *ctx, uint64_t pos, const void *rec, uint32_t size)
{
    if (pos + size > fail_at)
        return STATUS_ACCESS_VIOLATION;
    memcpy((uint8_t *)ctx + pos, rec, size);
    return STATUS_SUCCESS;
}

// What the last drain gave, by CPU: its trace records in order, its lost
// count, its map records; and whether every record was well formed.
static struct drained {
    const struct pmclog_trace *rec[MODEL_MAX_CPUS][PMC_TRACE_RING_RECORDS];
    size_t n[MODEL_MAX_CPUS];
    uint64_t lost[MODEL_MAX_CPUS];
    const struct pmclog_map *map[MODEL_MAX_CPUS]; // the last of each CPU
    unsigned maps;
    bool well_formed;
    NTSTATUS status;
    uint64_t bytes;
} d;

static void drain(uint64_t len)
{
    memset(&d, 0, sizeof d);
    d.well_formed = true;
    struct ring_sink s = {.copy = copy_mem, .ctx = out, .len = len};
    d.status = pmc_trace_drain(&s);
    d.bytes = s.pos;
    unsigned last_cpu = 0;
    uint64_t last_tsc = 0;
    for (uint64_t pos = 0; pos < s.pos;) {
        const struct pmclog_header *h = (const void *)(out + pos);
        unsigned cpu = h->cpu;
        if (h->size < sizeof *h || h->size % 8 || pos + h->size > s.pos || cpu >= MODEL_MAX_CPUS ||
            cpu < last_cpu) {
            d.well_formed = false;
            return;
        }
        if (cpu != last_cpu)
            last_tsc = 0;
        last_cpu = cpu;
        if (h->type == PMCLOG_TRACE) {
            const struct pmclog_trace *r = (const void *)h;
            d.well_formed = d.well_formed && h->size == sizeof *r && r->reserved == 0 &&
                            h->tsc >= last_tsc && d.n[cpu] < PMC_TRACE_RING_RECORDS;
            last_tsc = h->tsc;
            if (d.n[cpu] < PMC_TRACE_RING_RECORDS)
                d.rec[cpu][d.n[cpu]++] = r;
        } else if (h->type == PMCLOG_LOST) {
            d.lost[cpu] += ((const struct pmclog_lost *)h)->count;
        } else if (h->type == PMCLOG_MAP) {
            d.map[cpu] = (const void *)h;
            d.maps++;
        } else {
            d.well_formed = false;
        }
        pos += h->size;
    }
}

// One expected record: a register access, or a HAL step of a source.
struct want {
    uint16_t kind;
    uint32_t reg;
    uint64_t value;
    uint16_t source;
};
#define WR(msr, v) \
    { \
        PMC_TRACE_WRMSR, (msr), (v), PMC_TRACE_NO_SOURCE \
    }
#define RD(msr, v) \
    { \
        PMC_TRACE_RDMSR, (msr), (v), PMC_TRACE_NO_SOURCE \
    }
#define LAPIC(reg, v) \
    { \
        PMC_TRACE_LAPIC, (reg), (v), PMC_TRACE_NO_SOURCE \
    }
#define STEP(step, src, v) \
    { \
        PMC_TRACE_STEP, (step), (v), (src) \
    }
#define WANT(...)           ((const struct want[]){__VA_ARGS__})
#define NWANT(...)          (sizeof(WANT(__VA_ARGS__)) / sizeof(struct want))
#define HAS(cpu, what, ...) has(cpu, WANT(__VA_ARGS__), NWANT(__VA_ARGS__), what)

static bool same(const struct pmclog_trace *r, const struct want *w)
{
    return r->kind == w->kind && r->reg == w->reg && r->value == w->value && r->source == w->source;
}

// The records w[0..n) appear one after another among cpu's records.
static bool has(unsigned cpu, const struct want *w, size_t n, const char *what)
{
    for (size_t i = 0; i + n <= d.n[cpu]; i++) {
        size_t k = 0;
        while (k < n && same(d.rec[cpu][i + k], &w[k]))
            k++;
        if (k == n)
            return tap_ok(true, "%s", what);
    }
    tap_ok(false, "%s", what);
    for (size_t k = 0; k < n; k++)
        tap_diag("wanted kind %u reg 0x%x value 0x%lx source 0x%x", w[k].kind, w[k].reg,
                 (unsigned long)w[k].value, w[k].source);
    for (size_t i = 0; i < d.n[cpu] && i < 64; i++)
        tap_diag("cpu%u has kind %u reg 0x%x value 0x%lx source 0x%x", cpu, d.rec[cpu][i]->kind,
                 d.rec[cpu][i]->reg, (unsigned long)d.rec[cpu][i]->value, d.rec[cpu][i]->source);
    return false;
}

static size_t steps(unsigned cpu, uint32_t step)
{
    size_t n = 0;
    for (size_t i = 0; i < d.n[cpu]; i++)
        n += d.rec[cpu][i]->kind == PMC_TRACE_STEP && d.rec[cpu][i]->reg == step;
    return n;
}

static void check_intel(void)
{
    boot(&MODEL_INTEL_KVM_V2);
    tap_ok(!pmc_trace_on, "trace is off by default");
    start_ok(ProfileLLCMisses);
    drain(sizeof out);
    tap_ok(d.bytes == 0 && d.status == STATUS_SUCCESS, "off, never on: nothing recorded");
    stop_ok(ProfileLLCMisses);

    STATUS_EQ(pmc_trace_enable(), STATUS_SUCCESS, "pmc_trace_enable");
    set_interval(ProfileLLCMisses, 1000);
    start_ok(ProfileLLCMisses);
    start_ok(ProfileInstructionRetired);
    model_retire(0, EV_LLC_MISSES, 1000, 0xFFFFFFFF80123456ull, false);
    stop_ok(ProfileLLCMisses);
    drain(sizeof out);
    tap_ok(d.status == STATUS_SUCCESS && d.well_formed,
           "a drain: PMCLOG_TRACE records of 48 bytes, CPU by CPU, time in order");
    const unsigned LLC = ProfileLLCMisses, INST = ProfileInstructionRetired;
    HAS(0, "kvm-v2 trace: SetInterval", STEP(PMC_STEP_SET_INTERVAL, LLC, 1000));
    HAS(0, "kvm-v2 trace: start, the event select off, the counter, the select, the enable",
        STEP(PMC_STEP_START, LLC, 0), STEP(PMC_STEP_ENABLE, LLC, MSR_IA32_A_PMC0),
        WR(MSR_IA32_PERFEVTSEL0, 0), WR(MSR_IA32_A_PMC0, 0xfffffffffc18),
        WR(MSR_IA32_PERFEVTSEL0, 0x0053412e), WR(MSR_IA32_PERF_GLOBAL_CTRL, 0x1));
    HAS(0, "kvm-v2 trace: the fixed counter's EnableMonitoring",
        STEP(PMC_STEP_ENABLE, INST, MSR_IA32_FIXED_CTR0));
    HAS(0, "kvm-v2 trace: the fixed counter, its control, the global enable",
        WR(MSR_IA32_FIXED_CTR0, 0xfffffff0bdc0), WR(MSR_IA32_FIXED_CTR_CTRL, 0xb),
        WR(MSR_IA32_PERF_GLOBAL_CTRL, 0x100000001));
    HAS(0, "kvm-v2 trace: the PMI: freeze, status, sample, re-arm, acknowledge, unmask, thaw",
        STEP(PMC_STEP_PMI, PMC_TRACE_NO_SOURCE, 0), WR(MSR_IA32_PERF_GLOBAL_CTRL, 0),
        RD(MSR_IA32_PERF_GLOBAL_STATUS, 1), STEP(PMC_STEP_SAMPLE, LLC, 0xffffffff80123456),
        RD(MSR_IA32_A_PMC0, 0), WR(MSR_IA32_A_PMC0, 0xfffffffffc18),
        WR(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1), RD(MSR_IA32_PERF_GLOBAL_STATUS, 0),
        LAPIC(LAPIC_LVT_PMC, 0xe1), WR(MSR_IA32_PERF_GLOBAL_CTRL, 0x100000001));
    HAS(0, "kvm-v2 trace: stop", STEP(PMC_STEP_STOP, LLC, 0),
        STEP(PMC_STEP_DISABLE, LLC, MSR_IA32_A_PMC0), WR(MSR_IA32_PERFEVTSEL0, 0),
        WR(MSR_IA32_PERF_GLOBAL_CTRL, 0x100000000), WR(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1));
    const struct pmclog_trace *first = d.rec[0][0];
    tap_ok(first->h.type == PMCLOG_TRACE && first->h.cpu == 0 && first->h.size == 48 &&
               first->pid == 0 && first->flags == 0 && first->arg == 0,
           "a record's header: type, CPU, size; no filter: pid and flags 0");
    HAS(2, "cpu2's ring holds its own EnableMonitoring",
        STEP(PMC_STEP_ENABLE, LLC, MSR_IA32_A_PMC0));
    bool own = true;
    for (unsigned cpu = 0; cpu < 4; cpu++)
        for (size_t i = 0; i < d.n[cpu]; i++)
            own = own && d.rec[cpu][i]->h.cpu == cpu;
    tap_ok(own && steps(2, PMC_STEP_START) == 0 && steps(2, PMC_STEP_PMI) == 0,
           "cpu2's ring holds its own steps only (the HAL call and the PMI ran on cpu0)");
    drain(sizeof out);
    tap_ok(d.status == STATUS_SUCCESS && d.bytes == 0, "a drain consumes: the next one is empty");

    pmc_trace_disable();
    start_ok(ProfileLLCMisses);
    model_retire(0, EV_LLC_MISSES, 5000, 0x1000, false);
    drain(sizeof out);
    tap_eq(d.bytes, 0, "disabled: no new records");
    pmc_trace_enable();
    model_retire(0, EV_LLC_MISSES, 5000, 0x1000, false);
    pmc_trace_clear();
    drain(sizeof out);
    tap_eq(d.bytes, 0, "clear empties the rings");

    // Far more PMIs than the ring holds records (~10 records each), spread over
    // enough model time that the throttle leaves most of them to happen.
    uint64_t lost_before = pmc_trace_lost(0), samples_before = samples.total;
    for (int i = 0; i < 100; i++) {
        model_retire(0, EV_LLC_MISSES, 100 * 1000, 0x1000, false);
        model_advance_time(10 * 1000 * 1000);
    }
    uint64_t lost = pmc_trace_lost(0) - lost_before;
    drain(sizeof out);
    tap_ok(d.well_formed && d.n[0] == PMC_TRACE_RING_RECORDS,
           "a full ring hands out the %u records it holds", PMC_TRACE_RING_RECORDS);
    tap_ok(lost > 0 && d.lost[0] == lost,
           "the records that found it full are lost and counted: a PMCLOG_LOST of %lu after "
           "cpu0's records",
           (unsigned long)lost);
    tap_ok(same(d.rec[0][0], &WANT(STEP(PMC_STEP_PMI, PMC_TRACE_NO_SOURCE, 0))[0]) &&
               d.rec[0][0]->h.tsc < d.rec[0][PMC_TRACE_RING_RECORDS - 1]->h.tsc,
           "a full ring keeps its oldest records: the first PMI's first, oldest first");
    uint64_t kept = steps(0, PMC_STEP_SAMPLE), taken = samples.total - samples_before;
    tap_ok(kept > 0 && kept < taken,
           "%lu of the %lu samples taken are in the ring: the later "
           "ones were lost",
           (unsigned long)kept, (unsigned long)taken);
    model_retire(0, EV_LLC_MISSES, 100 * 1000, 0x1000, false);
    drain(sizeof out);
    tap_ok(d.n[0] > 0 && d.lost[0] == 0 &&
               same(d.rec[0][0], &WANT(STEP(PMC_STEP_PMI, PMC_TRACE_NO_SOURCE, 0))[0]),
           "drained, the ring takes records again; the loss was reported once");
    finish("kvm-v2 trace");
}

// A stand-in for the system-call layer's filter: keeps the samples of cpu 0
// only, as process 7 under a profile, and names process 7 once.
static unsigned filtered, named;

static bool test_filter(struct pmclog_trace *r)
{
    filtered++;
    if (r->h.cpu != 0)
        return false;
    r->pid = 7;
    r->flags |= PMC_TRACE_PROFILED;
    if (!named++) {
        struct pmclog_map m = {.h.type = PMCLOG_MAP, .pid = 7, .parent = 1};
        strcpy(m.name, "primes");
        pmc_trace_write_irqoff(&m.h, sizeof m);
    }
    return true;
}

static void check_filter(void)
{
    boot(&MODEL_INTEL_KVM_V2);
    pmc_trace_enable();
    pmc_trace_sample_filter = test_filter;
    set_interval(ProfileLLCMisses, 1000);
    start_ok(ProfileLLCMisses);
    model_retire(0, EV_LLC_MISSES, 1000, 0x401000, true);
    model_retire(1, EV_LLC_MISSES, 1000, 0x402000, true);
    drain(sizeof out);
    const struct pmclog_trace *sample = NULL;
    for (size_t i = 0; i < d.n[0]; i++)
        if (d.rec[0][i]->kind == PMC_TRACE_STEP && d.rec[0][i]->reg == PMC_STEP_SAMPLE)
            sample = d.rec[0][i];
    tap_ok(sample && sample->value == 0x401000 && sample->pid == 7 &&
               sample->flags == PMC_TRACE_PROFILED,
           "filter: cpu0's sample kept, with the pid and flags the filter set");
    tap_ok(steps(1, PMC_STEP_SAMPLE) == 0 && steps(1, PMC_STEP_PMI) == 0 && filtered >= 4,
           "filter: cpu1's PMI and sample refused, no record");
    HAS(1, "filter: the register accesses of cpu1's PMI are still recorded",
        RD(MSR_IA32_PERF_GLOBAL_STATUS, 1));
    tap_ok(d.map[0] && d.map[0]->pid == 7 && d.map[0]->parent == 1 &&
               strcmp(d.map[0]->name, "primes") == 0 && d.map[0]->h.cpu == 0 &&
               d.map[0]->h.size == sizeof(struct pmclog_map) && d.maps == 1,
           "filter: a PMCLOG_MAP record written by the filter names the process once");
    pmc_trace_sample_filter = NULL;
    finish("trace filter");
}

// The same start twice from a fresh boot: once drained whole for reference,
// once in pieces.
static void check_partial_drain(void)
{
    static struct want ref[64];
    size_t all = 0;
    boot(&MODEL_INTEL_KVM_V2);
    pmc_trace_enable();
    start_ok(ProfileLLCMisses);
    drain(sizeof out);
    for (; all < d.n[0] && all < 64; all++)
        ref[all] = (struct want){d.rec[0][all]->kind, d.rec[0][all]->reg, d.rec[0][all]->value,
                                 d.rec[0][all]->source};
    finish("trace for reference");

    boot(&MODEL_INTEL_KVM_V2);
    pmc_trace_enable();
    start_ok(ProfileLLCMisses);
    drain(3 * sizeof(struct pmclog_trace) - 8);
    tap_ok(all > 4 && d.status == STATUS_SUCCESS && d.n[0] == 2 && d.bytes == 96 &&
               same(d.rec[0][0], &ref[0]) && same(d.rec[0][1], &ref[1]),
           "a destination of 2.8 records takes the first two, whole");
    fail_at = 2 * sizeof(struct pmclog_trace);
    drain(sizeof out);
    tap_ok(d.status == STATUS_ACCESS_VIOLATION && d.n[0] == 2 && same(d.rec[0][0], &ref[2]) &&
               same(d.rec[0][1], &ref[3]),
           "a copy that fails stops the drain with its status, after the records before it");
    fail_at = UINT64_MAX;
    drain(sizeof out);
    bool rest = d.status == STATUS_SUCCESS && d.n[0] == all - 4;
    for (size_t i = 0; rest && i < d.n[0]; i++)
        rest = same(d.rec[0][i], &ref[4 + i]);
    tap_ok(rest, "... and the next drain starts at the record whose copy failed, none lost");
    finish("partial drain");
}

static void check_info(void)
{
    tap_section("pmc info");
    boot(&MODEL_INTEL_KVM_V2);
    start_ok(ProfileLLCMisses);
    char info[8192];
    int n = pmc_info(info, sizeof(info));
    tap_ok(n > 0 && (size_t)n == strlen(info), "pmc_info fits and returns its length");
    tap_contains(info, "pmc: interface emon: version 2", "info: the boot line");
    tap_contains(info, "CPUID.0AH: eax 0x08300802 ebx 0x00000080 ecx 0x00000000 edx 0x00000603",
                 "info: raw CPUID.0AH");
    tap_contains(info, "topdown-slots=no", "info: EBX decoded per event");
    tap_contains(info, "IA32_PERF_CAPABILITIES 0x2003, full-width writes yes",
                 "info: PERF_CAPABILITIES");
    tap_contains(info,
                 "IA32_A_PMC0      general max period 140737488355327: ProfileLLCMisses on 4 CPUs",
                 "info: counters in use");
    tap_contains(info, "0x1f ProfileBranchMispredictsRetired  general interval 1000000",
                 "info: supported sources with intervals");
    tap_contains(info, "0x01 ProfileAlignmentFixup            unsupported: no architectural event",
                 "info: unsupported sources with reasons");
    tap_ok(strstr(info, "  0x17 ProfileLoadLinkedIssues ") &&
               strstr(info, "  0x19 ProfileUnhaltedCoreCycles ") && !strstr(info, "  0x18 ") &&
               !strstr(info, "ProfileMaximum"),
           "info: no ProfileMaximum row between 0x17 and 0x19 (as SysProfileSources)");
    tap_eq((uint64_t)pmc_info(NULL, 0), (uint64_t)n, "pmc_info(NULL, 0) measures");
    finish("info");

    char name[32];
    tap_streq(pmc_msr_name(0xC0010203, name, sizeof(name)), "F15H_PERF_CTR1",
              "MSR name of 0xC0010203 (info, detect)");
    tap_streq(pmc_msr_name(0x390, name, sizeof(name)), "IA32_PERF_GLOBAL_OVF_CTRL",
              "MSR name of 0x390");
    tap_ok(pmc_msr_name(0x10, name, sizeof(name)) == NULL, "not a PMU MSR: no name");
}

static void check_v1_and_amd(void)
{
    boot(&MODEL_INTEL_V1);
    pmc_trace_enable();
    start_ok(ProfileTotalCycles);
    drain(sizeof out);
    HAS(1, "v1 trace: the event select", WR(MSR_IA32_PERFEVTSEL0, 0x0053003c));
    HAS(1, "v1 trace: the legacy counter write", WR(MSR_IA32_PMC0, 0xfffff0bdc0));
    finish("v1 trace");

    boot(&MODEL_AMD_V2);
    pmc_trace_enable();
    start_ok(ProfileLLCReference);
    model_retire(0, EV_LLC_REFS, 1000000, 0xFFFFFFFF80123456ull, false);
    drain(sizeof out);
    HAS(0, "amd-v2 (family 19h) trace: PERF_CTL0", WR(MSR_F15H_PERF_CTL0, 0x0053ff60));
    HAS(0, "amd-v2 trace: the PMI reads PerfMonV2 status", RD(MSR_AMD_PERF_GLOBAL_STATUS, 1),
        STEP(PMC_STEP_SAMPLE, ProfileLLCReference, 0xffffffff80123456));
    HAS(0, "amd-v2 trace: W1C acknowledge", WR(MSR_AMD_PERF_GLOBAL_STATUS_CLR, 1));
    finish("amd trace");
}

void test_trace(void)
{
    tap_section("pmc trace");
    check_intel();
    check_filter();
    check_partial_drain();
    check_v1_and_amd();
    check_info();
}
