// The kernel/user ABI: status codes and the profile-source numbers.
//
// Included by the kernel and by userland; nothing here may depend on either.
// Status codes are NTSTATUS values: severity in bits 31:30 (0 success,
// 2 warning, 3 error), so NT_SUCCESS(s) is "s >= 0" as a signed 32-bit value.
#pragma once
#include <stdint.h>

typedef int32_t NTSTATUS;
#define NT_SUCCESS(s) ((NTSTATUS)(s) >= 0)

#define STATUS_SUCCESS                ((NTSTATUS)0x00000000)
#define STATUS_ALERTED                ((NTSTATUS)0x00000101) // a wait ended by an interrupt
#define STATUS_DATATYPE_MISALIGNMENT  ((NTSTATUS)0x80000002)
#define STATUS_BUFFER_OVERFLOW        ((NTSTATUS)0x80000005)
#define STATUS_UNSUCCESSFUL           ((NTSTATUS)0xC0000001)
#define STATUS_NOT_IMPLEMENTED        ((NTSTATUS)0xC0000002)
#define STATUS_INVALID_INFO_CLASS     ((NTSTATUS)0xC0000003)
#define STATUS_INFO_LENGTH_MISMATCH   ((NTSTATUS)0xC0000004)
#define STATUS_ACCESS_VIOLATION       ((NTSTATUS)0xC0000005)
#define STATUS_INVALID_HANDLE         ((NTSTATUS)0xC0000008)
#define STATUS_INVALID_CID            ((NTSTATUS)0xC000000B) // no process has that id
#define STATUS_INVALID_PARAMETER      ((NTSTATUS)0xC000000D)
#define STATUS_NO_MEMORY              ((NTSTATUS)0xC0000017)
#define STATUS_OBJECT_NAME_NOT_FOUND  ((NTSTATUS)0xC0000034)
#define STATUS_INVALID_IMAGE_FORMAT   ((NTSTATUS)0xC000007B)
#define STATUS_PROCESS_IS_TERMINATING ((NTSTATUS)0xC000010A)
#define STATUS_INVALID_SYSTEM_SERVICE ((NTSTATUS)0xC000001C)
#define STATUS_ACCESS_DENIED          ((NTSTATUS)0xC0000022)
#define STATUS_BUFFER_TOO_SMALL       ((NTSTATUS)0xC0000023)
#define STATUS_OBJECT_TYPE_MISMATCH   ((NTSTATUS)0xC0000024)
#define STATUS_PRIVILEGE_NOT_HELD     ((NTSTATUS)0xC0000061)
#define STATUS_INSUFFICIENT_RESOURCES ((NTSTATUS)0xC000009A)
#define STATUS_PROFILING_NOT_STARTED  ((NTSTATUS)0xC00000B7)
#define STATUS_PROFILING_NOT_STOPPED  ((NTSTATUS)0xC00000B8)
#define STATUS_NOT_SUPPORTED          ((NTSTATUS)0xC00000BB)
#define STATUS_PROFILING_AT_LIMIT     ((NTSTATUS)0xC00000D3)
#define STATUS_INVALID_PARAMETER_7    ((NTSTATUS)0xC00000F5)
#define STATUS_CONTROL_C_EXIT         ((NTSTATUS)0xC000013A) // the exit status of a Ctrl-C death
#define STATUS_DEVICE_BUSY            ((NTSTATUS)0x80000011)

// KPROFILE_SOURCE: 0x00-0x18 as in WDM.H, 0x19-0x1F Emon-specific.
typedef enum _KPROFILE_SOURCE {
    ProfileTime = 0x00,
    ProfileAlignmentFixup = 0x01,
    ProfileTotalIssues = 0x02,
    ProfilePipelineDry = 0x03,
    ProfileLoadInstructions = 0x04,
    ProfilePipelineFrozen = 0x05,
    ProfileBranchInstructions = 0x06,
    ProfileTotalNonissues = 0x07,
    ProfileDcacheMisses = 0x08,
    ProfileIcacheMisses = 0x09,
    ProfileCacheMisses = 0x0A,
    ProfileBranchMispredictions = 0x0B,
    ProfileStoreInstructions = 0x0C,
    ProfileFpInstructions = 0x0D,
    ProfileIntegerInstructions = 0x0E,
    Profile2Issue = 0x0F,
    Profile3Issue = 0x10,
    Profile4Issue = 0x11,
    ProfileSpecialInstructions = 0x12,
    ProfileTotalCycles = 0x13,
    ProfileIcacheIssues = 0x14,
    ProfileDcacheAccesses = 0x15,
    ProfileMemoryBarrierCycles = 0x16,
    ProfileLoadLinkedIssues = 0x17,
    ProfileMaximum = 0x18,
    ProfileUnhaltedCoreCycles = 0x19,
    ProfileInstructionRetired = 0x1A,
    ProfileUnhaltedReferenceCycles = 0x1B,
    ProfileLLCReference = 0x1C,
    ProfileLLCMisses = 0x1D,
    ProfileBranchInstructionRetired = 0x1E,
    ProfileBranchMispredictsRetired = 0x1F,
    ProfileSourceCount = 0x20 // one past the last source this kernel knows
} KPROFILE_SOURCE;

