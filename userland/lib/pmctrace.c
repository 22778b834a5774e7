// `pmc trace`'s records decoded into text (see pmctrace.h).
//
// The register numbers and fields below are the hardware's, copied here
// rather than taken from the kernel's arch/x86/msr.h, which is not part of
// the ABI (it holds the privileged rdmsr/wrmsr themselves); each group cites
// where the manuals define it.
#include <pmctrace.h>
#include "lib/abi/profile.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const struct pmclog_header *pmctrace_next(const void *buf, size_t len, size_t *pos)
{
    if (*pos >= len || len - *pos < sizeof(struct pmclog_header))
        return NULL;
    const struct pmclog_header *h = (const void *)((const char *)buf + *pos);
    if (h->size < sizeof *h || h->size % 8 || h->size > len - *pos)
        return NULL;
    *pos += h->size;
    return h;
}

void pmctrace_names_add(struct pmctrace_names *t, const struct pmclog_map *m)
{
    unsigned i = 0;
    while (i < t->n && t->e[i].pid != m->pid)
        i++;
    if (i == PMCTRACE_NAMES)
        return;
    if (i == t->n)
        t->n++;
    t->e[i].pid = m->pid;
    memcpy(t->e[i].name, m->name, sizeof t->e[i].name);
    t->e[i].name[sizeof t->e[i].name - 1] = '\0';
}

const char *pmctrace_name(const struct pmctrace_names *t, uint32_t pid)
{
    for (unsigned i = 0; i < t->n; i++)
        if (t->e[i].pid == pid)
            return t->e[i].name;
    return NULL;
}

// ns = c->ns - (c->tsc - tsc) / tsc_hz seconds, in two parts so that
// nothing overflows 64 bits: whole seconds, then the rest (< tsc_hz) * 10^9.
uint64_t pmctrace_ns(const struct sys_clock *c, uint64_t tsc)
{
    if (c->tsc_hz == 0)
        return 0;
    uint64_t d = tsc <= c->tsc ? c->tsc - tsc : tsc - c->tsc;
    uint64_t dns = d / c->tsc_hz * 1000000000ull + d % c->tsc_hz * 1000000000ull / c->tsc_hz;
    if (tsc > c->tsc)
        return c->ns + dns;
    return dns < c->ns ? c->ns - dns : 0;
}

// --- the registers ------------------------------------------------------------

enum decoder {
    DEC_COUNTER,
    DEC_EVTSEL,
    DEC_AMD_CTL,
    DEC_FIXED_CTRL,
    DEC_GLOBAL,
    DEC_AMD_GLOBAL,
    DEC_CAPABILITIES
};

// Every PMU MSR the kernel's pmc code touches: count registers at
// base + stride * i.
//   Intel: the addresses are those of the Intel SDM Vol. 4, Table 2-2
//   "IA-32 Architectural MSRs"; what each holds, SDM Vol. 3B, chapter
//   "Performance Monitoring", sections "Architectural Performance Monitoring
//   Version 1" (IA32_PMCx, IA32_PERFEVTSELx), "... Version 2" (the fixed
//   counters, IA32_FIXED_CTR_CTRL, IA32_PERF_GLOBAL_CTRL/_STATUS/_OVF_CTRL)
//   and "Full-Width Writes to Performance Counter Registers" (IA32_A_PMCx,
//   IA32_PERF_CAPABILITIES).
//   AMD: AMD APM Vol. 2, chapter "Software Debug and Performance Resources",
//   "Performance Monitoring Counters": the legacy PerfEvtSel0-3/PerfCtr0-3 at
//   C001_0000h and C001_0004h, the core extension's six pairs interleaved
//   from C001_0200h, and PerfMonV2's PerfCntGlobalStatus, _Ctl and
//   _StatusClr at C000_0300h-C000_0302h.
static const struct msr_range {
    uint32_t base;
    uint8_t count, stride;
    const char *name; // numbered when count > 1
    enum decoder decoder;
} pmu_msrs[] = {
    {0x000000C1, 8, 1, "IA32_PMC", DEC_COUNTER},
    {0x000004C1, 8, 1, "IA32_A_PMC", DEC_COUNTER},
    {0x00000186, 8, 1, "IA32_PERFEVTSEL", DEC_EVTSEL},
    {0x00000309, 4, 1, "IA32_FIXED_CTR", DEC_COUNTER},
    {0x0000038D, 1, 1, "IA32_FIXED_CTR_CTRL", DEC_FIXED_CTRL},
    {0x0000038E, 1, 1, "IA32_PERF_GLOBAL_STATUS", DEC_GLOBAL},
    {0x0000038F, 1, 1, "IA32_PERF_GLOBAL_CTRL", DEC_GLOBAL},
    {0x00000390, 1, 1, "IA32_PERF_GLOBAL_OVF_CTRL", DEC_GLOBAL},
    {0x00000345, 1, 1, "IA32_PERF_CAPABILITIES", DEC_CAPABILITIES},
    {0xC0010000, 4, 1, "K7_PERF_CTL", DEC_AMD_CTL},
    {0xC0010004, 4, 1, "K7_PERF_CTR", DEC_COUNTER},
    {0xC0010200, 6, 2, "F15H_PERF_CTL", DEC_AMD_CTL},
    {0xC0010201, 6, 2, "F15H_PERF_CTR", DEC_COUNTER},
    {0xC0000300, 1, 1, "AMD_PERF_GLOBAL_STATUS", DEC_AMD_GLOBAL},
    {0xC0000301, 1, 1, "AMD_PERF_GLOBAL_CTL", DEC_AMD_GLOBAL},
    {0xC0000302, 1, 1, "AMD_PERF_GLOBAL_STATUS_CLR", DEC_AMD_GLOBAL},
};

