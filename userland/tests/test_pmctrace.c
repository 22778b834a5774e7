// `pmc trace`'s decoder (userland/lib/pmctrace.c): the records the kernel's
// hosted tests see for the Intel, v1 and AMD models (tests/pmc/test_trace.c),
// turned into the lines `pmc trace` prints.
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "pmctrace.h"
#include "lib/abi/profile.h"

#define NO PMC_TRACE_NO_SOURCE

static struct pmclog_trace rec(uint16_t kind, uint32_t reg, uint64_t value, uint16_t source)
{
    return (struct pmclog_trace){
        .h = {.type = PMCLOG_TRACE, .cpu = 0, .size = sizeof(struct pmclog_trace)},
        .kind = kind,
        .reg = reg,
        .value = value,
        .source = source,
    };
}

static void text_is(struct pmclog_trace r, const char *name, const char *want)
{
    char line[192];
    int n = pmctrace_format(&r, name, line, sizeof line);
    CHECK(strcmp(line, want) == 0 && n == (int)strlen(want), "pmctrace: \"%s\"%s%s", want,
          strcmp(line, want) ? ", got " : "", strcmp(line, want) ? line : "");
}

// Records and the lines they become: the Intel architectural perfmon v2 trace
// of ProfileLLCMisses at 1,000 under KVM, then version 1 and AMD, then the
// rest of the decoding.
static const struct {
    uint16_t kind;
    uint32_t reg;
    uint64_t value;
    uint16_t source;
    const char *want;
} lines[] = {
    {PMC_TRACE_STEP, PMC_STEP_SET_INTERVAL, 1000, ProfileLLCMisses,
     "SetInterval ProfileLLCMisses interval 1000"},
    {PMC_TRACE_STEP, PMC_STEP_START, 0, ProfileLLCMisses,
     "HalStartProfileInterrupt ProfileLLCMisses"},
    {PMC_TRACE_STEP, PMC_STEP_ENABLE, 0x4C1, ProfileLLCMisses,
     "EnableMonitoring ProfileLLCMisses on IA32_A_PMC0"},
    {PMC_TRACE_WRMSR, 0x186, 0, NO, "wrmsr IA32_PERFEVTSEL0 = 0x00000000 (off)"},
    {PMC_TRACE_WRMSR, 0x4C1, 0xfffffffffc18, NO,
     "wrmsr IA32_A_PMC0 = 0xfffffffffc18 (1000 to overflow)"},
    {PMC_TRACE_WRMSR, 0x186, 0x0053412e, NO,
     "wrmsr IA32_PERFEVTSEL0 = 0x0053412e (event 0x2e umask 0x41 USR OS INT EN)"},
    {PMC_TRACE_WRMSR, 0x38F, 1, NO, "wrmsr IA32_PERF_GLOBAL_CTRL = 0x00000001 (PMC0)"},
    {PMC_TRACE_STEP, PMC_STEP_ENABLE, 0x309, ProfileInstructionRetired,
     "EnableMonitoring ProfileInstructionRetired on IA32_FIXED_CTR0"},
    {PMC_TRACE_WRMSR, 0x309, 0xfffffff0bdc0, NO,
     "wrmsr IA32_FIXED_CTR0 = 0xfffffff0bdc0 (1000000 to overflow)"},
    {PMC_TRACE_WRMSR, 0x38D, 0xb, NO, "wrmsr IA32_FIXED_CTR_CTRL = 0x0000000b (FIXED0 OS USR PMI)"},
    {PMC_TRACE_WRMSR, 0x38F, 0x100000001, NO,
     "wrmsr IA32_PERF_GLOBAL_CTRL = 0x100000001 (PMC0 FIXED0)"},
    {PMC_TRACE_STEP, PMC_STEP_PMI, 0, NO, "PMI"},
    {PMC_TRACE_WRMSR, 0x38F, 0, NO, "wrmsr IA32_PERF_GLOBAL_CTRL = 0x00000000 (none)"},
    {PMC_TRACE_RDMSR, 0x38E, 1, NO, "rdmsr IA32_PERF_GLOBAL_STATUS = 0x00000001 (PMC0)"},
    {PMC_TRACE_STEP, PMC_STEP_SAMPLE, 0xffffffff80123456, ProfileLLCMisses,
     "sample ProfileLLCMisses ip 0xffffffff80123456 idle"},
    {PMC_TRACE_RDMSR, 0x4C1, 0, NO, "rdmsr IA32_A_PMC0 = 0x00000000 (0)"},
    {PMC_TRACE_WRMSR, 0x390, 1, NO, "wrmsr IA32_PERF_GLOBAL_OVF_CTRL = 0x00000001 (PMC0)"},
    {PMC_TRACE_RDMSR, 0x38E, 0, NO, "rdmsr IA32_PERF_GLOBAL_STATUS = 0x00000000 (none)"},
    {PMC_TRACE_LAPIC, 0x340, 0xe1, NO, "lapic_write LVTPC = 0x000000e1 (vector 0xe1 fixed)"},
    {PMC_TRACE_STEP, PMC_STEP_STOP, 0, ProfileLLCMisses,
     "HalStopProfileInterrupt ProfileLLCMisses"},
    {PMC_TRACE_STEP, PMC_STEP_DISABLE, 0x4C1, ProfileLLCMisses,
     "DisableMonitoring ProfileLLCMisses on IA32_A_PMC0"},
    {PMC_TRACE_WRMSR, 0x38F, 0x100000000, NO, "wrmsr IA32_PERF_GLOBAL_CTRL = 0x100000000 (FIXED0)"},
    {PMC_TRACE_WRMSR, 0x186, 0x0053003c, NO,
     "wrmsr IA32_PERFEVTSEL0 = 0x0053003c (event 0x3c umask 0x00 USR OS INT EN)"},
    {PMC_TRACE_WRMSR, 0xC1, 0xfffff0bdc0, NO,
     "wrmsr IA32_PMC0 = 0xfffff0bdc0 (1000000 to overflow)"},
    {PMC_TRACE_WRMSR, 0xC0010200, 0x0053ff60, NO,
     "wrmsr F15H_PERF_CTL0 = 0x0053ff60 (event 0x60 umask 0xff USR OS INT EN)"},
    {PMC_TRACE_RDMSR, 0xC0000300, 1, NO, "rdmsr AMD_PERF_GLOBAL_STATUS = 0x00000001 (CTR0)"},
    {PMC_TRACE_WRMSR, 0xC0000302, 1, NO, "wrmsr AMD_PERF_GLOBAL_STATUS_CLR = 0x00000001 (CTR0)"},
    {PMC_TRACE_WRMSR, 0xC0010000, 0x100530076ull, NO,
     "wrmsr K7_PERF_CTL0 = 0x100530076 (event 0x176 umask 0x00 USR OS INT EN)"},
    {PMC_TRACE_WRMSR, 0x187, 0x01d300c4, NO,
     "wrmsr IA32_PERFEVTSEL1 = 0x01d300c4 (event 0xc4 umask 0x00 USR OS INT EN INV cmask 1)"},
    {PMC_TRACE_WRMSR, 0x38D, 0xa30, NO,
     "wrmsr IA32_FIXED_CTR_CTRL = 0x00000a30 (FIXED1 OS USR, FIXED2 USR PMI)"},
    {PMC_TRACE_WRMSR, 0x38D, 0, NO, "wrmsr IA32_FIXED_CTR_CTRL = 0x00000000 (all off)"},
    {PMC_TRACE_RDMSR, 0x345, 0x2003, NO, "rdmsr IA32_PERF_CAPABILITIES = 0x00002003 (FW_WRITE)"},
    {PMC_TRACE_RDMSR, 0x345, 0x3, NO, "rdmsr IA32_PERF_CAPABILITIES = 0x00000003 (no FW_WRITE)"},
    {PMC_TRACE_WRMSR, 0x10, 5, NO, "wrmsr 0x00000010 = 0x00000005"},
    {PMC_TRACE_LAPIC, 0x340, 0x10400, NO,
     "lapic_write LVTPC = 0x00010400 (vector 0x00 NMI masked)"},
    {PMC_TRACE_LAPIC, 0x320, 0x20, NO, "lapic_write 0x320 = 0x00000020"},
    {PMC_TRACE_STEP, PMC_STEP_INIT, 4, NO, "pmc_init cpus 4"},
    {PMC_TRACE_STEP, PMC_STEP_ENABLE, 0x10, ProfileTime,
     "EnableMonitoring ProfileTime on MSR 0x10"},
    {PMC_TRACE_STEP, PMC_STEP_THROTTLE, 1001, ProfileLLCMisses,
     "throttled: stopped on this CPU ProfileLLCMisses samples in window 1001"},
    {PMC_TRACE_STEP, PMC_STEP_STRETCH, 4, 0x1B,
     "throttled: period stretched ProfileUnhaltedReferenceCycles periods per sample 4"},
    {PMC_TRACE_STEP, 99, 0, NO, "step 99"},
    {9, 0, 0, NO, "record kind 9"},
    {PMC_TRACE_STEP, PMC_STEP_SET_INTERVAL, 1221, 0x40, "SetInterval Profile? interval 1221"},
};