// ---------------------------------------------------------------------------
// System calls.
//
// Calling convention (x86-64 `syscall`):
//   rax  the system-call number (SYSCALL_LIST below)
//   rdi, rsi, rdx, r10, r8, r9   arguments 1-6 (r10 replaces rcx, which
//        `syscall` overwrites with the return address)
//   arguments 7 and up stay where a C caller put them: on the user stack at
//        [rsp + 8], [rsp + 16], ... as seen at the `syscall` instruction (the
//        user stubs are leaf functions that do not touch the stack)
//   rax  the result: an NTSTATUS unless the list says otherwise
//   rcx, r11 are clobbered; every other register is preserved.
// Every pointer argument is checked: a bad, kernel or unmapped pointer gives
// STATUS_ACCESS_VIOLATION, never a kernel fault.
// ---------------------------------------------------------------------------

typedef void *HANDLE;

// User pointers and ranges must lie below this address (the rest is the
// kernel's, or non-canonical).
#define USER_ADDRESS_LIMIT 0x00007FFFFFFFF000ull
typedef uint64_t KAFFINITY;

// clang-format off
// X(number, name, argument count). One list: the kernel's dispatch table and
// the user-mode stubs are both generated from it.
#define SYSCALL_LIST(X) \
    X(0, SysExit, 1)               /* void (int status): ends the calling process */ \
    X(1, SysWrite, 3)              /* (int fd, const void *buf, size_t len): fd 1, 2 = console */ \
    X(2, SysRead, 4)               /* (int fd, void *buf, size_t len, size_t *got): fd 0, blocks for >= 1 byte; fd 0 | SYS_READ_NOWAIT: does not */ \
    X(3, SysSpawn, 4)              /* (const char *path, const char *const *argv, uint32_t flags, HANDLE *process): argv NULL-terminated, required */ \
    X(4, SysResume, 1)             /* (HANDLE process): start a SPAWN_SUSPENDED process */ \
    X(5, SysWait, 2)               /* (HANDLE process, int *exit_status): until it exits */ \
    X(6, SysKill, 1)               /* (uint32_t pid) */ \
    X(7, SysGetPid, 0)             /* returns the caller's pid (not an NTSTATUS) */ \
    X(8, SysMap, 3)                /* (void **addr, size_t size, uint32_t prot): anonymous zeroed memory; *addr NULL = anywhere */ \
    X(9, SysUnmap, 2)              /* (void *addr, size_t size) */ \
    X(10, SysYield, 0)             \
    X(11, SysSleep, 1)             /* (uint64_t milliseconds) */ \
    X(12, SysClock, 1)             /* (struct sys_clock *out) */ \
    X(13, SysProcessList, 3)       /* (struct sys_process_info *buf, uint32_t max, uint32_t *count) */ \
    X(14, SysInfo, 1)              /* (struct sys_info *out) */ \
    X(15, NtClose, 1)              /* (HANDLE) */ \
    X(16, SysPowerOff, 0)          /* ACPI soft-off; needs the privilege */ \
    X(17, SysOpenProcess, 2)       /* (uint32_t pid, HANDLE *process) */ \
    X(18, SysFileRead, 5)          /* (const char *name, uint64_t offset, void *buf, size_t len, size_t *got): ramdisk */ \
    X(19, SysFileList, 3)          /* (char *buf, size_t len, size_t *needed): ramdisk names, one per line */ \
    X(20, SysCpuInfo, 3)           /* (struct sys_cpu_info *buf, uint32_t max, uint32_t *count) */ \
    X(21, NtCreateProfile, 9)      \
    X(22, NtCreateProfileEx, 10)   \
    X(23, NtStartProfile, 1)       \
    X(24, NtStopProfile, 1)        \
    X(25, NtQueryIntervalProfile, 2) \
    X(26, NtSetIntervalProfile, 2) \
    X(27, SysProfileSources, 3)    /* (struct sys_profile_source *buf, uint32_t max, uint32_t *count) */ \
    X(28, SysProfileStats, 2)      /* (HANDLE profile, struct sys_profile_stats *out) */ \
    X(29, SysPmcTrace, 4)          /* (uint32_t op, void *buf, size_t len, size_t *got) */ \
    X(30, SysPmcInfo, 3)           /* (char *buf, size_t len, size_t *got): text */ \
    X(31, SysSelfCheck, 1)         /* (struct sys_self_check *out): counters for leak checks */ \
    X(32, SysProcessId, 2)         /* (HANDLE process, uint32_t *pid) */ \
    X(33, NtPmcAllocate, 2)        /* (HANDLE *pmc, const struct pmc_alloc *params) */ \
    X(34, NtPmcAttach, 2)          /* (HANDLE pmc, HANDLE process): process scope */ \
    X(35, NtPmcDetach, 2)          /* (HANDLE pmc, HANDLE process) */ \
    X(36, NtPmcSetCount, 2)        /* (HANDLE pmc, uint64_t count): sampling interval, stopped only */ \
    X(37, NtPmcStart, 1)           /* (HANDLE pmc) */ \
    X(38, NtPmcStop, 1)            /* (HANDLE pmc) */ \
    X(39, NtPmcRead, 2)            /* (HANDLE pmc, uint64_t *value): counting modes */ \
    X(40, NtPmcWrite, 2)           /* (HANDLE pmc, uint64_t value): counting modes, stopped only */ \
    X(41, NtPmcConfigureLog, 1)    /* (const struct pmc_log_config *): NULL releases the log */ \
    X(42, NtPmcFlushLog, 0)        /* every CPU's pending lost count becomes readable */ \
    X(43, NtPmcReadLog, 3)         /* (void *buf, size_t len, size_t *got): whole records, consumed */ \
    X(44, NtPmcWriteLog, 1)        /* (uint64_t userdata): a PMCLOG_USER record */ \
    X(45, NtPmcGetDriverStats, 1)  /* (struct pmc_driver_stats *out) */ \
    X(46, SysTmpWrite, 4)          /* (const char *name, const void *buf, size_t len, uint32_t flags): /tmp */ \
    X(47, SysTmpRead, 5)           /* (const char *name, uint64_t offset, void *buf, size_t len, size_t *got) */ \
    X(48, NtPmcQuery, 2)           /* (HANDLE pmc, struct pmc_value *out): counting, with time enabled/running */ \
    X(49, NtPmcCswitchLog, 3)      /* (uint32_t op, const uint32_t *events, size_t len): PMC_CSWITCH_*, into the caller's log */ \
    X(50, NtPmcGetMsr, 2)          /* (HANDLE pmc, uint32_t *rdpmc_index): self-monitoring read */ \
    X(51, NtPmcCpuCounts, 3)       /* (uint64_t *buf, uint32_t max, uint32_t *count): [cpu][PMC_SW_COUNT] */ \
    X(52, NtSetSystemInformation, 3)   /* (ULONG class, void *buf, ULONG len): SystemPerformanceTraceInformation */ \
    X(53, NtQuerySystemInformation, 4) /* (ULONG class, void *buf, ULONG len, ULONG *returned) */ \
    X(54, NtPmcTraceLogger, 2)     /* (uint32_t op, TRACEHANDLE *handle): PMC_LOGGER_CREATE / CLOSE */ \
    X(55, SysIrqoffSpin, 2)        /* (uint64_t microseconds, struct sys_irqoff_split *out): for teaching, see below */ \
    X(56, NtPmcAdmin, 3)           /* (uint32_t cpu, uint32_t row, uint32_t state): PMC_STATE_*; privileged */ \
    X(57, NtPmcGetCpuInfo, 1)      /* (struct pmc_cpuinfo *out): rows per CPU, classes */ \
    X(58, NtPmcGetPmcInfo, 4)      /* (uint32_t cpu, struct pmc_rowinfo *buf, uint32_t len, uint32_t *needed) */ \
    X(59, NtPmcGetModuleVersion, 1) /* (uint32_t *version): PMC_MODULE_VERSION */ \
    X(60, SysConsoleForeground, 1) /* (uint32_t pgid): the group Ctrl-C interrupts, 0 none; see below */ \
    X(61, SysInterruptMode, 2)     /* (uint32_t mode, uint32_t *pending): INTERRUPT_*; see below */