// IA32_PERFEVTSELx (SDM Vol. 3B, "Architectural Performance Monitoring
// Version 1", the IA32_PERFEVTSELx layout; AnyThread from version 3): event
// select 7:0, unit mask 15:8, USR 16, OS 17, E(dge) 18, PC 19, INT 20, ANY 21,
// EN 22, INV 23, counter mask 31:24. AMD's PerfEvtSeln (APM Vol. 2,
// "Performance Event-Select Registers") has the same low 32 bits and the
// event select's bits 11:8 in 35:32.
#define EVTSEL_UMASK_SHIFT 8
#define EVTSEL_CMASK_SHIFT 24
#define AMD_EVENT_HI_SHIFT 32
static const struct {
    uint64_t bit;
    const char *name;
} evtsel_flags[] = {
    {1ull << 16, "USR"}, {1ull << 17, "OS"},  {1ull << 18, "EDGE"}, {1ull << 19, "PC"},
    {1ull << 20, "INT"}, {1ull << 21, "ANY"}, {1ull << 22, "EN"},   {1ull << 23, "INV"},
};

// IA32_FIXED_CTR_CTRL (SDM Vol. 3B, "Architectural Performance Monitoring
// Version 2", the IA32_FIXED_CTR_CTRL layout): 4 bits per fixed counter i at
// 4i: bit 0 enables counting at CPL 0, 1 above CPL 0, 2 AnyThread (version
// 3), 3 the PMI on overflow.
#define FIXED_OS  0x1u
#define FIXED_USR 0x2u
#define FIXED_ANY 0x4u
#define FIXED_PMI 0x8u

// IA32_PERF_GLOBAL_CTRL/_STATUS/_OVF_CTRL (SDM Vol. 3B, "Architectural
// Performance Monitoring Version 2"): bit i is IA32_PMCi, bit 32 + i is
// IA32_FIXED_CTRi. AMD's PerfCntGlobal* (APM Vol. 2): bit i is PerfCtri.
#define GLOBAL_FIXED_SHIFT 32

// IA32_PERF_CAPABILITIES bit 13, FW_WRITE: the full-width IA32_A_PMCx
// aliases exist (SDM Vol. 3B, "Full-Width Writes to Performance Counter
// Registers").
#define CAPABILITIES_FW_WRITE (1ull << 13)

// The LAPIC's LVT performance monitoring counters register (LVTPC) at MMIO
// offset 340h: vector 7:0, delivery mode 10:8 (100b NMI), mask 16 (Intel SDM
// Vol. 3A, APIC chapter, "Local Vector Table").
#define LAPIC_LVTPC       0x340
#define LVT_DELIVERY_MASK (7u << 8)
#define LVT_DELIVERY_NMI  (4u << 8)
#define LVT_MASKED        (1u << 16)

