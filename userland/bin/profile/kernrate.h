// Kernrate-style reports from profile buckets: a header, a table of modules
// and, per module, a table of its busiest functions.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <profrange.h>

// Everything one source's report says.
struct prof_report {
    const char *title; // what was profiled, e.g. "primes 20000"
    const struct sys_profile_source *source;
    uint64_t interval; // in force during the run
    uint64_t elapsed_ns;
    uint32_t ncpus; // processors whose samples counted
    const struct prof_range *ranges;
    size_t nranges;
    unsigned top;     // function rows per module
    const char *note; // printed under the header when not NULL
    // ProfileTime only: periods that passed on the profiled CPUs since it
    // started, and of those the ones missed (the CPU came back a period or
    // more late, as when the host stopped a vCPU: one tick is delivered then,
    // not a burst at one instruction). Both 0 for other sources.
    uint64_t periods, missed;
    int approximate_time; // plain TCG: time sampling follows the host's scheduling
};

uint64_t prof_range_hits(const struct prof_range *r);
void prof_report_print(const struct prof_report *r);