enum {
#define SYSCALL_ENUM(num, name, nargs) SYS_##name = num,
    SYSCALL_LIST(SYSCALL_ENUM)
#undef SYSCALL_ENUM
    SYSCALL_COUNT
};
// clang-format on

// The exit status SysWait reports for a process the kernel killed (a fault in
// ring 3, or SysKill).
#define EXIT_STATUS_KILLED (-1)

// SysSpawn flags.
#define SPAWN_SUSPENDED  0x1 // created but not run until SysResume (a profiler attaches first)
#define SPAWN_PRIVILEGED 0x2 // grant the system-profile privilege (caller must hold it)
#define SPAWN_NEW_GROUP  0x4 // the child leads a new process group (its id: the child's pid)

// Console interrupts (Ctrl-C), after POSIX's terminal ISIG and foreground
// process group (tcsetpgrp) and NT's STATUS_CONTROL_C_EXIT.
//
// Every process belongs to a process group, inherited from its parent; a
// process spawned with SPAWN_NEW_GROUP starts one, with its own pid as the
// group id. SysConsoleForeground(pgid) names the console's foreground group:
// the caller's own, one led by a process it may control (its child, or any
// with the privilege), or 0 for none (STATUS_INVALID_CID when no live process
// leads that group). While a foreground group is set, a Ctrl-C (byte 0x03)
// from the serial line or the keyboard is no input: the console echoes "^C",
// discards the input not yet read (POSIX: "If ISIG is set, ... the input
// queue ... shall be flushed"), and interrupts every process of the group at
// its next return to user mode. Without a foreground group, 0x03 is input.
//
// An interrupted process in mode INTERRUPT_END (every process's at start)
// ends with exit status EXIT_STATUS_INTERRUPTED. One that asked for
// INTERRUPT_NOTIFY is told instead: its pending flag is set, and while it is
// set SysWait, SysSleep and SysRead return STATUS_ALERTED at once (SysWait
// without an exit status). SysInterruptMode(mode, pending) sets the mode and,
// when pending is not NULL, stores there whether an interrupt was pending and
// clears it: polling is SysInterruptMode(INTERRUPT_NOTIFY, &pending). A program
// told of an interrupt that then ends because of it exits with
// EXIT_STATUS_INTERRUPTED, so its shell reports it as interrupted.
#define INTERRUPT_END           0 // a console interrupt ends the process
#define INTERRUPT_NOTIFY        1 // it sets the pending flag instead
#define EXIT_STATUS_INTERRUPTED ((int)STATUS_CONTROL_C_EXIT)

