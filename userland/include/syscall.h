// Typed prototypes of every system call in SYSCALL_LIST (kernel/lib/abi/syscalls.h). The
// stubs themselves are generated from that list in lib/syscall.c, which also
// checks at compile time that each entry has a prototype here.
//
// Unless noted, a call returns an NTSTATUS: test it with NT_SUCCESS().
#pragma once
#include <stddef.h>
#include <stdint.h>
// The whole kernel/user ABI (kernel/lib/abi/), for every program.
#include "lib/abi/etw.h"
#include "lib/abi/pmc.h"
#include "lib/abi/pmclog.h"
#include "lib/abi/profile.h"
#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"
#include <nt.h>

// Processes.
_Noreturn void SysExit(int status);
NTSTATUS SysSpawn(const char *path, const char *const *argv, uint32_t flags, HANDLE *process);
NTSTATUS SysResume(HANDLE process);
NTSTATUS SysWait(HANDLE process, int *exit_status);
NTSTATUS SysKill(uint32_t pid);
uint32_t SysGetPid(void); // the caller's pid, not a status
NTSTATUS SysOpenProcess(uint32_t pid, HANDLE *process);
NTSTATUS SysProcessId(HANDLE process, uint32_t *pid);
NTSTATUS SysProcessList(struct sys_process_info *buf, uint32_t max, uint32_t *count);
NTSTATUS NtClose(HANDLE handle);

// Console: fd 0 reads (blocks until at least one byte), fd 1 and 2 write.
NTSTATUS SysWrite(int fd, const void *buf, size_t len);
NTSTATUS SysRead(int fd, void *buf, size_t len, size_t *got);

// Memory: anonymous zero-filled pages; *addr == NULL lets the kernel choose.
NTSTATUS SysMap(void **addr, size_t size, uint32_t prot);
NTSTATUS SysUnmap(void *addr, size_t size);

// Time and scheduling.
NTSTATUS SysYield(void);
NTSTATUS SysSleep(uint64_t milliseconds);
NTSTATUS SysClock(struct sys_clock *out);

// The machine.
NTSTATUS SysInfo(struct sys_info *out);
NTSTATUS SysCpuInfo(struct sys_cpu_info *buf, uint32_t max, uint32_t *count);
NTSTATUS SysPowerOff(void); // returns only on failure (it needs the privilege)
NTSTATUS SysSelfCheck(struct sys_self_check *out);
// For teaching: spin MICROSECONDS (1..IRQOFF_SPIN_MAX_US) with interrupts off in the
// kernel, then as long with them on (docs/blind-spots.md).
NTSTATUS SysIrqoffSpin(uint64_t microseconds, struct sys_irqoff_split *out);
// The kernel's interrupts-off tracker: each CPU's longest section and where it
// began (lib/abi/syscalls.h); IRQOFF_RESET (privileged) forgets them first.
NTSTATUS SysIrqoffLongest(struct sys_irqoff_longest *buf, uint32_t max, uint32_t *count,
                          uint32_t flags);

// The initial ramdisk.
NTSTATUS SysFileRead(const char *name, uint64_t offset, void *buf, size_t len, size_t *got);
NTSTATUS SysFileList(char *buf, size_t len, size_t *needed);

// Profiling, with the NT prototypes.
NTSTATUS NtCreateProfile(HANDLE *ProfileHandle, HANDLE Process, void *RangeBase, size_t RangeSize,
                         ULONG BucketSize, ULONG *Buffer, ULONG BufferSize,
                         KPROFILE_SOURCE ProfileSource, KAFFINITY Affinity);
NTSTATUS NtCreateProfileEx(HANDLE *ProfileHandle, HANDLE Process, void *RangeBase, size_t RangeSize,
                           ULONG BucketSize, ULONG *Buffer, ULONG BufferSize,
                           KPROFILE_SOURCE ProfileSource, USHORT GroupCount,
                           GROUP_AFFINITY *GroupAffinity);
