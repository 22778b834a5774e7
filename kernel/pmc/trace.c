// `pmc trace`: per-CPU rings of raw records, decoded into text when read.
#include "pmc/trace.h"
#include "pmc/hal_interface.h"
#include "arch/x86/cpu.h"
#include "arch/x86/clock.h"
#include "core/heap.h"
#include "lib/kprintf.h"
#include "arch/x86/percpu.h"
#include "pmc/pmc_param.h"
#include "pmc/profile_source.h"
#include "pmc/text.h"

struct trace_ring {
    uint64_t written; // records ever written; the newest is at (written - 1) % size
    struct pmc_trace_record rec[PMC_TRACE_RING];
};

bool pmc_trace_on;
bool (*pmc_trace_sample_filter)(struct pmc_trace_record *r);
static struct trace_ring *rings;
static unsigned nrings;

static bool is_sample_step(enum pmc_trace_kind kind, uint32_t reg)
{
    return kind == PMC_TRACE_STEP &&
           (reg == PMC_STEP_PMI || reg == PMC_STEP_SAMPLE || reg == PMC_STEP_BUCKET);
}

// Appends with interrupts off, so a PMI cannot interleave with a HAL step on
// the same CPU; each CPU writes only its own ring. A sample step the filter
// refuses leaves no record.
void pmc_trace_record2(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, uint64_t arg,
                       unsigned source)
{
    unsigned cpu = cpu_id();
    if (cpu >= nrings)
        return;
    struct pmc_trace_record rec = {
        .value = value,
        .arg = arg,
        .reg = reg,
        .kind = (uint8_t)kind,
        .cpu = (uint8_t)cpu,
        .source = (uint8_t)source,
    };
    uint64_t flags = irq_save();
    bool (*filter)(struct pmc_trace_record *) = READ_ONCE(pmc_trace_sample_filter);
    if (filter && is_sample_step(kind, reg) && !filter(&rec)) {
        irq_restore(flags);
        return;
    }
    struct trace_ring *r = &rings[cpu];
    rec.time_ns = clock_ns();
    r->rec[r->written % PMC_TRACE_RING] = rec;
    r->written++;
    irq_restore(flags);
}

void pmc_trace_record(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, unsigned source)
{
    pmc_trace_record2(kind, reg, value, 0, source);
}

NTSTATUS pmc_trace_enable(void)
{
    if (rings == NULL) {
        unsigned n = ncpus ? ncpus : 1;
        rings = kzalloc(n * sizeof(*rings));
        if (rings == NULL)
            return STATUS_NO_MEMORY;
        nrings = n;
    }
    WRITE_ONCE(pmc_trace_on, true);
    halp_deliver_choose();
    return STATUS_SUCCESS;
}

void pmc_trace_disable(void)
{
    WRITE_ONCE(pmc_trace_on, false);
    halp_deliver_choose();
}

void pmc_trace_clear(void)
{
    for (unsigned i = 0; i < nrings; i++)
        WRITE_ONCE(rings[i].written, 0);
}

void pmc_trace_free(void)
{
    pmc_trace_on = false;
    halp_deliver_choose();
    kfree(rings);
    rings = NULL;
    nrings = 0;
}

size_t pmc_trace_read(unsigned cpu, struct pmc_trace_record *out, size_t max)
{
    if (cpu >= nrings)
        return 0;
    const struct trace_ring *r = &rings[cpu];
    uint64_t end = READ_ONCE(r->written);
    uint64_t n = end < PMC_TRACE_RING ? end : PMC_TRACE_RING;
    if (n > max)
        n = max;
    for (uint64_t i = 0; i < n; i++)
        out[i] = r->rec[(end - n + i) % PMC_TRACE_RING];
    return (size_t)n;
}

uint64_t pmc_trace_dropped(unsigned cpu)
{
    if (cpu >= nrings)
        return 0;
    uint64_t w = READ_ONCE(rings[cpu].written);
    return w > PMC_TRACE_RING ? w - PMC_TRACE_RING : 0;
}

// ---- Decoding ----

enum decoder {
    DEC_PLAIN,
    DEC_COUNTER,
    DEC_EVTSEL,
    DEC_AMD_CTL,
    DEC_FIXED_CTRL,
    DEC_GLOBAL,
    DEC_AMD_GLOBAL,
    DEC_CAPABILITIES
};

