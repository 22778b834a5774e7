// PMU register access for the PMC interfaces: every MSR read and write and every LVTPC write.
//
// The interfaces (hal/emon.c, hal/amd64.c, hal/counts.c, hal/pmi.c, pmc.c) reach the
// counters' MSRs (Intel SDM vol. 3B, "Performance Monitoring"; AMD APM
// vol. 2, 13.2) only through pmc_rdmsr and pmc_wrmsr, and the local APIC's
// performance-counter LVT entry only through pmc_lapic_write, so that `pmc
// trace` (hal/trace.h) records each access and the LVTPC's delivery mode follows
// the PMI policy chosen at boot (pmc_pmi_as_nmi, hal/pmi.h).
#pragma once
#include "lib/types.h"

#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"

#include "pmc/hal/trace.h"

// The PMI is delivered as NMI (pmi=nmi, hal/pmi.h; set by pmc_pmi_choose).
extern bool pmc_pmi_as_nmi;

static inline uint64_t pmc_rdmsr(uint32_t msr)
{
    uint64_t v = rdmsr(msr);
    if (__builtin_expect(pmc_trace_on, 0))
        pmc_trace_record(PMC_TRACE_RDMSR, msr, v, PMC_TRACE_NO_SOURCE);
    return v;
}

static inline void pmc_wrmsr(uint32_t msr, uint64_t value)
{
    if (__builtin_expect(pmc_trace_on, 0))
        pmc_trace_record(PMC_TRACE_WRMSR, msr, value, PMC_TRACE_NO_SOURCE);
    wrmsr(msr, value);
}

// A LAPIC register write; a write of the LVTPC (LAPIC_LVT_PMC) gets delivery
// mode NMI (bits 10:8 = 100b, Intel SDM vol. 3A, "Local Vector Table") while
// the PMI is delivered as NMI.
static inline void pmc_lapic_write(uint32_t reg, uint32_t value)
{
    if (reg == LAPIC_LVT_PMC && pmc_pmi_as_nmi)
        value = (value & ~(7u << 8)) | LVT_DELIVERY_NMI;
    if (__builtin_expect(pmc_trace_on, 0))
        pmc_trace_record(PMC_TRACE_LAPIC, reg, value, PMC_TRACE_NO_SOURCE);
    lapic_write(reg, value);
}
