// `pmc trace` records and their decoding, and `pmc info`.
#include <stdio.h>
#include <string.h>
#include "tests.h"

static struct pmc_trace_record rec[PMC_TRACE_RING];

// All of cpu's records as text, one per line; counts records from other CPUs.
static unsigned foreign;
static const char *trace_text(unsigned cpu)
{
    static char text[65536];
    size_t n = pmc_trace_read(cpu, rec, PMC_TRACE_RING), len = 0;
    text[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof(text) - 200; i++) {
        foreign += rec[i].cpu != cpu;
        len += (size_t)pmc_trace_format(&rec[i], text + len, sizeof(text) - len);
        text[len++] = '\n';
        text[len] = '\0';
    }
    return text;
}

static void check_intel(void)
{
    boot(&MODEL_INTEL_KVM_V2);
    tap_ok(!pmc_trace_on, "trace is off by default");
    start_ok(ProfileLLCMisses);
    tap_eq(pmc_trace_read(0, rec, PMC_TRACE_RING), 0, "off: nothing recorded");
    stop_ok(ProfileLLCMisses);

    STATUS_EQ(pmc_trace_enable(), STATUS_SUCCESS, "pmc_trace_enable");
    set_interval(ProfileLLCMisses, 1000);
    start_ok(ProfileLLCMisses);
    start_ok(ProfileInstructionRetired);
    model_retire(0, EV_LLC_MISSES, 1000, 0xFFFFFFFF80123456ull, false);
    stop_ok(ProfileLLCMisses);
    const char *t = trace_text(0);
    static const char *const want[] = {
        "SetInterval ProfileLLCMisses interval 1000\n",
        "HalStartProfileInterrupt ProfileLLCMisses\n"
        "EnableMonitoring ProfileLLCMisses on IA32_A_PMC0\n"
        "wrmsr IA32_PERFEVTSEL0 = 0x00000000 (off)\n"
        "wrmsr IA32_A_PMC0 = 0xfffffffffc18 (1000 to overflow)\n"
        "wrmsr IA32_PERFEVTSEL0 = 0x0053412e (event 0x2e umask 0x41 USR OS INT EN)\n"
        "wrmsr IA32_PERF_GLOBAL_CTRL = 0x00000001 (PMC0)\n",
        "EnableMonitoring ProfileInstructionRetired on IA32_FIXED_CTR0\n",
        "wrmsr IA32_FIXED_CTR0 = 0xfffffff0bdc0 (1000000 to overflow)\n"
        "wrmsr IA32_FIXED_CTR_CTRL = 0x0000000b (FIXED0 OS USR PMI)\n"
        "wrmsr IA32_PERF_GLOBAL_CTRL = 0x100000001 (PMC0 FIXED0)\n",
        "PMI\n"
        "wrmsr IA32_PERF_GLOBAL_CTRL = 0x00000000 (none)\n"
        "rdmsr IA32_PERF_GLOBAL_STATUS = 0x00000001 (PMC0)\n"
        "sample ProfileLLCMisses ip 0xffffffff80123456\n"
        "rdmsr IA32_A_PMC0 = 0x00000000 (0)\n"
        "wrmsr IA32_A_PMC0 = 0xfffffffffc18 (1000 to overflow)\n"
        "wrmsr IA32_PERF_GLOBAL_OVF_CTRL = 0x00000001 (PMC0)\n"
        "rdmsr IA32_PERF_GLOBAL_STATUS = 0x00000000 (none)\n"
        "lapic_write LVTPC = 0x000000e1 (vector 0xe1 fixed)\n"
        "wrmsr IA32_PERF_GLOBAL_CTRL = 0x100000001 (PMC0 FIXED0)\n",
        "HalStopProfileInterrupt ProfileLLCMisses\n"
        "DisableMonitoring ProfileLLCMisses on IA32_A_PMC0\n"
        "wrmsr IA32_PERFEVTSEL0 = 0x00000000 (off)\n"
        "wrmsr IA32_PERF_GLOBAL_CTRL = 0x100000000 (FIXED0)\n"
        "wrmsr IA32_PERF_GLOBAL_OVF_CTRL = 0x00000001 (PMC0)\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        tap_contains(t, want[i], "kvm-v2 trace, part %zu", i + 1);
    const char *t2 = trace_text(2);
    tap_ok(strstr(t2, "EnableMonitoring ProfileLLCMisses on IA32_A_PMC0") &&
               !strstr(t2, "HalStart") && !strstr(t2, "\nPMI\n") && foreign == 0,
           "cpu2's ring holds its own steps only (the HAL call and the PMI ran on cpu0)");

    size_t before = pmc_trace_read(0, rec, PMC_TRACE_RING);
    pmc_trace_disable();
    start_ok(ProfileLLCMisses);
    model_retire(0, EV_LLC_MISSES, 5000, 0x1000, false);
    tap_eq(pmc_trace_read(0, rec, PMC_TRACE_RING), before, "disabled: no new records");
    pmc_trace_enable();
    pmc_trace_clear();
    tap_eq(pmc_trace_read(0, rec, PMC_TRACE_RING), 0, "clear empties the rings");
    // Far more PMIs than the ring holds records (~10 records each), spread over
    // enough model time that the throttle leaves most of them to happen.
    for (int i = 0; i < 100; i++) {
        model_retire(0, EV_LLC_MISSES, 100 * 1000, 0x1000, false);
        model_advance_time(10 * 1000 * 1000);
    }
    tap_eq(pmc_trace_read(0, rec, PMC_TRACE_RING), PMC_TRACE_RING, "a full ring returns its size");
    tap_ok(pmc_trace_dropped(0) > 0 && rec[PMC_TRACE_RING - 1].time_ns >= rec[0].time_ns,
           "the oldest records are overwritten and counted as dropped; order is oldest first");
    finish("kvm-v2 trace");
}

static void check_v1_and_amd(void)
{
    boot(&MODEL_INTEL_V1);
    pmc_trace_enable();
    start_ok(ProfileTotalCycles);
    tap_contains(trace_text(1),
                 "wrmsr IA32_PERFEVTSEL0 = 0x0053003c (event 0x3c umask 0x00 USR OS INT EN)\n",
                 "v1 trace: the event select, named and decoded");
    tap_contains(trace_text(1), "wrmsr IA32_PMC0 = 0xfffff0bdc0 (1000000 to overflow)\n",
                 "v1 trace: the legacy counter write");
    finish("v1 trace");

    boot(&MODEL_AMD_V2);
    pmc_trace_enable();
    start_ok(ProfileLLCReference);
    model_retire(0, EV_LLC_REFS, 1000000, 0xFFFFFFFF80123456ull, false);
    const char *t = trace_text(0);
    tap_contains(t, "wrmsr F15H_PERF_CTL0 = 0x0053ff60 (event 0x60 umask 0xff USR OS INT EN)\n",
                 "amd-v2 (family 19h) trace: PERF_CTL0 decoded");
    tap_contains(t,
                 "rdmsr AMD_PERF_GLOBAL_STATUS = 0x00000001 (CTR0)\nsample ProfileLLCReference ip "
                 "0xffffffff80123456\n",
                 "amd-v2 trace: the PMI reads PerfMonV2 status");
    tap_contains(t, "wrmsr AMD_PERF_GLOBAL_STATUS_CLR = 0x00000001 (CTR0)\n",
                 "amd-v2 trace: W1C acknowledge");
    finish("amd trace");

    char name[32];
    tap_streq(pmc_msr_name(0xC0010203, name, sizeof(name)), "F15H_PERF_CTR1",
              "MSR name of 0xC0010203");
    tap_streq(pmc_msr_name(0x390, name, sizeof(name)), "IA32_PERF_GLOBAL_OVF_CTRL",
              "MSR name of 0x390");
    tap_ok(pmc_msr_name(0x10, name, sizeof(name)) == NULL, "not a PMU MSR: no name");
    struct pmc_trace_record r = {
        .kind = PMC_TRACE_WRMSR, .reg = 0xC0010000, .value = 0x100530076ull};
    char line[160];
    pmc_trace_format(&r, line, sizeof(line));
    tap_streq(line, "wrmsr K7_PERF_CTL0 = 0x100530076 (event 0x176 umask 0x00 USR OS INT EN)",
              "AMD event bits 35:32 decoded into a 12-bit event");
    r = (struct pmc_trace_record){.kind = PMC_TRACE_STEP,
                                  .reg = PMC_STEP_THROTTLE,
                                  .source = ProfileLLCMisses,
                                  .value = 1001};
    pmc_trace_format(&r, line, sizeof(line));
    tap_streq(line, "throttled: stopped on this CPU ProfileLLCMisses samples in window 1001",
              "a throttle step");
    tap_eq((uint64_t)pmc_trace_format(&r, line, 8),
           strlen("throttled: stopped on this CPU ProfileLLCMisses "
                  "samples in window 1001"),
           "a short buffer returns the full length, snprintf-style");
    tap_eq(strlen(line), 7, "... and holds a truncated, terminated line");
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
}

void test_trace(void)
{
    tap_section("pmc trace");
    check_intel();
    check_v1_and_amd();
    check_info();
}