// Every PMU MSR the pmc code touches: count registers at base + stride * i.
static const struct msr_range {
    uint32_t base;
    uint8_t count, stride;
    const char *name; // numbered when count > 1
    enum decoder decoder;
} pmu_msrs[] = {
    {MSR_IA32_PMC0, 8, 1, "IA32_PMC", DEC_COUNTER},
    {MSR_IA32_A_PMC0, 8, 1, "IA32_A_PMC", DEC_COUNTER},
    {MSR_IA32_PERFEVTSEL0, 8, 1, "IA32_PERFEVTSEL", DEC_EVTSEL},
    {MSR_IA32_FIXED_CTR0, 4, 1, "IA32_FIXED_CTR", DEC_COUNTER},
    {MSR_IA32_FIXED_CTR_CTRL, 1, 1, "IA32_FIXED_CTR_CTRL", DEC_FIXED_CTRL},
    {MSR_IA32_PERF_GLOBAL_STATUS, 1, 1, "IA32_PERF_GLOBAL_STATUS", DEC_GLOBAL},
    {MSR_IA32_PERF_GLOBAL_CTRL, 1, 1, "IA32_PERF_GLOBAL_CTRL", DEC_GLOBAL},
    {MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1, 1, "IA32_PERF_GLOBAL_OVF_CTRL", DEC_GLOBAL},
    {MSR_IA32_PERF_CAPABILITIES, 1, 1, "IA32_PERF_CAPABILITIES", DEC_CAPABILITIES},
    {MSR_IA32_DEBUGCTL, 1, 1, "IA32_DEBUGCTL", DEC_PLAIN},
    {MSR_K7_PERF_CTL0, 4, 1, "K7_PERF_CTL", DEC_AMD_CTL},
    {MSR_K7_PERF_CTR0, 4, 1, "K7_PERF_CTR", DEC_COUNTER},
    {MSR_F15H_PERF_CTL0, 6, 2, "F15H_PERF_CTL", DEC_AMD_CTL},
    {MSR_F15H_PERF_CTR0, 6, 2, "F15H_PERF_CTR", DEC_COUNTER},
    {MSR_AMD_PERF_GLOBAL_STATUS, 1, 1, "AMD_PERF_GLOBAL_STATUS", DEC_AMD_GLOBAL},
    {MSR_AMD_PERF_GLOBAL_CTL, 1, 1, "AMD_PERF_GLOBAL_CTL", DEC_AMD_GLOBAL},
    {MSR_AMD_PERF_GLOBAL_STATUS_CLR, 1, 1, "AMD_PERF_GLOBAL_STATUS_CLR", DEC_AMD_GLOBAL},
};

static const struct msr_range *find_msr(uint32_t msr, unsigned *index)
{
    for (size_t i = 0; i < ARRAY_SIZE(pmu_msrs); i++) {
        const struct msr_range *m = &pmu_msrs[i];
        if (msr < m->base || (msr - m->base) % m->stride != 0)
            continue;
        if ((msr - m->base) / m->stride < m->count) {
            *index = (msr - m->base) / m->stride;
            return m;
        }
    }
    return NULL;
}

const char *pmc_msr_name(uint32_t msr, char *buf, size_t size)
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

static void decode_evtsel(struct pmc_text *o, uint64_t v, bool amd)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } flags[] = {
        {PERFEVTSEL_USR, "USR"}, {PERFEVTSEL_OS, "OS"},   {PERFEVTSEL_EDGE, "EDGE"},
        {PERFEVTSEL_PC, "PC"},   {PERFEVTSEL_INT, "INT"}, {PERFEVTSEL_ANY, "ANY"},
        {PERFEVTSEL_EN, "EN"},   {PERFEVTSEL_INV, "INV"},
    };
    if (v == 0) {
        pmc_text_put(o, " (off)");
        return;
    }
    unsigned event = (unsigned)(v & PERFEVTSEL_EVENT_MASK);
    if (amd)
        event |= (unsigned)((v >> AMD_PERF_CTL_EVENT_HI_SHIFT) & 0xF) << 8;
    pmc_text_put(o, " (event 0x%02x umask 0x%02x", event,
                 (unsigned)(v >> PERFEVTSEL_UMASK_SHIFT) & 0xFF);
    for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
        if (v & flags[i].bit)
            pmc_text_put(o, " %s", flags[i].name);
    if ((v >> PERFEVTSEL_CMASK_SHIFT) & 0xFF)
        pmc_text_put(o, " cmask %u", (unsigned)(v >> PERFEVTSEL_CMASK_SHIFT) & 0xFF);
    pmc_text_put(o, ")");
}

static void decode_fixed_ctrl(struct pmc_text *o, uint64_t v)
{
    pmc_text_put(o, " (");
    const char *sep = "";
    for (unsigned i = 0; i < 4; i++) {
        unsigned f = (unsigned)(v >> (4 * i)) & 0xF;
        if (f == 0)
            continue;
        pmc_text_put(o, "%sFIXED%u%s%s%s%s", sep, i, f & FIXED_CTR_CTRL_OS ? " OS" : "",
                     f & FIXED_CTR_CTRL_USR ? " USR" : "", f & FIXED_CTR_CTRL_ANY ? " ANY" : "",
                     f & FIXED_CTR_CTRL_PMI ? " PMI" : "");
        sep = ", ";
    }
    pmc_text_put(o, "%s)", *sep ? "" : "all off");
}