NTSTATUS NtStartProfile(HANDLE ProfileHandle);
NTSTATUS NtStopProfile(HANDLE ProfileHandle);
NTSTATUS NtQueryIntervalProfile(KPROFILE_SOURCE ProfileSource, ULONG *Interval);
NTSTATUS NtSetIntervalProfile(ULONG Interval, KPROFILE_SOURCE Source);
NTSTATUS SysProfileSources(struct sys_profile_source *buf, uint32_t max, uint32_t *count);
NTSTATUS SysProfileStats(HANDLE profile, struct sys_profile_stats *out);
NTSTATUS SysPmcTrace(uint32_t op, void *buf, size_t len, size_t *got);
NTSTATUS SysPmcInfo(char *buf, size_t len, size_t *got);

// PMCs and the sample log (hwpmc's operations; docs/pmc-log.md).
NTSTATUS NtPmcAllocate(HANDLE *pmc, const struct pmc_alloc *params);
NTSTATUS NtPmcAttach(HANDLE pmc, HANDLE process); // NtCurrentProcess() for the caller
NTSTATUS NtPmcDetach(HANDLE pmc, HANDLE process);
NTSTATUS NtPmcSetCount(HANDLE pmc, uint64_t count);
NTSTATUS NtPmcStart(HANDLE pmc);
NTSTATUS NtPmcStop(HANDLE pmc);
NTSTATUS NtPmcRead(HANDLE pmc, uint64_t *value);
NTSTATUS NtPmcWrite(HANDLE pmc, uint64_t value);
NTSTATUS NtPmcConfigureLog(const struct pmc_log_config *config); // NULL releases the log
NTSTATUS NtPmcFlushLog(void);
NTSTATUS NtPmcReadLog(void *buf, size_t len, size_t *got);
NTSTATUS NtPmcWriteLog(uint64_t userdata);
NTSTATUS NtPmcGetDriverStats(struct pmc_driver_stats *out);

// /tmp, a RAM file system: names "/tmp/NAME"; flags TMP_TRUNCATE, TMP_REMOVE.
NTSTATUS SysTmpWrite(const char *name, const void *buf, size_t len, uint32_t flags);
NTSTATUS SysTmpRead(const char *name, uint64_t offset, void *buf, size_t len, size_t *got);
// The host's recording file (kernel/lib/abi/syscalls.h: SysHostWrite).
NTSTATUS SysHostWrite(const void *buf, size_t len, size_t *written);
// Counting PMCs and counter values at context switches (docs/counting.md).
NTSTATUS NtPmcQuery(HANDLE pmc, struct pmc_value *out);
// PMC_CSWITCH_START (events[len / 4]) or PMC_CSWITCH_STOP: PMCLOG_CSWITCH
// records into the caller's log.
NTSTATUS NtPmcCswitchLog(uint32_t op, const uint32_t *events, size_t len);
NTSTATUS NtPmcGetMsr(HANDLE pmc, uint32_t *rdpmc_index);
NTSTATUS NtPmcCpuCounts(uint64_t *buf, uint32_t max, uint32_t *count);
// NT's per-logger PMC counters (lib/abi/etw.h; docs/counting.md).
NTSTATUS NtSetSystemInformation(uint32_t cls, void *buf, uint32_t len);
NTSTATUS NtQuerySystemInformation(uint32_t cls, void *buf, uint32_t len, uint32_t *returned);
NTSTATUS NtPmcTraceLogger(uint32_t op, TRACEHANDLE *handle);
// hwpmc's PMC_OP_PMCADMIN, GETCPUINFO, GETPMCINFO, GETMODULEVERSION.
NTSTATUS NtPmcAdmin(uint32_t cpu, uint32_t row, uint32_t state);
NTSTATUS NtPmcGetCpuInfo(struct pmc_cpuinfo *out);
NTSTATUS NtPmcGetPmcInfo(uint32_t cpu, struct pmc_rowinfo *buf, uint32_t len, uint32_t *needed);
NTSTATUS NtPmcGetModuleVersion(uint32_t *version);
// Console interrupts (Ctrl-C): the foreground process group and the mode (lib/abi/syscalls.h).
NTSTATUS SysConsoleForeground(uint32_t pgid);
NTSTATUS SysInterruptMode(uint32_t mode, uint32_t *pending);
