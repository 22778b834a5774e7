// Counter values at every context switch (ETW's PMC counters: a session
// names up to 8 events, and each processor's running totals are recorded
// with each switch, so that differences give per-thread counts), written as
// PMCLOG_CSWITCH records into the log of the process that started the
// session (pmc_log.h).
#pragma once
#include "lib/abi.h"

struct process;

// Start a session recording events (software events, or profile sources the
// PMU can count on counters of their own) into owner's log, or stop it;
// privileged callers only (the system-call layer checks). While it runs the
// log is in use (pmc_log_use): STATUS_PMC_NO_LOG when owner has none. It
// stops by itself when its owner exits.
NTSTATUS cswitch_counters_start(struct process *owner, const uint32_t *events, unsigned n);
NTSTATUS cswitch_counters_stop(void);

void cswitch_counters_init(void); // at boot: watch context switches and exits