// SysMap protection.
#define PROT_READ   0x1
#define PROT_WRITE  0x2
#define PROT_EXEC   0x4
// SysMap: no page until ring 3 first touches it; each first touch is one page
// fault (the page-faults software event). The kernel does not fault pages in:
// a system call given an untouched demand page fails with STATUS_ACCESS_VIOLATION.
#define PROT_DEMAND 0x8

#define PROCESS_NAME_MAX 32
#define MAX_ARGS         32   // argv entries
#define MAX_ARG_BYTES    4096 // all argv strings together

// SysRead's fd 0 with this bit: return at once with the input already
// waiting, *got 0 when there is none (a poll, as O_NONBLOCK without EAGAIN).
#define SYS_READ_NOWAIT 0x100

struct sys_clock {
    uint64_t ns;     // monotonic nanoseconds since boot
    uint64_t tsc;    // time-stamp counter
    uint64_t tsc_hz; // its frequency
};

enum process_state {
    PROC_SUSPENDED = 1,
    PROC_RUNNABLE = 2,
    PROC_RUNNING = 3,
    PROC_SLEEPING = 4,
    PROC_ZOMBIE = 5
};

struct sys_process_info {
    uint32_t pid, parent;
    uint32_t state;      // enum process_state
    uint32_t privileged; // holds the system-profile privilege
    uint32_t cpu;        // last CPU it ran on
    uint32_t threads;
    uint64_t pages;  // user pages mapped
    uint64_t cpu_ns; // time on CPU
    char name[PROCESS_NAME_MAX];
};

struct sys_info {
    uint32_t ncpus;
    uint32_t nprocesses;
    uint64_t free_pages, total_pages;
    uint64_t heap_bytes;
    uint64_t uptime_ns;
    uint64_t tsc_hz;
    // 1 under QEMU's software CPU (TCG) booted without the kernel option
    // `icount`: guest time is then the host's time, so where a timer's ticks
    // land depends on how the host schedules the vCPUs. With -icount (and the
    // option) time counts instructions and time sampling is exact.
    uint32_t time_sampling_approximate;
};

// SysIrqoffSpin exists for teaching (docs/blind-spots.md, userland/bin/irqoff.c):
// a known answer for a profiler. The kernel spins for the given time inside a
// spin_lock_irqsave section (interrupts off) in irqoff_spin_locked, then for
// the same time with interrupts on in irqoff_spin_open, and reports the TSC
// ticks each took. Time: 1..IRQOFF_SPIN_MAX_US microseconds, else
// STATUS_INVALID_PARAMETER. No privilege: a section is at most one scheduler
// time slice (10 ms), as long as any process may already keep its CPU.
#define IRQOFF_SPIN_MAX_US 10000
struct sys_irqoff_split {
    uint64_t locked_tsc; // TSC ticks spun with interrupts off
    uint64_t open_tsc;   // TSC ticks spun with interrupts on
    uint64_t tsc_hz;     // the TSC's frequency
};

struct sys_cpu_info {
    uint32_t id, apic_id;
    uint32_t online;
    uint32_t current_pid; // 0 when idle
    uint64_t ticks;       // scheduler ticks
    uint64_t idle_ns, busy_ns;
    uint64_t profile_ticks;         // ProfileTime expiries since it last started here
    uint64_t profile_ticks_skipped; // of those, missed: the CPU came a period or more late
                                    // (it gets one tick then, not a burst)
    uint64_t calls_sent;            // cross-CPU call interrupts it sent since boot
};

