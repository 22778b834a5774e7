// `pmc trace`'s records decoded: what SysPmcTrace(PMC_TRACE_READ) hands out
// (struct pmclog_trace, PMCLOG_MAP and PMCLOG_LOST records, kernel/lib/abi/pmclog.h)
// turned into the lines `pmc trace` prints: MSR names, the PMU registers'
// fields, LVTPC, HAL steps.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/abi/syscalls.h"
#include "lib/abi/pmclog.h"

// The record at *pos of buf[0, len), whole, and *pos moved past it; NULL at
// the end, or at a record whose size is not a header's or more, a multiple of 8,
// within len.
const struct pmclog_header *pmctrace_next(const void *buf, size_t len, size_t *pos);

// Process names, from the trace's PMCLOG_MAP records (the kernel writes one
// the first time a sample finds a process; the process may be gone since).
#define PMCTRACE_NAMES 64
struct pmctrace_names {
    unsigned n;
    struct {
        uint32_t pid;
        char name[PROCESS_NAME_MAX];
    } e[PMCTRACE_NAMES];
};
void pmctrace_names_add(struct pmctrace_names *t, const struct pmclog_map *m);
const char *pmctrace_name(const struct pmctrace_names *t, uint32_t pid); // NULL: never named

// A record's time: its TSC in nanoseconds since boot, by a SysClock reading
// (which gives the TSC, its frequency and the nanoseconds at one instant).
uint64_t pmctrace_ns(const struct sys_clock *c, uint64_t tsc);

// "IA32_PMC1", "F15H_PERF_CTL0": name of a PMU MSR the kernel's pmc code
// touches, NULL for any other.
const char *pmctrace_msr_name(uint32_t msr, char *buf, size_t size);
// "ProfileLLCMisses" for a KPROFILE_SOURCE, "Profile?" for an unknown one.
const char *pmctrace_source_name(unsigned source);

// One record as text, e.g.
// "wrmsr IA32_PERFEVTSEL0 = 0x0053003c (event 0x3c umask 0x00 USR OS INT EN)".
// A sample step ends with its process: " pid 7 primes" (name NULL: "?") or
// " idle", then " profiled" when a started profile covered it. Returns the
// length snprintf would; the text has no newline.
int pmctrace_format(const struct pmclog_trace *r, const char *name, char *buf, size_t size);

// A line of `pmc trace show` (no newline): "cpu0    22017.791 us  " (ns, the
// record's time, in microseconds) and the record's text.
int pmctrace_line(const struct pmclog_trace *r, const char *name, uint64_t ns, char *buf,
                  size_t size);
// "cpu1 lost: 12 records: its ring was full", for a PMCLOG_LOST record.
int pmctrace_lost_line(const struct pmclog_lost *l, char *buf, size_t size);