static void check_records(void)
{
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        text_is(rec(lines[i].kind, lines[i].reg, lines[i].value, lines[i].source), NULL,
                lines[i].want);
}

// Buckets, samples with and without a process, short buffers, MSR names.
static void check_special(void)
{
    const uint16_t ST = PMC_TRACE_STEP, LLC = ProfileLLCMisses;
    struct pmclog_trace b = rec(ST, PMC_STEP_BUCKET, 19, ProfileTime);
    b.arg = 0x400000;
    text_is(b, NULL, "bucket ProfileTime index 19 of the profile at 0x400000");
    struct pmclog_trace s = rec(ST, PMC_STEP_SAMPLE, 0x40004d, ProfileTime);
    s.pid = 4;
    s.flags = PMC_TRACE_PROFILED;
    text_is(s, "primes", "sample ProfileTime ip 0x40004d pid 4 primes profiled");
    s.flags = 0;
    text_is(s, NULL, "sample ProfileTime ip 0x40004d pid 4 ?");
    s.pid = 0;
    s.flags = PMC_TRACE_PROFILED;
    text_is(s, NULL, "sample ProfileTime ip 0x40004d idle profiled");

    char line[160];
    struct pmclog_trace t = rec(ST, PMC_STEP_THROTTLE, 1001, LLC);
    const char *full = "throttled: stopped on this CPU ProfileLLCMisses samples in window 1001";
    CHECK(pmctrace_format(&t, NULL, line, 8) == (int)strlen(full) && strlen(line) == 7,
          "pmctrace: a short buffer returns the full length, snprintf-style, and holds a "
          "truncated, terminated line");
    char name[32];
    CHECK(pmctrace_msr_name(0xC0010203, name, sizeof name) && strcmp(name, "F15H_PERF_CTR1") == 0,
          "pmctrace: MSR name of 0xC0010203");
    CHECK(pmctrace_msr_name(0x390, name, sizeof name) &&
              strcmp(name, "IA32_PERF_GLOBAL_OVF_CTRL") == 0,
          "pmctrace: MSR name of 0x390");
    CHECK(pmctrace_msr_name(0xC0010202, name, sizeof name) && strcmp(name, "F15H_PERF_CTL1") == 0 &&
              !pmctrace_msr_name(0xC001020C, name, 32),
          "pmctrace: F15H registers interleave (CTL1 at +2), six pairs");
    CHECK(pmctrace_msr_name(0x10, name, sizeof name) == NULL, "pmctrace: not a PMU MSR: no name");
}

