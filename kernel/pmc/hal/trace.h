// `pmc trace`: per-CPU rings (lib/ring.h) of what the HAL did to the hardware.
//
// Every PMU register access of the interfaces goes through hal/pmu_regs.h, which
// records it here with pmc_trace_record; HAL steps are recorded with
// PMC_TRACE_STEP. Off by default, and then each costs one predictable branch.
// Records are raw (struct pmclog_trace in lib/abi/pmclog.h: register number and value, or
// step and argument) and stay so: SysPmcTrace hands them out binary and
// userland decodes them. A full ring keeps its records: new ones are lost and
// counted, and the drain reports them in a PMCLOG_LOST record.
#pragma once
#include "lib/abi/pmclog.h"
#include "lib/abi/status.h"
#include "lib/ring.h"
#include "lib/types.h"

#define PMC_TRACE_RING_BYTES (PMC_TRACE_RING_RECORDS * (uint32_t)sizeof(struct pmclog_trace))

extern bool pmc_trace_on;

// Sample steps (PMC_STEP_PMI, _SAMPLE, _BUCKET) go through this filter when it
// is set: it fills in pid and flags, may name the process first
// (pmc_trace_write_irqoff) and says whether to keep the record (so a trace
// can leave out the idle CPUs and the processes it is not about). The
// system-call layer sets it; the pmc layer knows nothing of processes.
extern bool (*pmc_trace_sample_filter)(struct pmclog_trace *r);

void pmc_trace_record(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, unsigned source);
void pmc_trace_record2(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, uint64_t arg,
                       unsigned source);

#define PMC_TRACE_STEP(step, source, value) \
    do { \
        if (__builtin_expect(pmc_trace_on, 0)) \
            pmc_trace_record(PMC_TRACE_STEP, (step), (value), (unsigned)(source)); \
    } while (0)

// Where a sample landed: one record per bucket counted (the profile layer).
#define PMC_TRACE_BUCKET(source, index, range_base) \
    do { \
        if (__builtin_expect(pmc_trace_on, 0)) \
            pmc_trace_record2(PMC_TRACE_STEP, PMC_STEP_BUCKET, (index), (range_base), \
                              (unsigned)(source)); \
    } while (0)

// Another record into this CPU's ring, with interrupts off (the sample filter
// naming a process): rec's type and body are the caller's; cpu, size and tsc
// are filled in. Lost (and counted) when the ring is full.
void pmc_trace_write_irqoff(struct pmclog_header *rec, uint32_t size);

// The rings, allocated the first time (STATUS_NO_MEMORY if that fails): for
// pmc_trace_enable (hal/deliver.h), which turns tracing on and off. Rings are
// kept while off so a reader never races a free.
NTSTATUS pmc_trace_rings_alloc(void);
void pmc_trace_clear(void); // discard every record and lost count so far
void pmc_trace_free(void);  // only when no CPU can be tracing (shutdown, tests)

// Drain every CPU's ring into s: CPU by CPU, each one's records oldest first,
// whole, then a PMCLOG_LOST record when it lost any (ring_drain). Records
// that did not fit, or whose copy failed, stay for the next drain.
NTSTATUS pmc_trace_drain(struct ring_sink *s);
uint64_t pmc_trace_lost(unsigned cpu); // records cpu lost so far, its ring full