static void decode_global(struct pmc_text *o, uint64_t v, bool amd)
{
    pmc_text_put(o, " (");
    const char *sep = "";
    for (unsigned b = 0; b < 64; b++) {
        if (!(v & (1ull << b)))
            continue;
        if (amd)
            pmc_text_put(o, "%sCTR%u", sep, b);
        else if (b < PERF_GLOBAL_FIXED_SHIFT)
            pmc_text_put(o, "%sPMC%u", sep, b);
        else if (b < PERF_GLOBAL_FIXED_SHIFT + 4)
            pmc_text_put(o, "%sFIXED%u", sep, b - PERF_GLOBAL_FIXED_SHIFT);
        else
            pmc_text_put(o, "%sbit%u", sep, b);
        sep = " ";
    }
    pmc_text_put(o, "%s)", *sep ? "" : "none");
}

// Counters hold -left while armed: show how many events remain to the overflow.
static void decode_counter(struct pmc_text *o, uint64_t v)
{
    if (v < (1ull << 31)) {
        pmc_text_put(o, " (%lu)", (unsigned long)v);
        return;
    }
    unsigned top = 63 - (unsigned)__builtin_clzll(v);
    uint64_t span = top == 63 ? 0 : 1ull << (top + 1); // 0 stands for 2^64
    pmc_text_put(o, " (%lu to overflow)", (unsigned long)(span - v));
}

static void decode_msr(struct pmc_text *o, const struct pmc_trace_record *r)
{
    char name[32];
    unsigned index;
    const struct msr_range *m = find_msr(r->reg, &index);
    const char *op = r->kind == PMC_TRACE_RDMSR ? "rdmsr" : "wrmsr";
    if (m == NULL) {
        pmc_text_put(o, "%s 0x%08x = 0x%08lx", op, r->reg, (unsigned long)r->value);
        return;
    }
    pmc_text_put(o, "%s %s = 0x%08lx", op, pmc_msr_name(r->reg, name, sizeof(name)),
                 (unsigned long)r->value);
    switch (m->decoder) {
    case DEC_COUNTER: decode_counter(o, r->value); break;
    case DEC_EVTSEL: decode_evtsel(o, r->value, false); break;
    case DEC_AMD_CTL: decode_evtsel(o, r->value, true); break;
    case DEC_FIXED_CTRL: decode_fixed_ctrl(o, r->value); break;
    case DEC_GLOBAL: decode_global(o, r->value, false); break;
    case DEC_AMD_GLOBAL: decode_global(o, r->value, true); break;
    case DEC_CAPABILITIES:
        pmc_text_put(o, " (%s)",
                     r->value & PERF_CAPABILITIES_FW_WRITE ? "FW_WRITE" : "no FW_WRITE");
        break;
    case DEC_PLAIN: break;
    }
}

static void decode_lapic(struct pmc_text *o, const struct pmc_trace_record *r)
{
    uint32_t v = (uint32_t)r->value;
    if (r->reg != LAPIC_LVT_PMC) {
        pmc_text_put(o, "lapic_write 0x%03x = 0x%08x", r->reg, v);
        return;
    }
    pmc_text_put(o, "lapic_write LVTPC = 0x%08x (vector 0x%02x %s%s)", v, v & 0xFF,
                 (v & (7u << 8)) == LVT_DELIVERY_NMI ? "NMI" : "fixed",
                 v & LVT_MASKED ? " masked" : "");
}

// HAL steps: what each is called and how its value is shown.
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

static void decode_step(struct pmc_text *o, const struct pmc_trace_record *r)
{
    char name[32];
    if (r->reg >= PMC_STEP_COUNT) {
        pmc_text_put(o, "step %u", r->reg);
        return;
    }
    pmc_text_put(o, "%s", steps[r->reg].name);
    if (r->source != PMC_TRACE_NO_SOURCE)
        pmc_text_put(o, " %s", profile_source_name((KPROFILE_SOURCE)r->source));
    switch (steps[r->reg].format) {
    case ARG_NONE: break;
    case ARG_DEC: pmc_text_put(o, " %s %lu", steps[r->reg].arg, (unsigned long)r->value); break;
    case ARG_HEX: pmc_text_put(o, " %s 0x%lx", steps[r->reg].arg, (unsigned long)r->value); break;
    case ARG_MSR:
        if (pmc_msr_name((uint32_t)r->value, name, sizeof(name)))
            pmc_text_put(o, " %s %s", steps[r->reg].arg, name);
        else
            pmc_text_put(o, " %s MSR 0x%x", steps[r->reg].arg, (unsigned)r->value);
        break;
    }
    if (r->reg == PMC_STEP_BUCKET)
        pmc_text_put(o, " of the profile at 0x%lx", (unsigned long)r->arg);
}

int pmc_trace_format(const struct pmc_trace_record *r, char *buf, size_t size)
{
    struct pmc_text o = {buf, size, 0};
    if (size)
        buf[0] = '\0';
    switch (r->kind) {
    case PMC_TRACE_RDMSR:
    case PMC_TRACE_WRMSR: decode_msr(&o, r); break;
    case PMC_TRACE_LAPIC: decode_lapic(&o, r); break;
    case PMC_TRACE_STEP: decode_step(&o, r); break;
    default: pmc_text_put(&o, "record kind %u", r->kind); break;
    }
    return o.len;
}