static void check_lines(void)
{
    char line[192];
    struct pmclog_trace r = rec(PMC_TRACE_STEP, PMC_STEP_PMI, 0, NO);
    r.h.cpu = 1;
    pmctrace_line(&r, NULL, 22017791, line, sizeof line);
    CHECK(strcmp(line, "cpu1    22017.791 us  PMI") == 0, "pmctrace: a line (%s)", line);
    pmctrace_line(&r, NULL, 123456789012345ull, line, sizeof line);
    CHECK(strcmp(line, "cpu1 123456789012.345 us  PMI") == 0, "pmctrace: a long time (%s)", line);
    struct pmclog_lost l = {.h = {.type = PMCLOG_LOST, .cpu = 3, .size = sizeof l}, .count = 12};
    pmctrace_lost_line(&l, line, sizeof line);
    CHECK(strcmp(line, "cpu3 lost: 12 records: its ring was full") == 0,
          "pmctrace: a lost line (%s)", line);

    struct sys_clock c = {.ns = 10000000000ull, .tsc = 30000000000ull, .tsc_hz = 3000000000ull};
    CHECK(pmctrace_ns(&c, c.tsc) == c.ns && pmctrace_ns(&c, c.tsc - 3000) == c.ns - 1000 &&
              pmctrace_ns(&c, c.tsc + 3) == c.ns + 1,
          "pmctrace: a TSC 3,000 ticks earlier at 3 GHz is 1,000 ns earlier");
    c = (struct sys_clock){.ns = 200000000000ull, .tsc = 1ull << 62, .tsc_hz = 3000000000ull};
    CHECK(pmctrace_ns(&c, c.tsc - 300000000000ull) == 100000000000ull,
          "pmctrace: 100 s before, without overflowing 64 bits");
    CHECK(pmctrace_ns(&c, 0) == 0 && pmctrace_ns(&(struct sys_clock){0}, 5) == 0,
          "pmctrace: before boot is 0, and so is a clock without a frequency");
}

