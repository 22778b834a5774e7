// Profile objects (NT's Ke layer): a range of code addresses, a source, a set
// of CPUs, optionally one process, and a buffer of 32-bit buckets.
//
// The sample fan-out (ke/sample.c) looks only at candidates: the started
// system-scope profiles of the sample's source, and the started profiles of
// the current process for that source. Each candidate list is an
// immutable "profile set" (ke/profile_index.h: persistent B+ trees keyed by
// range base), replaced on start and stop by a new set that shares all but
// one path with the old, and read without locks by the interrupt path: a
// lookup descends only where a range may cover the address, so profiles
// that cannot match cost nothing.
// Replacing a set is followed by a grace period over the CPUs that may be
// reading the old one — every CPU for the system's, only those running the
// process now for a process's (core/sched.h's sched_cpus_running) — after
// which no CPU can still be reading the old set or writing a stopped
// profile's buffer: only then is the old set freed and the buffer unpinned.
// A process-scope start or stop of a process that is not running interrupts
// no CPU at all.
#pragma once
#include "lib/abi/profile.h"
#include "lib/abi/status.h"
#include "lib/param.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

#include "core/object.h"

#include "pmc/ke/profile_object.h"

struct process;

// The system scope of one source: the started profiles and the samples seen,
// per CPU (single writer each: no atomics needed). They are also the
// ProfileTime tick count of each CPU (core/swevent.h). A process's sets are
// in its profile_process (ke/profile_state.h) and count their own samples,
// handed on from set to set (ke/profile.c's samples_since_start).
struct profile_slot {
    struct profile_set *set;    // NULL when none is started
    uint64_t samples[MAX_CPUS]; // samples of this source, per CPU
};

// KeInitializeProfile: a new, stopped profile object (one reference, the
// caller's). Arguments were validated by the Nt layer.
NTSTATUS KeInitializeProfile(struct kprofile **out, struct process *process, uint64_t range_base,
                             uint64_t range_size, uint32_t bucket_shift, uint64_t buffer,
                             uint32_t buffer_size, KPROFILE_SOURCE source, uint64_t affinity);
// Pins the buffer (in the caller's address space), starts the source on 0 -> 1.
NTSTATUS KeStartProfile(struct kprofile *p);
NTSTATUS KeStopProfile(struct kprofile *p);              // stops the source on 1 -> 0, unpins
uint64_t KeQueryIntervalProfile(KPROFILE_SOURCE source); // 0 when unsupported
NTSTATUS KeSetIntervalProfile(uint64_t interval, KPROFILE_SOURCE source);
void KeQueryProfileStats(struct kprofile *p, struct sys_profile_stats *out);

void ke_profile_init(void); // at boot: the per-process area, the process watcher
// The started profiles of each source system-wide (the sample fan-out reads
// them; a process's are in its profile_process, ke/profile_state.h).
extern struct profile_slot profile_system_slots[ProfileSourceCount];
// Whether a sample of source interrupting pr (NULL: no process) meets a
// started profile, system-wide or of pr: `pmc trace` tells "out of range"
// from "not profiled" with it.
bool ke_profile_scope_started(struct process *pr, KPROFILE_SOURCE source);
// Buckets a range of size bytes needs at 2^shift bytes each: ceil(size / 2^shift).
static inline uint64_t profile_buckets(uint64_t size, uint32_t shift)
{
    return (size >> shift) + ((size & ((1ull << shift) - 1)) != 0);
}
// One more or one fewer user of the HAL source (HalStartProfileInterrupt /
// HalStopProfileInterrupt, which count them): the first starts it, the last
// stops it. Profile objects and PMC objects both come here; any context where
// a mutex may be taken.
NTSTATUS KeReferenceProfileSource(KPROFILE_SOURCE source);
// The same, the source's counters counting in levels (enum pmc_levels; a
// source started in others counts in both from then on: hal.h).
NTSTATUS KeReferenceProfileSourceLevels(KPROFILE_SOURCE source, unsigned levels);
NTSTATUS KeDereferenceProfileSource(KPROFILE_SOURCE source);
