// NT's per-logger PMC counters (ETW): the system-information classes, hook IDs,
// phnt's structures and the NtPmcTraceLogger operations.
//
// Part of the kernel/user ABI: included by the kernel and by userland;
// nothing here may depend on either.
#pragma once
#include <stdint.h>

// ---------------------------------------------------------------------------
// NT's per-logger PMC counters (ETW): a trace logger names up to 4 profile
// sources (its counter list) and up to 4 hook events; at each of those events
// every counter's raw value on that processor is recorded, in list order, as
// a PMCLOG_HOOK record in the logger creator's PMC log. Reached as Windows
// programs reach it: NtSetSystemInformation(SystemPerformanceTraceInformation)
// with EventTraceProfileCounterListInformation and
// EventTraceProfileEventListInformation, NtQuerySystemInformation with
// EventTraceProfileSourceListInformation. The structures are laid out as
// phnt's ntexapi.h gives them; the logger is this kernel's (NtPmcTraceLogger,
// below) since it has no ETW sessions. docs/counting.md has the statuses.
// ---------------------------------------------------------------------------
typedef uint64_t TRACEHANDLE;

#define SystemPerformanceTraceInformation 0x1F // SYSTEM_INFORMATION_CLASS

// EVENT_TRACE_INFORMATION_CLASS (the first ULONG of the buffer)
#define EventTraceProfileSourceListInformation  0x0D // query: PROFILE_SOURCE_INFO chain
#define EventTraceProfileEventListInformation   0x0E // set: the hook IDs
#define EventTraceProfileCounterListInformation 0x0F // set: the profile sources

#define ETW_MAX_PMC_COUNTERS 4
#define ETW_MAX_PMC_EVENTS   4

// HookIds (phnt's ntwmi.h: the event's group << 8 | its type).
#define ETW_HOOK_CSWITCH         0x0524 // WMI_LOG_TYPE_CONTEXTSWAP
#define ETW_HOOK_SYSCALL_ENTER   0x0F33 // PERFINFO_LOG_TYPE_SYSCALL_ENTER
#define ETW_HOOK_SYSCALL_EXIT    0x0F34 // PERFINFO_LOG_TYPE_SYSCALL_EXIT
#define ETW_HOOK_SAMPLED_PROFILE 0x0F2E // PERFINFO_LOG_TYPE_SAMPLED_PROFILE
#define ETW_HOOK_PAGE_FAULT_DZ   0x020B // WMI_LOG_TYPE_PAGE_FAULT_DEMAND_ZERO
#define ETW_HOOK_PAGE_FAULT_AV   0x020F // WMI_LOG_TYPE_PAGE_FAULT_ACCESS_VIOLATION
#define ETW_HOOK_PROCESS_DELETE  0x0302 // WMI_LOG_TYPE_PROCESS_DELETE (process end)

// Sets 0x0E and 0x0F: {class; TraceHandle; ULONG list[]}; the buffer's length
// gives the count: (len - offsetof(list)) / 4, 1 to 4.
typedef struct _EVENT_TRACE_PROFILE_COUNTER_INFORMATION {
    uint32_t EventTraceInformationClass;
    TRACEHANDLE TraceHandle;
    uint32_t ProfileSource[1];
} EVENT_TRACE_PROFILE_COUNTER_INFORMATION;

typedef struct _EVENT_TRACE_SYSTEM_EVENT_INFORMATION {
    uint32_t EventTraceInformationClass;
    TRACEHANDLE TraceHandle;
    uint32_t HookId[1];
} EVENT_TRACE_SYSTEM_EVENT_INFORMATION, EVENT_TRACE_PROFILE_EVENT_INFORMATION;

// Query 0x0D: the caller sets the class; the kernel writes the
// PROFILE_SOURCE_INFO entries from Profile's offset (8) on, each 8-aligned and
// chained by NextEntryOffset (0 on the last).
typedef struct _EVENT_TRACE_PROFILE_LIST_INFORMATION {
    uint32_t EventTraceInformationClass;
    uint32_t Spare;
    uint64_t Profile[1]; // phnt: PPROFILE_SOURCE_INFO Profile[1]; here the first entry
} EVENT_TRACE_PROFILE_LIST_INFORMATION;

typedef struct _PROFILE_SOURCE_INFO {
    uint32_t NextEntryOffset; // bytes to the next entry, 0 on the last
    uint32_t Source;          // KPROFILE_SOURCE, or PMC_EVENT_SW(e)
    uint32_t MinInterval, MaxInterval;
    uint64_t Reserved;
    uint16_t Description[1]; // UTF-16, NUL-terminated: "TotalCycles", "task-clock"
} PROFILE_SOURCE_INFO;

_Static_assert(sizeof(EVENT_TRACE_PROFILE_COUNTER_INFORMATION) == 0x18, "phnt's layout");

// NtPmcTraceLogger operations (privileged). CREATE: a logger writing into the
// caller's log (which must exist), *handle set; it records nothing until it
// has both a counter list and an event list. CLOSE: *handle read; stopped
// and freed. A logger also ends when its creator exits.
#define PMC_LOGGER_CREATE 1
#define PMC_LOGGER_CLOSE  2
#define PMC_LOGGERS_MAX   4 // loggers at once (STATUS_INSUFFICIENT_RESOURCES beyond)
