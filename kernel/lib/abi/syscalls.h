// The system calls: calling convention, SYSCALL_LIST and its numbers, HANDLE,
// the calls' flags and the sys_* structures they take.
//
// Part of the kernel/user ABI: included by the kernel and by userland;
// nothing here may depend on either.
#pragma once
#include <stdint.h>

#include "lib/abi/status.h"

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
    X(61, SysInterruptMode, 2)     /* (uint32_t mode, uint32_t *pending): INTERRUPT_*; see below */ \
    X(62, SysIrqoffLongest, 4)     /* (struct sys_irqoff_longest *buf, uint32_t max, uint32_t *count, uint32_t flags): see below */ \
    X(63, SysHostWrite, 3)         /* (const void *buf, size_t len, size_t *written): to the host's file; see below */

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

// SysSpawn flags. A child's image and stack are charged to it as mappings
// are (the memory limits below): an unprivileged child that would take the
// privileged reserve is not made (STATUS_COMMITMENT_LIMIT).
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
// leads that group). Only the console's owner may set it: the first process
// to do so while no owner lives (the shell, at its start), or a member of the
// foreground group that does so (a shell run from the shell), until it ends;
// anyone else gets STATUS_ACCESS_DENIED (POSIX's SIGTTOU for a background
// tcsetpgrp). Input belongs to the foreground group while one is set, to the
// owner while none is: SysRead(0) by anyone else is STATUS_ACCESS_DENIED, the
// input left for its owner (POSIX's SIGTTIN for a background read); with no
// owner alive, anyone reads. While a foreground group is set, a Ctrl-C (byte 0x03)
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

// Memory limits, as NT's commit charge: each page of a mapping is charged to
// its process when it is mapped, a PROT_DEMAND one too (as NT charges
// MEM_COMMIT, not the first touch), and stays charged after SysUnmap while a
// started profile still pins it (core/pin.h: the frame outlives its mapping),
// until the profile stops. An unprivileged process may be charged at most
// total_pages / MEM_COMMIT_DIVISOR pages (SysInfo's total_pages), and the
// pages it takes must leave total_pages / MEM_RESERVE_DIVISOR free (the
// privileged reserve); past either, SysMap fails with STATUS_COMMITMENT_LIMIT
// (NT's answer when a job's process memory limit or the commit limit is
// reached) and changes nothing, and a demand page first touched past the
// reserve kills the process as any fault in ring 3 does. A privileged
// process has neither limit (SysMap fails with STATUS_NO_MEMORY when the
// pages are not there). A process holds at most MAP_REGIONS_MAX mappings
// (each SysMap is one, an unmap in the middle of one makes two), else
// STATUS_QUOTA_EXCEEDED (NT charges each mapping's descriptor to the
// process's pool quota).
#define MEM_COMMIT_DIVISOR  2
#define MEM_RESERVE_DIVISOR 16
#define MAP_REGIONS_MAX     4096

#define PROCESS_NAME_MAX 32
#define MAX_ARGS         32   // argv entries
#define MAX_ARG_BYTES    4096 // all argv strings together

// SysRead's fd 0 with this bit: return at once with the input already
// waiting, *got 0 when there is none (a poll, as O_NONBLOCK without EAGAIN).
#define SYS_READ_NOWAIT 0x100

// NT's pseudo-handles (wdm.h): the calling process and thread, accepted
// wherever a process (thread) handle is; not in any handle table, never closed.
#define NtCurrentProcess() ((HANDLE)(intptr_t)-1)
#define NtCurrentThread()  ((HANDLE)(intptr_t)-2)