// Counters that must return to their baseline when nothing leaks.
struct sys_self_check {
    uint64_t free_pages; // free page frames, counting empty heap slabs kept for reuse
    uint64_t heap_bytes;
    uint64_t live_processes;
    uint64_t live_objects; // handles' kernel objects (processes, profiles)
    uint64_t pinned_pages;
};

// SysProfileSources: one row per KPROFILE_SOURCE.
enum profile_counter_kind {
    COUNTER_NONE = 0,
    COUNTER_TIMER = 1,
    COUNTER_FIXED = 2,
    COUNTER_GENERAL = 3
};

struct sys_profile_source {
    uint32_t source; // KPROFILE_SOURCE
    uint32_t supported;
    uint32_t kind;    // enum profile_counter_kind
    uint32_t started; // 1 while the HAL runs it on every CPU
    uint64_t users;   // its users (started profiles and PMCs): 0 when stopped
    uint64_t interval, default_interval, min_interval, max_interval;
    char name[40];   // e.g. "ProfileTime"
    char units[16];  // "100ns" for ProfileTime, "events" otherwise
    char reason[64]; // why it is unsupported ("" when supported)
    // The counters it may use (HalQuerySystemInformation's
    // HalProfileSourceCounterInformation, kernel/pmc/hal.h): bit n of
    // gp_counters is general-purpose counter n (Intel IA32_PMCn, AMD
    // PERF_CTRn), bit n of fixed_counters Intel's IA32_FIXED_CTRn; both 0
    // when no counter can (ProfileTime runs on the LAPIC timer).
    uint32_t gp_counters, fixed_counters;
    uint32_t constraints;          // PROFILE_COUNTERS_* below
    uint8_t gp_total, fixed_total; // the counters this machine has, of each kind
    uint8_t pad[6];
};

// sys_profile_source.constraints
#define PROFILE_COUNTERS_TIMER      0x1 // no counter: the LAPIC timer (ProfileTime)
#define PROFILE_COUNTERS_FIXED_ONLY 0x2 // only its fixed counter (reference cycles: FIXED_CTR2)
#define PROFILE_COUNTERS_GP_SUBSET  0x4 // only some general-purpose counters (AMD family 15h)

// SysProfileStats: what happened to one profile's samples.
struct sys_profile_stats {
    uint64_t delivered;    // samples of this profile's source on its CPUs and process
    uint64_t in_range;     // counted in a bucket
    uint64_t out_of_range; // outside [RangeBase, RangeBase + RangeSize)
    uint64_t throttled;    // dropped by storm throttling
};

// SysPmcTrace operations (the system-profile privilege is required).
#define PMC_TRACE_ON     1 // start recording every HAL step and PMU register access
#define PMC_TRACE_OFF    2
#define PMC_TRACE_CLEAR  3
#define PMC_TRACE_READ   4 // drain: whole records (PMCLOG_TRACE, PMCLOG_MAP, PMCLOG_LOST), consumed
#define PMC_TRACE_FILTER 5 // buf = a pid: keep samples of it and its descendants only; 0: all

// ---------------------------------------------------------------------------
// PMC allocation and the PMC log (NtPmc*): hwpmc(4)'s operations (allocate,
// attach, detach, set count, start, stop, read, write, configure/flush/write
// the log, driver statistics) in this kernel's style: a PMC is a handle, every
// failure an NTSTATUS. docs/pmc-log.md has the status table and the record
// formats. A PMC counts or samples one KPROFILE_SOURCE.
// ---------------------------------------------------------------------------

// Modes, hwpmc's four: sampling or counting, system or process scope.
#define PMC_MODE_SS 1 // system-scope sampling: every process and the kernel (needs the privilege)
#define PMC_MODE_SC 2 // system-scope counting
#define PMC_MODE_TS 3 // process-scope sampling: only while an attached process runs
#define PMC_MODE_TC 4 // process-scope counting (process-virtual)

