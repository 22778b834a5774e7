// The sampling kinds of the PMC object (hwpmc/kind_sampling.c): what the
// sample fan-out (ke/sample.c) asks of them in the interrupt. (A sampler's
// take of a tick, pmc_sampler_take, is the log's: hwpmc/log.h.)
#pragma once
#include "lib/abi/pmclog.h"

#include "arch/x86/trapframe.h"

#include "pmc/hwpmc/pmc.h"

// The samplers of the PMCs sampling source on cpu while pr runs there, made
// ready and chained: the first, or NULL when none. In the interrupt.
struct pmc_sampler *pmc_samplers_make(KPROFILE_SOURCE source, const struct process *pr,
                                      unsigned cpu);