static void check_walk(void)
{
    static uint64_t buf[64];
    uint8_t *p = (uint8_t *)buf;
    struct pmclog_trace r = rec(PMC_TRACE_STEP, PMC_STEP_PMI, 0, NO);
    struct pmclog_map m = {.h = {.type = PMCLOG_MAP, .size = sizeof m}, .pid = 7, .parent = 1};
    strcpy(m.name, "primes");
    struct pmclog_lost l = {.h = {.type = PMCLOG_LOST, .size = sizeof l}, .count = 2};
    memcpy(p, &r, sizeof r);
    memcpy(p + sizeof r, &m, sizeof m);
    memcpy(p + sizeof r + sizeof m, &l, sizeof l);
    size_t len = sizeof r + sizeof m + sizeof l, pos = 0;
    const struct pmclog_header *h1 = pmctrace_next(buf, len, &pos);
    const struct pmclog_header *h2 = pmctrace_next(buf, len, &pos);
    const struct pmclog_header *h3 = pmctrace_next(buf, len, &pos);
    CHECK(h1 && h1->type == PMCLOG_TRACE && h2 && h2->type == PMCLOG_MAP && h3 &&
              h3->type == PMCLOG_LOST && pos == len && !pmctrace_next(buf, len, &pos),
          "pmctrace: three records walked, then the end");
    pos = 0;
    CHECK(pmctrace_next(buf, len - 8, &pos) && pmctrace_next(buf, len - 8, &pos) &&
              !pmctrace_next(buf, len - 8, &pos),
          "pmctrace: a record cut short by the buffer's end is not handed out");
    ((struct pmclog_header *)(p + sizeof r))->size = 12;
    pos = 0;
    CHECK(pmctrace_next(buf, len, &pos) && !pmctrace_next(buf, len, &pos),
          "pmctrace: a size that is not a multiple of 8 stops the walk");

    static struct pmctrace_names t;
    pmctrace_names_add(&t, &m);
    m.pid = 8;
    strcpy(m.name, "sort");
    pmctrace_names_add(&t, &m);
    strcpy(m.name, "sort2");
    pmctrace_names_add(&t, &m);
    CHECK(t.n == 2 && strcmp(pmctrace_name(&t, 7), "primes") == 0 &&
              strcmp(pmctrace_name(&t, 8), "sort2") == 0 && pmctrace_name(&t, 9) == NULL,
          "pmctrace: names by pid, the latest for a pid named twice, NULL for none");
    memset(m.name, 'x', sizeof m.name);
    for (uint32_t pid = 100; pid < 200; pid++) {
        m.pid = pid;
        pmctrace_names_add(&t, &m);
    }
    CHECK(t.n == PMCTRACE_NAMES && strlen(pmctrace_name(&t, 100)) == PROCESS_NAME_MAX - 1 &&
              pmctrace_name(&t, 199) == NULL,
          "pmctrace: at most %d names, each terminated", PMCTRACE_NAMES);
}

void test_pmctrace(void)
{
    check_records();
    check_special();
    check_lines();
    check_walk();
}