// Allocation flags.
#define PMC_F_CALLCHAIN    0x01 // sampling: log the call chain, not only the IP
#define PMC_F_DESCENDANTS  0x02 // process scope: also every current and future child
#define PMC_F_LOG_PROCCSW  0x04 // process scope: a PMCLOG_CSW record at each switch-out
#define PMC_F_LOG_PROCEXIT 0x08 // process scope: a PMCLOG_EXIT record with the totals
// The rings a PMC counts or samples in (perf's :u and :k; hwpmc's pmcstat
// -U): PMC_F_USER ring 3, PMC_F_KERNEL ring 0, both set both rings. With
// neither, the mode's default: counting both rings, sampling ring 3 only. A
// hardware event's counter counts only the rings asked for (its event
// select's USR and OS bits, or the fixed counter's enable field: Intel SDM
// vol. 3B, "Architectural Performance Monitoring"; AMD APM vol. 2, 13.2); a
// sampling PMC also logs only samples whose IP is in those rings. Sampling
// ring 0 needs the system-profile privilege. Of the software events only
// task-clock tells the rings apart (ring-3 time and the rest of the CPU
// time); a restriction on another is STATUS_PMC_RING_UNSUPPORTED.
#define PMC_F_KERNEL       0x10 // ring 0 (sampling: needs the privilege)
#define PMC_F_USER         0x20 // ring 3
#define PMC_F_RINGS        (PMC_F_USER | PMC_F_KERNEL)
// Sampling, process scope: at each switch-out of a target a PMCLOG_OFFCPU
// record (its chain, PMC_F_CALLCHAIN or not, and why it left), at the
// switch-in that ends the absence a PMCLOG_ONCPU record with the time away
// (Brendan Gregg, "Off-CPU Analysis"; perf record --off-cpu).
#define PMC_F_LOG_OFFCPU   0x4000
#define PMC_F_ALL          (0x3F | PMC_F_LOG_OFFCPU)

#define PMC_CPU_ANY 0xFFFFFFFFu

#define PMC_MAX_TARGETS_USER 64 // processes attached to one PMC (STATUS_PMC_TOO_MANY_TARGETS)
#define PMC_MAX_RUNNING_USER 32 // PMCs running at once (STATUS_PMC_TOO_MANY_RUNNING)

// NT's pseudo-handles (wdm.h): the calling process and thread, accepted
// wherever a process (thread) handle is; not in any handle table, never closed.
#define NtCurrentProcess() ((HANDLE)(intptr_t)-1)
#define NtCurrentThread()  ((HANDLE)(intptr_t)-2)

// Software events, counted by the kernel itself with or without a PMU (what
// a perf-stat user counts in a virtual machine): a counting PMC's source may
// be PMC_EVENT_SW(e) instead of a KPROFILE_SOURCE.
enum pmc_sw_event {
    PMC_SW_TASK_CLOCK = 0,         // ns on CPU
    PMC_SW_CONTEXT_SWITCHES = 1,   // times a thread left the CPU for another
    PMC_SW_CPU_MIGRATIONS = 2,     // times a thread resumed on a CPU other than its last
    PMC_SW_PAGE_FAULTS = 3,        // ring-3 page faults (demand-zero pages and fatal ones)
    PMC_SW_SYSCALLS = 4,           // system calls entered
    PMC_SW_PROFILE_INTERRUPTS = 5, // PMIs and ProfileTime ticks taken while it ran
    PMC_SW_PROFILE_TICKS = 6,      // ProfileTime ticks taken while it ran
    PMC_SW_COUNT = 7
};
#define PMC_EVENT_SW(e)     (0x100u + (uint32_t)(e))
#define PMC_EVENT_IS_SW(ev) ((ev) >= 0x100u && (ev) < 0x100u + PMC_SW_COUNT)

struct pmc_alloc {
    uint32_t source; // KPROFILE_SOURCE, or PMC_EVENT_SW(e) for a counting PMC
    uint32_t mode;   // PMC_MODE_*
    uint32_t flags;  // PMC_F_*
    uint32_t cpu;    // system scope: one CPU or PMC_CPU_ANY; process scope: PMC_CPU_ANY
    uint64_t count;  // sampling interval in the source's units; 0: the interval in force
};

// The log: one per machine, owned by the process that configured it. Each CPU
// writes its own ring; NtPmcReadLog drains them.
#define PMC_LOG_RING_MIN     4096u        // bytes per CPU
#define PMC_LOG_RING_MAX     (16u << 20)  // bytes per CPU
#define PMC_LOG_RING_DEFAULT (256u << 10) // bytes per CPU (boot option pmclog=KB)
#define PMC_DEPTH_DEFAULT    128
#define PMC_DEPTH_MAX        512

struct pmc_log_config {
    uint32_t ring_bytes; // per CPU, a multiple of 4096; 0: the default (or the boot option)
    uint32_t depth;      // call-chain frames at most; 0: PMC_DEPTH_DEFAULT
};

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

#define PMC_STATS_CPUS 64 // per-CPU rows in struct pmc_driver_stats: every CPU (MAX_CPUS)

struct pmc_driver_stats {
    uint32_t ncpus;
    uint32_t log_configured;     // 1 while a log exists
    uint32_t ring_bytes, depth;  // its configuration
    uint64_t chains_truncated;   // samples whose chain was cut (PMCLOG_SAMPLE_TRUNC)
    uint64_t user_frames_unread; // chains stopped at an unmapped or bad user frame
    uint64_t records_dropped;    // non-sample records that found the ring full
    uint64_t syscalls, syscall_errors;
    struct {
        uint64_t delivered; // samples taken by a sampling PMC on this CPU
        uint64_t logged;    // written to the ring
        uint64_t lost;      // dropped: the ring was full (delivered = logged + lost)
        uint64_t reserved;
    } cpu[PMC_STATS_CPUS];
};

