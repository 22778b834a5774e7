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
#define STATUS_DATATYPE_MISALIGNMENT  ((NTSTATUS)0x80000002)
#define STATUS_BUFFER_OVERFLOW        ((NTSTATUS)0x80000005)
#define STATUS_UNSUCCESSFUL           ((NTSTATUS)0xC0000001)
#define STATUS_NOT_IMPLEMENTED        ((NTSTATUS)0xC0000002)
#define STATUS_INVALID_INFO_CLASS     ((NTSTATUS)0xC0000003)
#define STATUS_INFO_LENGTH_MISMATCH   ((NTSTATUS)0xC0000004)
#define STATUS_ACCESS_VIOLATION       ((NTSTATUS)0xC0000005)
#define STATUS_INVALID_HANDLE         ((NTSTATUS)0xC0000008)
#define STATUS_INVALID_PARAMETER      ((NTSTATUS)0xC000000D)
#define STATUS_NO_MEMORY              ((NTSTATUS)0xC0000017)
#define STATUS_OBJECT_NAME_NOT_FOUND  ((NTSTATUS)0xC0000034)
#define STATUS_INVALID_IMAGE_FORMAT   ((NTSTATUS)0xC000007B)
#define STATUS_PROCESS_IS_TERMINATING ((NTSTATUS)0xC000010A)
#define STATUS_INVALID_SYSTEM_SERVICE ((NTSTATUS)0xC000001C)
#define STATUS_ACCESS_DENIED          ((NTSTATUS)0xC0000022)
#define STATUS_BUFFER_TOO_SMALL       ((NTSTATUS)0xC0000023)
#define STATUS_PRIVILEGE_NOT_HELD     ((NTSTATUS)0xC0000061)
#define STATUS_INSUFFICIENT_RESOURCES ((NTSTATUS)0xC000009A)
#define STATUS_PROFILING_NOT_STARTED  ((NTSTATUS)0xC00000B7)
#define STATUS_PROFILING_NOT_STOPPED  ((NTSTATUS)0xC00000B8)
#define STATUS_NOT_SUPPORTED          ((NTSTATUS)0xC00000BB)
#define STATUS_PROFILING_AT_LIMIT     ((NTSTATUS)0xC00000D3)
#define STATUS_INVALID_PARAMETER_7    ((NTSTATUS)0xC00000F5)
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
    X(2, SysRead, 4)               /* (int fd, void *buf, size_t len, size_t *got): fd 0, blocks for >= 1 byte */ \
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
    X(70, SysPmcAllocate, 2)       /* (const struct pmc_alloc *in, HANDLE *pmc): a counting PMC */ \
    X(71, SysPmcAttach, 2)         /* (HANDLE pmc, HANDLE process): process scope only */ \
    X(72, SysPmcDetach, 2)         /* (HANDLE pmc, HANDLE process) */ \
    X(73, SysPmcStart, 1)          /* (HANDLE pmc) */ \
    X(74, SysPmcStop, 1)           /* (HANDLE pmc) */ \
    X(75, SysPmcRead, 2)           /* (HANDLE pmc, struct pmc_value *out) */ \
    X(76, SysPmcWrite, 2)          /* (HANDLE pmc, uint64_t value): the count, while stopped */ \
    X(77, SysPmcLog, 4)            /* (uint32_t op, void *buf, size_t len, size_t *got): struct pmc_log_* */ \
    X(78, SysPmcGetMsr, 2)         /* (HANDLE pmc, uint32_t *rdpmc_index): self-monitoring read */ \
    X(79, SysPmcCpuCounts, 3)      /* (uint64_t *buf, uint32_t max, uint32_t *count): [cpu][PMC_SW_COUNT] */

enum {
#define SYSCALL_ENUM(num, name, nargs) SYS_##name = num,
    SYSCALL_LIST(SYSCALL_ENUM)
#undef SYSCALL_ENUM
};
// One past the highest number in SYSCALL_LIST (numbers 33-69 are the sampling
// PMC interface's; the table in syscall.c fails to compile if a number reaches it).
enum { SYSCALL_COUNT = 80 };
// clang-format on

// The exit status SysWait reports for a process the kernel killed (a fault in
// ring 3, or SysKill).
#define EXIT_STATUS_KILLED (-1)

// SysSpawn flags.
#define SPAWN_SUSPENDED  0x1 // created but not run until SysResume (a profiler attaches first)
#define SPAWN_PRIVILEGED 0x2 // grant the system-profile privilege (caller must hold it)

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
};

struct sys_cpu_info {
    uint32_t id, apic_id;
    uint32_t online;
    uint32_t current_pid; // 0 when idle
    uint64_t ticks;       // scheduler ticks
    uint64_t idle_ns, busy_ns;
    uint64_t profile_ticks;         // ProfileTime expiries since it last started here
    uint64_t profile_ticks_skipped; // of those, dropped because the CPU fell far behind
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
    uint32_t kind; // enum profile_counter_kind
    uint32_t reserved;
    uint64_t interval, default_interval, min_interval, max_interval;
    char name[40];   // e.g. "ProfileTime"
    char units[16];  // "100ns" for ProfileTime, "events" otherwise
    char reason[64]; // why it is unsupported ("" when supported)
};