static const struct msr_range *find_msr(uint32_t msr, unsigned *index)
{
    for (size_t i = 0; i < sizeof pmu_msrs / sizeof pmu_msrs[0]; i++) {
        const struct msr_range *m = &pmu_msrs[i];
        if (msr < m->base || (msr - m->base) % m->stride != 0 ||
            (msr - m->base) / m->stride >= m->count)
            continue;
        *index = (msr - m->base) / m->stride;
        return m;
    }
    return NULL;
}

const char *pmctrace_msr_name(uint32_t msr, char *buf, size_t size)
{
    unsigned i;
    const struct msr_range *m = find_msr(msr, &i);
    if (m == NULL)
        return NULL;
    if (m->count == 1)
        snprintf(buf, size, "%s", m->name);
    else
        snprintf(buf, size, "%s%u", m->name, i);
    return buf;
}

// KPROFILE_SOURCE names: the enumerators of lib/abi/profile.h, spelled as they are.
#define SOURCE(s) [s] = #s
static const char *const source_names[ProfileSourceCount] = {
    SOURCE(ProfileTime),
    SOURCE(ProfileAlignmentFixup),
    SOURCE(ProfileTotalIssues),
    SOURCE(ProfilePipelineDry),
    SOURCE(ProfileLoadInstructions),
    SOURCE(ProfilePipelineFrozen),
    SOURCE(ProfileBranchInstructions),
    SOURCE(ProfileTotalNonissues),
    SOURCE(ProfileDcacheMisses),
    SOURCE(ProfileIcacheMisses),
    SOURCE(ProfileCacheMisses),
    SOURCE(ProfileBranchMispredictions),
    SOURCE(ProfileStoreInstructions),
    SOURCE(ProfileFpInstructions),
    SOURCE(ProfileIntegerInstructions),
    SOURCE(Profile2Issue),
    SOURCE(Profile3Issue),
    SOURCE(Profile4Issue),
    SOURCE(ProfileSpecialInstructions),
    SOURCE(ProfileTotalCycles),
    SOURCE(ProfileIcacheIssues),
    SOURCE(ProfileDcacheAccesses),
    SOURCE(ProfileMemoryBarrierCycles),
    SOURCE(ProfileLoadLinkedIssues),
    SOURCE(ProfileMaximum),
    SOURCE(ProfileUnhaltedCoreCycles),
    SOURCE(ProfileInstructionRetired),
    SOURCE(ProfileUnhaltedReferenceCycles),
    SOURCE(ProfileLLCReference),
    SOURCE(ProfileLLCMisses),
    SOURCE(ProfileBranchInstructionRetired),
    SOURCE(ProfileBranchMispredictsRetired),
};
#undef SOURCE

const char *pmctrace_source_name(unsigned source)
{
    return source < ProfileSourceCount && source_names[source] ? source_names[source] : "Profile?";
}

// --- text ---------------------------------------------------------------------