// Status codes of the NtPmc* calls (customer bit set; docs/pmc-log.md).
#define STATUS_PMC_BAD_MODE             ((NTSTATUS)0xE0500001)
#define STATUS_PMC_BAD_FLAGS            ((NTSTATUS)0xE0500002)
#define STATUS_PMC_FLAG_NEEDS_PROCESS   ((NTSTATUS)0xE0500003)
#define STATUS_PMC_CALLCHAIN_COUNTING   ((NTSTATUS)0xE0500004)
#define STATUS_PMC_UNKNOWN_SOURCE       ((NTSTATUS)0xE0500005)
#define STATUS_PMC_SOURCE_UNSUPPORTED   ((NTSTATUS)0xE0500006)
#define STATUS_PMC_COUNTING_UNSUPPORTED ((NTSTATUS)0xE0500007)
#define STATUS_PMC_BAD_CPU              ((NTSTATUS)0xE0500008)
#define STATUS_PMC_COUNT_TOO_SMALL      ((NTSTATUS)0xE0500009)
#define STATUS_PMC_COUNT_TOO_LARGE      ((NTSTATUS)0xE050000A)
#define STATUS_PMC_RUNNING              ((NTSTATUS)0xE050000B)
#define STATUS_PMC_NOT_RUNNING          ((NTSTATUS)0xE050000C)
#define STATUS_PMC_NOT_PROCESS_SCOPE    ((NTSTATUS)0xE050000D)
#define STATUS_PMC_ALREADY_ATTACHED     ((NTSTATUS)0xE050000E)
#define STATUS_PMC_NOT_ATTACHED         ((NTSTATUS)0xE050000F)
#define STATUS_PMC_NO_TARGET            ((NTSTATUS)0xE0500010)
#define STATUS_PMC_TOO_MANY_TARGETS     ((NTSTATUS)0xE0500011)
#define STATUS_PMC_NO_LOG               ((NTSTATUS)0xE0500012)
#define STATUS_PMC_NOT_COUNTING         ((NTSTATUS)0xE0500013)
#define STATUS_PMC_LOG_BUSY             ((NTSTATUS)0xE0500014)
#define STATUS_PMC_BAD_LOG_SIZE         ((NTSTATUS)0xE0500015)
#define STATUS_PMC_BAD_DEPTH            ((NTSTATUS)0xE0500016)
#define STATUS_PMC_LOG_IN_USE           ((NTSTATUS)0xE0500017)
#define STATUS_PMC_NOT_LOG_OWNER        ((NTSTATUS)0xE0500018)
#define STATUS_PMC_TOO_MANY_RUNNING     ((NTSTATUS)0xE0500019)
#define STATUS_TMP_BAD_NAME             ((NTSTATUS)0xE0500020)
#define STATUS_TMP_FULL                 ((NTSTATUS)0xE0500021)
#define STATUS_PMC_NOT_SAMPLING         ((NTSTATUS)0xE0500022)
#define STATUS_PMC_ROW_SHARED           ((NTSTATUS)0xE0500023)
#define STATUS_PMC_READ_IN_RING3        ((NTSTATUS)0xE0500024)
#define STATUS_PMC_ROW_BUSY             ((NTSTATUS)0xE0500030)
#define STATUS_PMC_BAD_ROW              ((NTSTATUS)0xE0500031)
#define STATUS_PMC_ROW_DISABLED         ((NTSTATUS)0xE0500032)
#define STATUS_PMC_RING_UNSUPPORTED     ((NTSTATUS)0xE0500033) // :u or :k on an event with no rings
#define STATUS_PMC_RING_CONFLICT        ((NTSTATUS)0xE0500034) // the source samples in other rings

// ---------------------------------------------------------------------------
// Rows, their administration and what they hold: hwpmc's PMC_OP_PMCADMIN,
// PMC_OP_GETCPUINFO, PMC_OP_GETPMCINFO and PMC_OP_GETMODULEVERSION (FreeBSD
// sys/sys/pmc.h, pmccontrol(8)). A row is one counting resource on every
// CPU, numbered per CPU: the PMU's counters first (0 .. n-1, in the order
// `pmc info` lists them), then ProfileTime's timer (n), then one row per
// software event (n + 1 + e). A machine without a PMU (QEMU TCG) has the
// timer and the software rows only. docs/counting.md says what each row's
// disposition means here and what disabling one does.
// ---------------------------------------------------------------------------
// NtPmcAdmin's state, hwpmc's enum pmc_state values for the hardware states.
#define PMC_STATE_DISABLED 0 // administratively prohibited from being used
#define PMC_STATE_FREE     1 // available (enable)

// Row dispositions, hwpmc's enum pmc_disp values.
#define PMC_DISP_STANDALONE 0 // system scope on this CPU, or disabled
#define PMC_DISP_FREE       1 // available
#define PMC_DISP_THREAD     2 // process-scope (thread-virtual) PMCs

