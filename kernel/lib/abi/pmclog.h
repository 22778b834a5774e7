// The PMC log's records (struct pmclog_*), the `pmc trace` records and their operations.
//
// Part of the kernel/user ABI: included by the kernel and by userland;
// nothing here may depend on either.
#pragma once
#include <stdint.h>

#include "lib/abi/syscalls.h"

// SysPmcTrace operations (the system-profile privilege is required).
#define PMC_TRACE_ON     1 // start recording every HAL step and PMU register access
#define PMC_TRACE_OFF    2
#define PMC_TRACE_CLEAR  3
#define PMC_TRACE_READ   4 // drain: whole records (PMCLOG_TRACE, PMCLOG_MAP, PMCLOG_LOST), consumed
#define PMC_TRACE_FILTER 5 // buf = a pid: keep samples of it and its descendants only; 0: all

// Counter values at every context switch (ETW's PMC counters: a session names
// up to 4, later 8, profile sources, and each processor's counters are
// recorded with every context switch), as PMCLOG_CSWITCH records in the
// caller's log. NtPmcCswitchLog operations:
#define PMC_CSWITCH_START 1 // buf: uint32_t events[n] (n <= PMC_CSWITCH_MAX_EVENTS); privileged
#define PMC_CSWITCH_STOP  2

#define PMC_CSWITCH_MAX_EVENTS 8

// Records, one family for every mode, for the log and for `pmc trace`: a
// header, then the body; sizes are multiples of 8. Times are the header's
// TSC; the first record a reader gets after the log is configured is a
// PMCLOG_INITIALIZE record, whose tsc_hz turns them into nanoseconds.
enum pmclog_type {
    PMCLOG_SAMPLE = 1,     // struct pmclog_sample
    PMCLOG_MAP = 2,        // struct pmclog_map: a program image (exec), or the kernel's (pid 0)
    PMCLOG_EXIT = 3,       // struct pmclog_exit: a process's total at exit (PMC_F_LOG_PROCEXIT)
    PMCLOG_CSW = 4,        // struct pmclog_csw: one scheduling's, at switch-out (PMC_F_LOG_PROCCSW)
    PMCLOG_USER = 5,       // struct pmclog_user: NtPmcWriteLog
    PMCLOG_LOST = 6,       // struct pmclog_lost: records this CPU dropped, ring full
    PMCLOG_TRACE = 7,      // struct pmclog_trace: a `pmc trace` record (SysPmcTrace only)
    PMCLOG_INITIALIZE = 8, // struct pmclog_initialize: the log's time base, first
    PMCLOG_CSWITCH = 9,    // struct pmclog_cswitch: counter values at a context switch
    PMCLOG_HOOK = 10,      // struct pmclog_hook: a trace logger's counter values at a hook event
    PMCLOG_OFFCPU = 11,    // struct pmclog_offcpu: a target left its CPU (PMC_F_LOG_OFFCPU)
    PMCLOG_ONCPU = 12,     // struct pmclog_oncpu: it came back, and how long it was away
};

// Why a thread left its CPU: what it blocked on (the scheduler's sleep_on
// callers say), or runnable (preempted at the end of its slice, or yielded)
// when it was still ready to run. Linux's perf sched timehist tells "wait
// time" from "scheduling delay" the same way.
enum thread_wait {
    WAIT_RUNNABLE = 0, // preempted or yielded: ready, waiting for a CPU
    WAIT_SLEEP = 1,    // a timed sleep (SysSleep)
    WAIT_CHILD = 2,    // a process's exit (SysWait)
    WAIT_CONSOLE = 3,  // console input
    WAIT_MUTEX = 4,    // a kernel mutex
    WAIT_OTHER = 5,    // any other event
    WAIT_KINDS = 6
};

struct pmclog_header {
    uint16_t type; // enum pmclog_type
    uint16_t cpu;
    uint32_t size; // bytes, this header included
    uint64_t tsc;
};

#define PMCLOG_SAMPLE_USER  0x1 // the sampled IP was in ring 3
#define PMCLOG_SAMPLE_TRUNC 0x2 // the chain was cut: depth reached, or a bad or unreadable frame
#define PMCLOG_SAMPLE_CHAIN 0x4 // frames beyond the IP were asked for (PMC_F_CALLCHAIN)