// SysProfileStats: what happened to one profile's samples.
struct sys_profile_stats {
    uint64_t delivered;    // samples of this profile's source on its CPUs and process
    uint64_t in_range;     // counted in a bucket
    uint64_t out_of_range; // outside [RangeBase, RangeBase + RangeSize)
    uint64_t throttled;    // dropped by storm throttling
};

// SysPmcTrace operations (the system-profile privilege is required).
#define PMC_TRACE_ON    1 // start recording every HAL step and PMU register access
#define PMC_TRACE_OFF   2
#define PMC_TRACE_CLEAR 3
#define PMC_TRACE_READ  4 // the records of every CPU as text, one per line, oldest first

// ---------------------------------------------------------------------------
// Counting PMCs (hwpmc(4)'s counting modes, perf-stat's software events).
//
// A PMC counts one event: a KPROFILE_SOURCE (a hardware counter, where the PMU
// has one) or a software event the kernel counts itself, with or without a PMU.
// Process scope (PMC_MODE_TC) counts only while a thread of an attached process
// runs, on whatever CPU; system scope (PMC_MODE_SC) counts on one CPU or on all
// of them (PMC_CPU_ANY, summed). Modes and flags have hwpmc's meanings.
// ---------------------------------------------------------------------------

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

// Event numbers: a KPROFILE_SOURCE (< ProfileSourceCount), or a software event.
#define PMC_EVENT_SW(e)     (0x100u + (uint32_t)(e))
#define PMC_EVENT_IS_SW(ev) ((ev) >= 0x100u && (ev) < 0x100u + PMC_SW_COUNT)

// Modes, hwpmc's numbering; the sampling modes belong to the sampling API.
#define PMC_MODE_SC 1 // system scope, counting
#define PMC_MODE_TC 3 // process ("thread") scope, counting

#define PMC_F_DESCENDANTS  0x1 // process scope: also count children created after the attach
#define PMC_F_LOG_PROCCSW  0x2 // process scope: a log record per scheduling of a target
#define PMC_F_LOG_PROCEXIT 0x4 // process scope: a log record with each target's total at its exit
#define PMC_F_ALL          0x7

#define PMC_CPU_ANY 0xFFFFFFFFu // system scope: every CPU, summed

struct pmc_alloc {
    uint32_t event; // KPROFILE_SOURCE or PMC_EVENT_SW(e)
    uint32_t mode;  // PMC_MODE_SC or PMC_MODE_TC
    uint32_t flags; // PMC_F_*
    uint32_t cpu;   // system scope: a CPU or PMC_CPU_ANY; process scope: PMC_CPU_ANY
};

// SysPmcRead. A multiplexed hardware event counted only part of the time it
// was enabled: value is the raw count; scale it by enabled / running.
struct pmc_value {
    uint64_t value;
    uint64_t time_enabled; // ns the PMC was started (process scope: and a target ran)
    uint64_t time_running; // ns of that it was on a hardware counter (= enabled for software)
    uint32_t targets;      // process scope: attached processes alive now
    uint32_t row;          // hardware counter index (0xFFFFFFFF: software or multiplexed)
};

// SysPmcLog operations.
#define PMC_LOG_CSWITCH_START 1 // buf: uint32_t events[n] (n <= PMC_CSWITCH_MAX_EVENTS); privileged
#define PMC_LOG_CSWITCH_STOP  2
#define PMC_LOG_READ          3 // records from byte offset *got (in: offset, out: bytes copied)

#define PMC_CSWITCH_MAX_EVENTS 8 // ETW: 4 counters per logger at first, 8 later

enum pmc_log_type {
    PMC_LOG_CSWITCH = 1,  // a context switch and the CPU's counter values (ETW PMC counters)
    PMC_LOG_PROCCSW = 2,  // PMC_F_LOG_PROCCSW: a target's count for one scheduling
    PMC_LOG_PROCEXIT = 3, // PMC_F_LOG_PROCEXIT: a target's total at exit
};

// Every record starts with this header; size covers the header.
struct pmc_log_header {
    uint16_t type; // enum pmc_log_type
    uint16_t size;
    uint32_t cpu;
    uint64_t ns; // clock, ns since boot
};

struct pmc_log_cswitch {
    struct pmc_log_header h;
    uint32_t old_pid, new_pid; // 0 = the CPU's idle thread
    uint32_t nevents, reserved;
    uint16_t event[PMC_CSWITCH_MAX_EVENTS]; // what each value counts (pmc_alloc.event)
    uint64_t value[PMC_CSWITCH_MAX_EVENTS]; // the CPU's running totals of each event
};

struct pmc_log_proc {
    struct pmc_log_header h;
    uint32_t pid;   // the target
    uint32_t event; // the PMC's event
    uint64_t pmc_id;
    uint64_t value; // PROCCSW: events in this scheduling; PROCEXIT: the target's total
};
