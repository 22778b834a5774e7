// pmc_text_put: vsnprintf at the end of what is already there; the PMU MSRs'
// names.
#include <stdarg.h>

#include "lib/kprintf.h"

#include "arch/x86/msr.h"

#include "pmc/hal/text.h"

void pmc_text_put(struct pmc_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t at = (size_t)t->len < t->size ? (size_t)t->len : t->size;
    int n = t->buf ? vsnprintf(t->buf + at, t->size - at, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += n;
}

// Every PMU MSR the pmc code touches: count registers at base + stride * i.
static const struct msr_range {
    uint32_t base;
    uint8_t count, stride;
    const char *name; // numbered when count > 1
} pmu_msrs[] = {
    {MSR_IA32_PMC0, 8, 1, "IA32_PMC"},
    {MSR_IA32_A_PMC0, 8, 1, "IA32_A_PMC"},
    {MSR_IA32_PERFEVTSEL0, 8, 1, "IA32_PERFEVTSEL"},
    {MSR_IA32_FIXED_CTR0, 4, 1, "IA32_FIXED_CTR"},
    {MSR_IA32_FIXED_CTR_CTRL, 1, 1, "IA32_FIXED_CTR_CTRL"},
    {MSR_IA32_PERF_GLOBAL_STATUS, 1, 1, "IA32_PERF_GLOBAL_STATUS"},
    {MSR_IA32_PERF_GLOBAL_CTRL, 1, 1, "IA32_PERF_GLOBAL_CTRL"},
    {MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1, 1, "IA32_PERF_GLOBAL_OVF_CTRL"},
    {MSR_IA32_PERF_CAPABILITIES, 1, 1, "IA32_PERF_CAPABILITIES"},
    {MSR_K7_PERF_CTL0, 4, 1, "K7_PERF_CTL"},
    {MSR_K7_PERF_CTR0, 4, 1, "K7_PERF_CTR"},
    {MSR_F15H_PERF_CTL0, 6, 2, "F15H_PERF_CTL"},
    {MSR_F15H_PERF_CTR0, 6, 2, "F15H_PERF_CTR"},
    {MSR_AMD_PERF_GLOBAL_STATUS, 1, 1, "AMD_PERF_GLOBAL_STATUS"},
    {MSR_AMD_PERF_GLOBAL_CTL, 1, 1, "AMD_PERF_GLOBAL_CTL"},
    {MSR_AMD_PERF_GLOBAL_STATUS_CLR, 1, 1, "AMD_PERF_GLOBAL_STATUS_CLR"},
};

const char *pmc_msr_name(uint32_t msr, char *buf, size_t size)
{
    for (size_t i = 0; i < ARRAY_SIZE(pmu_msrs); i++) {
        const struct msr_range *m = &pmu_msrs[i];
        if (msr < m->base || (msr - m->base) % m->stride != 0 ||
            (msr - m->base) / m->stride >= m->count)
            continue;
        if (m->count == 1)
            snprintf(buf, size, "%s", m->name);
        else
            snprintf(buf, size, "%s%u", m->name, (msr - m->base) / m->stride);
        return buf;
    }
    return NULL;
}
