// `pmc trace`: a per-CPU ring of what the HAL did to the hardware.
//
// Every PMU register access of the interfaces goes through pmc_rdmsr/pmc_wrmsr
// (and LVTPC writes through pmc_lapic_write); HAL steps are recorded with
// PMC_TRACE_STEP. Off by default, and then each costs one predictable branch.
// Records are raw (register number and value) and decoded into text when read.
#pragma once
#include "lib/abi.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "lib/types.h"

enum pmc_trace_kind {
    PMC_TRACE_RDMSR = 1,
    PMC_TRACE_WRMSR,
    PMC_TRACE_LAPIC, // write of a LAPIC register (reg = MMIO offset)
    PMC_TRACE_STEP,  // a HAL step (reg = enum pmc_trace_step)
};

// HAL steps, named in trace.c's step table.
enum pmc_trace_step {
    PMC_STEP_INIT,         // pmc_init: value = CPU count
    PMC_STEP_INITIALIZE,   // InitializeProfiling on this CPU
    PMC_STEP_START,        // HalStartProfileInterrupt for a source's first user
    PMC_STEP_STOP,         // HalStopProfileInterrupt for its last
    PMC_STEP_ENABLE,       // EnableMonitoring: value = the counter's MSR
    PMC_STEP_NO_COUNTER,   // EnableMonitoring found no free counter
    PMC_STEP_DISABLE,      // DisableMonitoring: value = the counter's MSR
    PMC_STEP_SET_INTERVAL, // value = interval in force
    PMC_STEP_PMI,          // PMI entry
    PMC_STEP_SPURIOUS,     // PMI with nothing overflowed
    PMC_STEP_SAMPLE,       // value = interrupted IP
    PMC_STEP_THROTTLE,     // source stopped on this CPU: too many samples
    PMC_STEP_STUCK,        // overflow kept recurring: counters reset
    PMC_STEP_BUCKET,       // a sample counted: value = bucket index, arg = the profile's RangeBase
    PMC_STEP_STRETCH,      // throttle: value = periods the counter's next arm covers
    PMC_STEP_COUNT
};

#define PMC_TRACE_NO_SOURCE 0xFF
#define PMC_TRACE_RING      4096 // records per CPU: a short command's samples and HAL steps

struct pmc_trace_record {
    uint64_t time_ns; // clock_ns() when recorded
    uint64_t value;   // MSR/LAPIC value, or the step's argument
    uint64_t arg;     // a second argument (PMC_STEP_BUCKET: the profile's RangeBase)
    uint32_t reg;     // MSR number, LAPIC offset or step
    uint32_t pid;     // sample steps: the interrupted process (0: none), set by the filter
    uint8_t kind;     // enum pmc_trace_kind
    uint8_t cpu;
    uint8_t source; // KPROFILE_SOURCE of a step, PMC_TRACE_NO_SOURCE otherwise
    uint8_t flags;  // sample steps: PMC_TRACE_* below, set by the filter
};

#define PMC_TRACE_PROFILED 0x01 // the interrupted scope has a started profile on the source

extern bool pmc_trace_on;

// Sample steps (PMC_STEP_PMI, _SAMPLE, _BUCKET) go through this filter when it
// is set: it fills in pid and flags and says whether to keep the record (so a
// trace can leave out the idle CPUs and the processes it is not about). The
// profile layer sets it; the pmc layer knows nothing of processes.
extern bool (*pmc_trace_sample_filter)(struct pmc_trace_record *r);

void pmc_trace_record(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, unsigned source);
void pmc_trace_record2(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, uint64_t arg,
                       unsigned source);

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

static inline void pmc_lapic_write(uint32_t reg, uint32_t value)
{
    if (__builtin_expect(pmc_trace_on, 0))
        pmc_trace_record(PMC_TRACE_LAPIC, reg, value, PMC_TRACE_NO_SOURCE);
    lapic_write(reg, value);
}

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

// Turn tracing on (allocating the rings the first time: STATUS_NO_MEMORY if that
// fails) or off. Rings are kept while off so a reader never races a free.
NTSTATUS pmc_trace_enable(void);
void pmc_trace_disable(void);
void pmc_trace_clear(void);
void pmc_trace_free(void); // only when no CPU can be tracing (shutdown, tests)

// Copy up to max records of cpu, oldest first; returns how many. Records being
// written by cpu meanwhile may be torn: stop tracing for an exact copy.
size_t pmc_trace_read(unsigned cpu, struct pmc_trace_record *out, size_t max);
uint64_t pmc_trace_dropped(unsigned cpu); // records overwritten before being read

// One record as a line of text, e.g.
// "wrmsr IA32_PERFEVTSEL0 = 0x0053003c (event 0x3c umask 0x00 USR OS INT EN)".
// Returns the length snprintf would; the line has no newline.
int pmc_trace_format(const struct pmc_trace_record *r, char *buf, size_t size);

// Name of an MSR the pmc code touches ("IA32_PMC1"), NULL if not a PMU MSR.
const char *pmc_msr_name(uint32_t msr, char *buf, size_t size);
