// Counter values at hook events (ETW's PMC counters: a logger names up to 4
// profile sources and up to 4 hook events, and at each of those events the
// processor's running totals of its counters are recorded, so that
// differences give per-thread or per-call counts), written into the log of
// the process that created the logger (hwpmc/log.h). The context-switch
// session of NtPmcCswitchLog is one such logger (up to 8 events, the context
// switch its one hook, PMCLOG_CSWITCH records); the others are reached by
// TRACEHANDLE (NtPmcTraceLogger, NtSetSystemInformation) and write
// PMCLOG_HOOK records.
#pragma once
#include <stdbool.h>

#include "lib/abi/etw.h"
#include "lib/abi/status.h"

struct process;

// Start a context-switch session recording events (software events, or
// profile sources the PMU can count on counters of their own) into owner's
// log, or stop it; privileged callers only (the system-call layer checks).
// While it runs the log is in use (pmc_log_use): STATUS_PMC_NO_LOG when owner
// has none. It stops by itself when its owner exits.
NTSTATUS pmc_logger_cswitch_start(struct process *owner, const uint32_t *events, unsigned n);
NTSTATUS pmc_logger_cswitch_stop(void);

// The ETW-style loggers (privileged callers; the system-call layer checks).
// create: STATUS_PMC_NO_LOG without a log of owner's, STATUS_INSUFFICIENT_RESOURCES
// when PMC_LOGGERS_MAX exist. The others: STATUS_INVALID_HANDLE unless h is a
// logger of caller's; set_counters: STATUS_INVALID_PARAMETER for 0 or more
// than ETW_MAX_PMC_COUNTERS sources or an unknown one, STATUS_NOT_SUPPORTED
// for one no counter here can count, STATUS_INSUFFICIENT_RESOURCES when there
// are more than counters; set_hooks: STATUS_INVALID_PARAMETER for 0 or more
// than ETW_MAX_PMC_EVENTS IDs or one with no hook here. A logger records once
// it has both lists.
NTSTATUS pmc_logger_create(struct process *owner, TRACEHANDLE *out);
NTSTATUS pmc_logger_close(struct process *caller, TRACEHANDLE h);
NTSTATUS pmc_logger_set_counters(struct process *caller, TRACEHANDLE h, const uint32_t *sources,
                                 unsigned n);
NTSTATUS pmc_logger_set_hooks(struct process *caller, TRACEHANDLE h, const uint32_t *ids,
                              unsigned n);

// The hooks, for the layers above that see the events (system calls, the
// profile interrupt) and for this layer's own watchers. Each costs one load
// of pmc_hook_mask while no logger wants it.
enum {
    HOOK_CSWITCH = 0x01,
    HOOK_SYSCALL_ENTER = 0x02,
    HOOK_SYSCALL_EXIT = 0x04,
    HOOK_PROFILE = 0x08,
    HOOK_PAGE_FAULT_DZ = 0x10,
    HOOK_PAGE_FAULT_AV = 0x20,
    HOOK_PROCESS_DELETE = 0x40,
};
extern volatile uint32_t pmc_hook_mask;
void pmc_hook_fire(uint32_t bit, uint32_t pid, uint32_t arg); // any context

static inline void pmc_hook(uint32_t bit, uint32_t pid, uint32_t arg)
{
    if (__atomic_load_n(&pmc_hook_mask, __ATOMIC_RELAXED) & bit)
        pmc_hook_fire(bit, pid, arg);
}

void pmc_loggers_init(void); // at boot: watch switches, exits and faults