// Classes of rows (this kernel's numbers; hwpmc's names where one fits).
#define PMC_CLASS_TIMER 1 // ProfileTime on the LAPIC timer (hwpmc's TSC class is the nearest)
#define PMC_CLASS_IAF   2 // Intel fixed-function counters
#define PMC_CLASS_IAP   3 // Intel programmable (general-purpose) counters
#define PMC_CLASS_K8    4 // AMD counters (hwpmc's name for AMD family 0Fh and later)
#define PMC_CLASS_SOFT  5 // the kernel's software events

// Capabilities, hwpmc's PMC_CAP_* bit values for those this kernel has.
#define PMC_CAP_INTERRUPT 0x01 // samples (an interrupt every N events)
#define PMC_CAP_USER      0x02 // counts ring-3 events
#define PMC_CAP_SYSTEM    0x04 // counts kernel-mode events
#define PMC_CAP_READ      0x20 // counts (NtPmcRead)
#define PMC_CAP_WRITE     0x40 // its count can be set (NtPmcWrite)

#define PMC_CLASSES_MAX    8
#define PMC_ROWS_MAX       32 // rows per CPU at most
#define PMC_ROW_NAME_MAX   24
#define PMC_EVENT_NONE     0xFFFFFFFFu
#define PMC_MODULE_VERSION 0x01000000u // [MMmmpppp], as hwpmc's PMC_VERSION: 1.0.0

struct pmc_classinfo {
    uint32_t cls;       // PMC_CLASS_*
    uint32_t caps;      // PMC_CAP_*
    uint32_t width;     // bits a row of the class counts in
    uint32_t num;       // rows of the class on each CPU
    uint32_t first_row; // the row number of its first
    uint32_t reserved;
    uint64_t events; // bit s: KPROFILE_SOURCE s can use the class (SOFT: software event s)
};

struct pmc_cpuinfo {
    uint32_t ncpu;   // CPUs (0 .. ncpu - 1)
    uint32_t npmc;   // rows per CPU
    uint32_t nclass; // entries of classes[]
    uint32_t reserved;
    char interface[16]; // "emon", "amd64" or "none", as `pmc info` says
    struct pmc_classinfo classes[PMC_CLASSES_MAX];
};

// One row on one CPU (hwpmc's struct pmc_info).
struct pmc_rowinfo {
    char name[PMC_ROW_NAME_MAX]; // "IAP-0", "IAF-1", "K8-3", "TIMER-0", "SOFT-task-clock"
    uint32_t cls;                // PMC_CLASS_*
    uint32_t enabled;            // 0: disabled on this CPU by NtPmcAdmin
    uint32_t disp;               // PMC_DISP_*
    uint32_t owner_pid;          // the owner of a PMC holding it; 0: none, or not a PMC
    uint32_t mode;               // that PMC's PMC_MODE_*; 0: none
    uint32_t event;              // what it counts or samples (pmc_alloc.source); PMC_EVENT_NONE
    uint32_t users;              // PMCs (and NT profiles, for a sampled source) using it here
    uint32_t reserved;
    uint64_t reload; // a sampling counter's period in events; 0 otherwise
};

_Static_assert(sizeof(struct pmc_rowinfo) % 8 == 0, "rows are 8-aligned in an array");

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
_Static_assert(sizeof(struct pmclog_hook) % 8 == 0, "records are multiples of 8 bytes");

// NtPmcTraceLogger operations (privileged). CREATE: a logger writing into the
// caller's log (which must exist), *handle set; it records nothing until it
// has both a counter list and an event list. CLOSE: *handle read; stopped
// and freed. A logger also ends when its creator exits.
#define PMC_LOGGER_CREATE 1
#define PMC_LOGGER_CLOSE  2
#define PMC_LOGGERS_MAX   4 // loggers at once (STATUS_INSUFFICIENT_RESOURCES beyond)

// SysTmpWrite flags: the RAM file system under /tmp/ (names "/tmp/..." only).
#define TMP_TRUNCATE  0x1 // start the file empty (create it); otherwise append
#define TMP_REMOVE    0x2 // delete the file (buf and len ignored)
#define TMP_NAME_MAX  48
#define TMP_BYTES_MAX (64u << 20) // all files together

// NtPmcQuery: a counting PMC's value with perf's time enabled / running. A
// multiplexed hardware event counted only part of the time it was enabled:
// value is the raw count; scale it by enabled / running.
struct pmc_value {
    uint64_t value;
    uint64_t time_enabled; // ns the PMC was started (process scope: and a target ran)
    uint64_t time_running; // ns of that it was on a hardware counter (= enabled for software)
    uint32_t targets;      // process scope: attached processes alive now
    uint32_t row;          // hardware counter index (0xFFFFFFFF: software, or a shared row)
};
