// The counting log, read with NtPmcCswitchLog: the counter values of every
// CPU at every context switch (ETW's PMC counters: a session names up to 8
// events, and each processor's totals are recorded with each switch, so
// differences give per-thread counts), and the records counting PMCs write
// for their processes (PMC_LOG_PROCCSW, PMC_LOG_PROCEXIT).
#pragma once
#include "arch/x86/percpu.h"
#include "core/sched.h"
#include "lib/abi.h"

extern volatile bool cswitch_log_on; // a session is recording switches

void cswitch_log_init(void); // at boot: watch context switches
// A counting PMC's record for process pid; interrupts off.
void cswitch_log_proc(enum pmc_log_type type, uint64_t pmc_id, uint32_t source, uint32_t pid,
                      uint64_t value);

// Start a session recording events (software events, or profile sources the
// PMU can count on counters of their own) or stop it; privileged callers only
// (the system-call layer checks). Starting empties the log.
NTSTATUS cswitch_log_start(const uint32_t *events, unsigned n);
NTSTATUS cswitch_log_stop(void);
// Copy whole records from record index first on (per CPU, then the process
// records); *bytes gets the bytes copied (0: no more).
NTSTATUS cswitch_log_read(uint64_t first, void *buf, size_t len, size_t *bytes);