// Text appended to a buffer; len counts everything, even what did not fit.
struct text {
    char *buf;
    size_t size;
    int len;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t at = (size_t)t->len < t->size ? (size_t)t->len : t->size;
    int n = vsnprintf(t->buf ? t->buf + at : NULL, t->buf ? t->size - at : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += n;
}

static void decode_evtsel(struct text *o, uint64_t v, int amd)
{
    if (v == 0) {
        put(o, " (off)");
        return;
    }
    unsigned event = (unsigned)(v & 0xFF);
    if (amd)
        event |= (unsigned)((v >> AMD_EVENT_HI_SHIFT) & 0xF) << 8;
    put(o, " (event 0x%02x umask 0x%02x", event, (unsigned)(v >> EVTSEL_UMASK_SHIFT) & 0xFF);
    for (size_t i = 0; i < sizeof evtsel_flags / sizeof evtsel_flags[0]; i++)
        if (v & evtsel_flags[i].bit)
            put(o, " %s", evtsel_flags[i].name);
    if ((v >> EVTSEL_CMASK_SHIFT) & 0xFF)
        put(o, " cmask %u", (unsigned)(v >> EVTSEL_CMASK_SHIFT) & 0xFF);
    put(o, ")");
}

static void decode_fixed_ctrl(struct text *o, uint64_t v)
{
    put(o, " (");
    const char *sep = "";
    for (unsigned i = 0; i < 4; i++) {
        unsigned f = (unsigned)(v >> (4 * i)) & 0xF;
        if (f == 0)
            continue;
        put(o, "%sFIXED%u%s%s%s%s", sep, i, f & FIXED_OS ? " OS" : "", f & FIXED_USR ? " USR" : "",
            f & FIXED_ANY ? " ANY" : "", f & FIXED_PMI ? " PMI" : "");
        sep = ", ";
    }
    put(o, "%s)", *sep ? "" : "all off");
}

static void decode_global(struct text *o, uint64_t v, int amd)
{
    put(o, " (");
    const char *sep = "";
    for (unsigned b = 0; b < 64; b++) {
        if (!(v & (1ull << b)))
            continue;
        if (amd)
            put(o, "%sCTR%u", sep, b);
        else if (b < GLOBAL_FIXED_SHIFT)
            put(o, "%sPMC%u", sep, b);
        else if (b < GLOBAL_FIXED_SHIFT + 4)
            put(o, "%sFIXED%u", sep, b - GLOBAL_FIXED_SHIFT);
        else
            put(o, "%sbit%u", sep, b);
        sep = " ";
    }
    put(o, "%s)", *sep ? "" : "none");
}

// Counters hold -left while armed: show how many events remain to the overflow.
static void decode_counter(struct text *o, uint64_t v)
{
    if (v < (1ull << 31)) {
        put(o, " (%lu)", (unsigned long)v);
        return;
    }
    unsigned top = 63 - (unsigned)__builtin_clzll(v);
    uint64_t span = top == 63 ? 0 : 1ull << (top + 1); // 0 stands for 2^64
    put(o, " (%lu to overflow)", (unsigned long)(span - v));
}

static void decode_msr(struct text *o, const struct pmclog_trace *r)
{
    char name[32];
    unsigned index;
    const struct msr_range *m = find_msr(r->reg, &index);
    const char *op = r->kind == PMC_TRACE_RDMSR ? "rdmsr" : "wrmsr";
    if (m == NULL) {
        put(o, "%s 0x%08x = 0x%08lx", op, r->reg, (unsigned long)r->value);
        return;
    }
    put(o, "%s %s = 0x%08lx", op, pmctrace_msr_name(r->reg, name, sizeof name),
        (unsigned long)r->value);
    switch (m->decoder) {
    case DEC_COUNTER: decode_counter(o, r->value); break;
    case DEC_EVTSEL: decode_evtsel(o, r->value, 0); break;
    case DEC_AMD_CTL: decode_evtsel(o, r->value, 1); break;
    case DEC_FIXED_CTRL: decode_fixed_ctrl(o, r->value); break;
    case DEC_GLOBAL: decode_global(o, r->value, 0); break;
    case DEC_AMD_GLOBAL: decode_global(o, r->value, 1); break;
    case DEC_CAPABILITIES:
        put(o, " (%s)", r->value & CAPABILITIES_FW_WRITE ? "FW_WRITE" : "no FW_WRITE");
        break;
    }
}

static void decode_lapic(struct text *o, const struct pmclog_trace *r)
{
    uint32_t v = (uint32_t)r->value;
    if (r->reg != LAPIC_LVTPC) {
        put(o, "lapic_write 0x%03x = 0x%08x", r->reg, v);
        return;
    }
    put(o, "lapic_write LVTPC = 0x%08x (vector 0x%02x %s%s)", v, v & 0xFF,
        (v & LVT_DELIVERY_MASK) == LVT_DELIVERY_NMI ? "NMI" : "fixed",
        v & LVT_MASKED ? " masked" : "");
}

// HAL steps (enum pmc_trace_step): what each is called and how its value is shown.
enum step_arg { ARG_NONE, ARG_DEC, ARG_HEX, ARG_MSR };
static const struct {
    const char *name;
    const char *arg; // label before the value
    enum step_arg format;
} steps[PMC_STEP_COUNT] = {
    [PMC_STEP_INIT] = {"pmc_init", "cpus", ARG_DEC},
    [PMC_STEP_INITIALIZE] = {"InitializeProfiling", NULL, ARG_NONE},
    [PMC_STEP_START] = {"HalStartProfileInterrupt", NULL, ARG_NONE},
    [PMC_STEP_STOP] = {"HalStopProfileInterrupt", NULL, ARG_NONE},
    [PMC_STEP_ENABLE] = {"EnableMonitoring", "on", ARG_MSR},
    [PMC_STEP_NO_COUNTER] = {"EnableMonitoring: no free counter", NULL, ARG_NONE},
    [PMC_STEP_DISABLE] = {"DisableMonitoring", "on", ARG_MSR},
    [PMC_STEP_SET_INTERVAL] = {"SetInterval", "interval", ARG_DEC},
    [PMC_STEP_PMI] = {"PMI", NULL, ARG_NONE},
    [PMC_STEP_SPURIOUS] = {"PMI spurious: nothing overflowed", NULL, ARG_NONE},
    [PMC_STEP_SAMPLE] = {"sample", "ip", ARG_HEX},
    [PMC_STEP_THROTTLE] = {"throttled: stopped on this CPU", "samples in window", ARG_DEC},
    [PMC_STEP_STUCK] = {"PMI stuck: counters reset", "loops", ARG_DEC},
    [PMC_STEP_BUCKET] = {"bucket", "index", ARG_DEC},
    [PMC_STEP_STRETCH] = {"throttled: period stretched", "periods per sample", ARG_DEC},
};

static void decode_step(struct text *o, const struct pmclog_trace *r, const char *name)
{
    char msr[32];
    if (r->reg >= PMC_STEP_COUNT) {
        put(o, "step %u", r->reg);
        return;
    }
    put(o, "%s", steps[r->reg].name);
    if (r->source != PMC_TRACE_NO_SOURCE)
        put(o, " %s", pmctrace_source_name(r->source));
    switch (steps[r->reg].format) {
    case ARG_NONE: break;
    case ARG_DEC: put(o, " %s %lu", steps[r->reg].arg, (unsigned long)r->value); break;
    case ARG_HEX: put(o, " %s 0x%lx", steps[r->reg].arg, (unsigned long)r->value); break;
    case ARG_MSR:
        if (pmctrace_msr_name((uint32_t)r->value, msr, sizeof msr))
            put(o, " %s %s", steps[r->reg].arg, msr);
        else
            put(o, " %s MSR 0x%x", steps[r->reg].arg, (unsigned)r->value);
        break;
    }
    if (r->reg == PMC_STEP_BUCKET)
        put(o, " of the profile at 0x%lx", (unsigned long)r->arg);
    if (r->reg == PMC_STEP_SAMPLE) {
        if (r->pid == 0)
            put(o, " idle");
        else
            put(o, " pid %u %.*s", r->pid, PROCESS_NAME_MAX, name ? name : "?");
        if (r->flags & PMC_TRACE_PROFILED)
            put(o, " profiled");
    }
}

static void format(struct text *o, const struct pmclog_trace *r, const char *name)
{
    switch (r->kind) {
    case PMC_TRACE_RDMSR:
    case PMC_TRACE_WRMSR: decode_msr(o, r); break;
    case PMC_TRACE_LAPIC: decode_lapic(o, r); break;
    case PMC_TRACE_STEP: decode_step(o, r, name); break;
    default: put(o, "record kind %u", r->kind); break;
    }
}

int pmctrace_format(const struct pmclog_trace *r, const char *name, char *buf, size_t size)
{
    struct text o = {buf, size, 0};
    if (size)
        buf[0] = '\0';
    format(&o, r, name);
    return o.len;
}

int pmctrace_line(const struct pmclog_trace *r, const char *name, uint64_t ns, char *buf,
                  size_t size)
{
    struct text o = {buf, size, 0};
    if (size)
        buf[0] = '\0';
    put(&o, "cpu%u %8lu.%03lu us  ", r->h.cpu, (unsigned long)(ns / 1000),
        (unsigned long)(ns % 1000));
    format(&o, r, name);
    return o.len;
}

int pmctrace_lost_line(const struct pmclog_lost *l, char *buf, size_t size)
{
    return snprintf(buf, size, "cpu%u lost: %lu records: its ring was full", l->h.cpu,
                    (unsigned long)l->count);
}