// SysTmpWrite flags: the RAM file system under /tmp/ (names "/tmp/..." only).
//
// Owners and modes, as in a Unix /tmp with the sticky bit, for the two users
// this kernel has: "privileged" (processes holding the system-profile
// privilege: sudo) and "unprivileged" (every other process). A file belongs
// to the user whose process created it, or last replaced it. Its owner may
// read, append to, replace and remove it; so may any privileged process, as
// root may. A process of the other user may read it only if its mode has
// TMP_OTHERS_READ (else STATUS_ACCESS_DENIED) and append to it only if its
// mode has TMP_OTHERS_APPEND (else STATUS_ACCESS_DENIED); it may never replace
// it (TMP_TRUNCATE: STATUS_OBJECT_NAME_COLLISION) nor remove it
// (STATUS_ACCESS_DENIED). Anyone may create a new name. The mode is the
// TMP_OTHERS_* bits of the write that creates or replaces the file (0: private
// to its owner, as `sudo profile record` leaves /tmp/pmc.log, perf's 0600);
// later appends leave it as it is. A refused call changes nothing: a replace
// that fails (refused, out of room, a bad buffer) leaves the old file whole.
//
// Room: the files hold at most TMP_BYTES_MAX bytes (of capacity) together,
// else STATUS_TMP_FULL. Each byte counts against the share of the user whose
// write added it: the unprivileged user's writes may hold at most
// TMP_SHARE_UNPRIVILEGED bytes, else STATUS_QUOTA_EXCEEDED, so the last
// TMP_RESERVE_PRIVILEGED bytes are a reserve that only privileged processes
// can fill (ext4's reserved blocks): a privileged recording still gets room
// when every unprivileged process has filled all it may. Files are memory:
// an unprivileged write that would take the privileged reserve of memory
// (the memory limits above) fails with STATUS_COMMITMENT_LIMIT.
#define TMP_TRUNCATE           0x1  // create or replace the file, buf its contents; else append
#define TMP_REMOVE             0x2  // delete the file (buf and len ignored)
#define TMP_OTHERS_READ        0x10 // mode: the other user's processes may read the file
#define TMP_OTHERS_APPEND      0x20 // mode: the other user's processes may append to it
#define TMP_NAME_MAX           48
#define TMP_BYTES_MAX          (64u << 20) // all files together
#define TMP_RESERVE_PRIVILEGED (16u << 20)
#define TMP_SHARE_UNPRIVILEGED (TMP_BYTES_MAX - TMP_RESERVE_PRIVILEGED)

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

// SysIrqoffLongest reads the kernel's interrupts-off tracker (core/irqoff.h,
// docs/blind-spots.md): one row per CPU, up to max, *count rows written, each
// with the longest section that CPU spent with interrupts off in process
// context (from a spin_lock_irqsave that found them on to its unlock, and
// exit's own section) since boot or the last reset, and where it began. A
// section the kernel keeps long on purpose (SysIrqoffSpin's) is reported
// apart, with its reason, and is never the longest. IRQOFF_RESET forgets
// every record first, so that the rows cover what follows (it needs the
// privilege: STATUS_PRIVILEGE_NOT_HELD). No system call may keep interrupts
// off longer than IRQOFF_SPIN_MAX_US whatever its arguments: memtests checks
// that with these rows.
#define IRQOFF_RESET 0x1
#define IRQOFF_WHERE 64 // "function+0xoffset (lock)", cut to fit
struct sys_irqoff_longest {
    uint64_t tsc;         // TSC ticks of the longest section (SysClock's tsc_hz); 0: none
    uint64_t excused_tsc; // the longest one kept long on purpose; 0: none
    uint64_t sections;    // sections measured on this CPU since boot
    char where[IRQOFF_WHERE];
    char excused_where[IRQOFF_WHERE];
    char why[IRQOFF_WHERE]; // the excused one's reason
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

// SysHostWrite: len bytes to the host's recording file, the virtio console's
// port (docs/pmc-log.md, "Recordings on the host"), in order, one caller's
// buffer whole before another's. *written: the bytes the host took, also on
// a failure. STATUS_PRIVILEGE_NOT_HELD without the system-profile privilege;
// STATUS_NO_SUCH_DEVICE when the machine has no virtio console (len 0 asks
// only that); STATUS_IO_TIMEOUT once the host stopped taking data;
// STATUS_ACCESS_VIOLATION for a buffer outside the caller's memory.
