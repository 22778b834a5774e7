// PMC allocation (NtPmc*): modes, flags, software events, the log's configuration,
// values, driver statistics, and the rows, classes and CPU information.
//
// Part of the kernel/user ABI: included by the kernel and by userland;
// nothing here may depend on either.
#pragma once
#include <stdint.h>

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
// The privilege levels a PMC counts or samples at (perf's :u and :k;
// hwpmc's pmcstat -U): PMC_F_USER user mode (CPL 3), PMC_F_KERNEL kernel
// mode (CPL 0), both set both. With neither, the mode's default: counting
// both levels, sampling user mode only. A hardware event's counter counts
// only at the levels asked for (its event select's USR and OS bits, or the
// fixed counter's enable field: Intel SDM vol. 3B, "Architectural
// Performance Monitoring"; AMD APM vol. 2, 13.2); a sampling PMC also logs
// only samples whose IP was at those levels. Sampling kernel mode needs the
// system-profile privilege. Of the software events only task-clock tells the
// levels apart (user-mode time and the rest of the CPU time); a restriction
// on another is STATUS_PMC_LEVEL_UNSUPPORTED.
#define PMC_F_KERNEL       0x10 // kernel mode (sampling: needs the privilege)
#define PMC_F_USER         0x20 // user mode
#define PMC_F_LEVELS       (PMC_F_USER | PMC_F_KERNEL)
// Sampling, process scope: at each switch-out of a target a PMCLOG_OFFCPU
// record (its chain, PMC_F_CALLCHAIN or not, and why it left), at the
// switch-in that ends the absence a PMCLOG_ONCPU record with the time away
// (Brendan Gregg, "Off-CPU Analysis"; perf record --off-cpu).
#define PMC_F_LOG_OFFCPU   0x4000
#define PMC_F_ALL          (0x3F | PMC_F_LOG_OFFCPU)

#define PMC_CPU_ANY 0xFFFFFFFFu

#define PMC_MAX_TARGETS_USER              64 // processes attached to one PMC (STATUS_PMC_TOO_MANY_TARGETS)
// Sampling PMCs running at once on the machine, and of them those of owners
// without the privilege (STATUS_PMC_TOO_MANY_RUNNING): the last quarter is
// kept for privileged owners, as the profiles' limit keeps one.
#define PMC_MAX_RUNNING_USER              32
#define PMC_MAX_RUNNING_UNPRIVILEGED_USER (PMC_MAX_RUNNING_USER - PMC_MAX_RUNNING_USER / 4)

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

// The logs: one per process that configures one (hwpmc's log is per owner:
// pmcstat's PMC_OP_CONFIGURELOG), its own rings, counts and depth; a sampling
// PMC's records go to its owner's log. Each CPU writes its own ring of a log;
// its owner's NtPmcReadLog drains them. PMC_LOGS_MAX logs on the machine;
// processes without the system-profile privilege hold at most
// PMC_LOGS_UNPRIVILEGED of them (STATUS_PMC_TOO_MANY_LOGS), with rings of at
// most PMC_LOG_UNPRIVILEGED_BYTES per CPU together (STATUS_PMC_LOG_QUOTA) and
// never out of the privileged reserve of memory (STATUS_COMMITMENT_LIMIT,
// lib/abi/syscalls.h's memory limits), so a privileged process always finds one.
#define PMC_LOGS_MAX               16
#define PMC_LOGS_UNPRIVILEGED      (PMC_LOGS_MAX - 2)
#define PMC_LOG_UNPRIVILEGED_BYTES (16u << 20)  // per CPU, the unprivileged logs' rings together
#define PMC_LOG_RING_MIN           4096u        // bytes per CPU
#define PMC_LOG_RING_MAX           (16u << 20)  // bytes per CPU
#define PMC_LOG_RING_DEFAULT       (256u << 10) // bytes per CPU (boot option pmclog=KB)
#define PMC_DEPTH_DEFAULT          128
#define PMC_DEPTH_MAX              512

struct pmc_log_config {
    uint32_t ring_bytes; // per CPU, a multiple of 4096; 0: the default (or the boot option)
    uint32_t depth;      // call-chain frames at most; 0: PMC_DEPTH_DEFAULT
};

#define PMC_STATS_CPUS 64 // per-CPU rows in struct pmc_driver_stats: every CPU (MAX_CPUS)

// NtPmcGetDriverStats: the caller's log (zeros without one), and the
// machine's NtPmc* system calls.
struct pmc_driver_stats {
    uint32_t ncpus;
    uint32_t log_configured;     // 1 while the caller has a log (the counts below are its log's)
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