struct pmclog_sample {
    struct pmclog_header h;
    uint32_t pid, tid; // 0 for the idle thread
    uint32_t pmc; // the PMC's id (struct pmc_driver_stats lists none; the report uses the source)
    uint16_t source;  // KPROFILE_SOURCE
    uint16_t flags;   // PMCLOG_SAMPLE_*
    uint16_t nframes; // frames[0] is the IP; leaf first
    uint16_t nkernel; // frames[0..nkernel) are kernel addresses, the rest user ones
    uint32_t reserved;
    uint64_t frames[];
};

// Laid out as struct pmclog_sample (the chain is captured the same way):
// reason where the sample has its source, seq where it has reserved.
struct pmclog_offcpu {
    struct pmclog_header h;
    uint32_t pid, tid;
    uint32_t pmc;
    uint16_t reason;  // enum thread_wait
    uint16_t flags;   // PMCLOG_SAMPLE_* (never PMCLOG_SAMPLE_USER: it is in the kernel)
    uint16_t nframes; // frames[0] is where the kernel switched; leaf first
    uint16_t nkernel;
    uint32_t seq; // the target's switch-outs so far: its PMCLOG_ONCPU record repeats it
    uint64_t frames[];
};

struct pmclog_oncpu {
    struct pmclog_header h; // h.tsc: the switch-in
    uint32_t pid, tid;
    uint32_t pmc, seq; // seq: the PMCLOG_OFFCPU record this ends
    uint16_t reason;   // as in that record
    uint16_t flags;    // PMCLOG_ONCPU_*
    uint16_t reserved[2];
    uint64_t off_ns; // from the switch-out to this switch-in (the scheduler's clock)
};
// The PMC stopped while the target was still away: off_ns runs to the stop,
// and h.tsc is the stop's (a wait that outlasts the recording is not lost).
#define PMCLOG_ONCPU_STOPPED 0x1

struct pmclog_map {
    struct pmclog_header h;
    uint32_t pid, parent;
    uint64_t base, end; // the executable range [base, end)
    char name[PROCESS_NAME_MAX];
};

// PMCLOG_EXIT and PMCLOG_CSW say what a PMC saw of one process: a sampling
// PMC its samples, a counting PMC its count (hwpmc's PROCEXIT and PROCCSW).
struct pmclog_exit {
    struct pmclog_header h;
    uint32_t pid, pmc;
    int32_t status, reserved;
    uint64_t value; // the process's total
};

struct pmclog_csw {
    struct pmclog_header h;
    uint32_t pid, pmc;
    uint64_t value; // during the scheduling that ended
};

struct pmclog_user {
    struct pmclog_header h;
    uint32_t pid, reserved;
    uint64_t userdata;
};

#define PMCLOG_VERSION 1

struct pmclog_initialize {
    struct pmclog_header h;
    uint32_t version; // PMCLOG_VERSION
    uint32_t ncpus;
    uint64_t tsc_hz; // header times are TSC ticks: ns = tsc * 10^9 / tsc_hz
};

struct pmclog_cswitch {
    struct pmclog_header h;
    uint32_t old_pid, new_pid; // 0 = the CPU's idle thread
    uint32_t nevents, reserved;
    uint16_t event[PMC_CSWITCH_MAX_EVENTS]; // what each value counts (pmc_alloc.source)
    uint64_t value[PMC_CSWITCH_MAX_EVENTS]; // the CPU's running totals of each event
};

// A trace logger's hook event (ETW's PMC extended item): the raw values of
// the logger's counters, in the order of its counter list, on h.cpu.
struct pmclog_hook {
    struct pmclog_header h;
    uint16_t hook_id;   // ETW_HOOK_* (the HookId of the event)
    uint16_t ncounters; // values in value[]
    uint32_t pid, tid;  // the thread the event happened on (CSwitch: the one switched to)
    uint32_t arg;       // CSwitch: the old pid; syscalls: the number; page faults: 0;
                        // process exit: the status; profile interrupt: the source
    uint64_t logger;    // the TRACEHANDLE
    uint64_t value[4];  // ETW_MAX_PMC_COUNTERS
};

struct pmclog_lost {
    struct pmclog_header h;
    uint64_t count; // samples (trace: records) dropped on h.cpu since the previous lost record
};

// `pmc trace`: what the HAL did to the hardware, one record per PMU register
// access or HAL step, in per-CPU rings of PMC_TRACE_RING_RECORDS records.
// SysPmcTrace(PMC_TRACE_READ) drains them like NtPmcReadLog: each CPU's
// records oldest first, whole, then a PMCLOG_LOST record with the records
// that CPU lost because its ring was full (a full ring keeps what it has:
// new records are lost and counted). A PMCLOG_MAP record (pid, parent, name;
// no range) names each process the first time a sample step finds it
// running. The records stay binary: userland decodes them (userland/lib/pmctrace.c).
enum pmc_trace_kind {
    PMC_TRACE_RDMSR = 1, // value was read from MSR reg
    PMC_TRACE_WRMSR = 2, // value is written to MSR reg
    PMC_TRACE_LAPIC = 3, // value is written to the LAPIC register at MMIO offset reg
    PMC_TRACE_STEP = 4,  // a HAL step: reg is an enum pmc_trace_step
};

enum pmc_trace_step {
    PMC_STEP_INIT = 0,         // pmc_init: value = CPU count
    PMC_STEP_INITIALIZE = 1,   // InitializeProfiling on this CPU
    PMC_STEP_START = 2,        // HalStartProfileInterrupt for a source's first user
    PMC_STEP_STOP = 3,         // HalStopProfileInterrupt for its last
    PMC_STEP_ENABLE = 4,       // EnableMonitoring: value = the counter's MSR
    PMC_STEP_NO_COUNTER = 5,   // EnableMonitoring found no free counter
    PMC_STEP_DISABLE = 6,      // DisableMonitoring: value = the counter's MSR
    PMC_STEP_SET_INTERVAL = 7, // value = interval in force
    PMC_STEP_PMI = 8,          // PMI entry
    PMC_STEP_SPURIOUS = 9,     // PMI with nothing overflowed
    PMC_STEP_SAMPLE = 10,      // value = interrupted IP
    PMC_STEP_THROTTLE = 11,    // source stopped on this CPU: value = samples in the window
    PMC_STEP_STUCK = 12,       // overflow kept recurring: counters reset; value = loops
    PMC_STEP_BUCKET = 13,      // a sample counted: value = bucket, arg = the profile's RangeBase
    PMC_STEP_STRETCH = 14,     // throttle: value = periods the counter's next arm covers
    PMC_STEP_COUNT
};

#define PMC_TRACE_NO_SOURCE    0xFF // the source of a record that has none
#define PMC_TRACE_PROFILED     0x01 // sample: a started profile covers the source and process
#define PMC_TRACE_RING_RECORDS 4096 // per CPU: a short command's samples and HAL steps

struct pmclog_trace {
    struct pmclog_header h; // h.tsc: when (SysClock's tsc_hz turns it into time)
    uint64_t value;         // the register's value, or the step's argument
    uint64_t arg;           // a second argument (PMC_STEP_BUCKET: the profile's RangeBase)
    uint32_t reg;           // MSR number, LAPIC offset or enum pmc_trace_step
    uint32_t pid;           // PMI, sample, bucket: the process interrupted (0: idle)
    uint16_t kind;          // enum pmc_trace_kind
    uint16_t source;        // KPROFILE_SOURCE of a step, PMC_TRACE_NO_SOURCE otherwise
    uint16_t flags;         // sample steps: PMC_TRACE_PROFILED
    uint16_t reserved;
};

_Static_assert(sizeof(struct pmclog_header) == 16, "log header");
_Static_assert(sizeof(struct pmclog_sample) == 40, "sample header");
_Static_assert(sizeof(struct pmclog_trace) == 48, "trace record");
_Static_assert(sizeof(struct pmclog_offcpu) == sizeof(struct pmclog_sample) &&
                   __builtin_offsetof(struct pmclog_offcpu, nframes) ==
                       __builtin_offsetof(struct pmclog_sample, nframes) &&
                   __builtin_offsetof(struct pmclog_offcpu, seq) ==
                       __builtin_offsetof(struct pmclog_sample, reserved) &&
                   sizeof(struct pmclog_oncpu) % 8 == 0,
               "an off-CPU record is a sample's layout");
_Static_assert(sizeof(struct pmclog_initialize) % 8 == 0 && sizeof(struct pmclog_cswitch) % 8 == 0,
               "records are multiples of 8 bytes");
_Static_assert(sizeof(struct pmclog_map) % 8 == 0 && sizeof(struct pmclog_exit) % 8 == 0 &&
                   sizeof(struct pmclog_csw) % 8 == 0 && sizeof(struct pmclog_user) % 8 == 0 &&
                   sizeof(struct pmclog_lost) % 8 == 0 && sizeof(struct pmclog_trace) % 8 == 0,
               "records are multiples of 8 bytes");
_Static_assert(sizeof(struct pmclog_hook) % 8 == 0, "records are multiples of 8 bytes");
