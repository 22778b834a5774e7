// The HAL's profile functions: the face the profile-object layer calls.
//
// NT names and information classes (as Geoff Chappell's studies of the Windows
// HAL describe them), with three departures: start and stop return an NTSTATUS
// and a reason instead of VOID; the HAL counts the users of each source (NT's
// kernel keeps that count and calls the HAL on the first start and the last
// stop); and HalQueryProfileSource answers what users of those functions asked
// for (names, default/min/max interval, counter kind, why a source is
// unsupported, how many users it has).
//
// Start, stop, HalSetProfileInterval and HalSetSystemInformation's
// HalProfileSourceInterval take one mutex and run a function on every CPU
// through smp_call_all: call them from process context, with interrupts
// enabled and no spinlock held. A call that overlaps another waits its turn.
#pragma once
#include "lib/abi/profile.h"
#include "lib/abi/status.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

#include "pmc/hal/profile_source.h"

// Information classes, with NT's values.
typedef enum {
    HalProfileSourceInterval = 0,         // HAL_PROFILE_SOURCE_INTERVAL
    HalProfileSourceInterruptHandler = 1, // HAL_PROFILE_INTERRUPT_HANDLER
} HAL_SET_INFORMATION_CLASS;

typedef enum {
    HalProfileSourceInformation = 1, // HAL_PROFILE_SOURCE_INFORMATION
    // This kernel's own class, numbered far above NT's: which counters a
    // source may use, so a caller can tell which sources run together.
    HalProfileSourceCounterInformation = 0x1000, // HAL_PROFILE_SOURCE_COUNTERS
} HAL_QUERY_INFORMATION_CLASS;

typedef struct {
    KPROFILE_SOURCE ProfileSource;
    uint64_t Interval; // in: wanted; out: what the HAL will use
} HAL_PROFILE_SOURCE_INTERVAL;

typedef struct {
    KPROFILE_SOURCE ProfileSource; // in
    bool Supported;                // out
    uint32_t Interval;             // out: current interval, saturated to 32 bits
} HAL_PROFILE_SOURCE_INFORMATION;

// HalProfileSourceCounterInformation: where a source may be counted. Each
// started PMC source holds one counter per CPU; sources can run together
// when each gets a counter of its own from its masks. The constraints
// (lib/abi/profile.h's PROFILE_COUNTERS_*): Intel's reference cycles only on
// IA32_FIXED_CTR2 (SDM vol. 3B, "Fixed-function Performance Counters"; the
// GP encoding counts another clock, hal/profile_source.c), AMD family 15h's
// events 0x060-0x07F only on PERF_CTR0-2 (BKDG for family 15h models
// 00h-0Fh, publication 42301, each event's counter restriction).
typedef struct {
    KPROFILE_SOURCE ProfileSource;    // in
    uint32_t GeneralMask;             // out: bit n: general-purpose counter n may count it
    uint32_t FixedMask;               // out: bit n: IA32_FIXED_CTRn may count it
    uint32_t Constraints;             // out: PROFILE_COUNTERS_* (lib/abi/profile.h)
    uint8_t GeneralCount, FixedCount; // out: the counters of each kind the interface has
} HAL_PROFILE_SOURCE_COUNTERS;

// Called for every sample, in interrupt context with interrupts off, with the
// source (one of the HAL's, below ProfileSourceCount: the handler does not check
// it again) and the interrupted context as the CPU pushed it (instruction
// pointer, code segment: user or kernel mode, stack pointer). It must not
// sleep, allocate or take a lock that is held with interrupts on.
typedef void (*HAL_PROFILE_INTERRUPT_HANDLER)(KPROFILE_SOURCE source, const struct intr_frame *f);

// Add or remove one user of source. The first start counts source on every
// CPU (or on none, when one CPU fails); the last stop stops it everywhere;
// the calls in between only count. *reason (if reason is not NULL) gets a
// static string saying why on failure, "" on success:
//   STATUS_INVALID_PARAMETER      unknown source
//   STATUS_NOT_SUPPORTED          start: unsupported here (the reason says why)
//   STATUS_INSUFFICIENT_RESOURCES start: "no free counter"
//   STATUS_PROFILING_NOT_STARTED  stop of a source that has no user
NTSTATUS HalStartProfileInterrupt(KPROFILE_SOURCE source, const char **reason);
// The same with the levels the source's counters count in (enum pmc_levels;
// the plain call: both). A PMC source already started in other levels is
// widened to both on every CPU (its users filter by level), or, when a CPU
// has no counter for the wider levels, left as it was:
//   STATUS_INSUFFICIENT_RESOURCES  no counter for the wider levels
//   STATUS_INVALID_PARAMETER      levels 0 or above PMC_LEVELS_ALL
NTSTATUS HalStartProfileInterruptEx(KPROFILE_SOURCE source, unsigned levels, const char **reason);
NTSTATUS HalStopProfileInterrupt(KPROFILE_SOURCE source, const char **reason);

// ProfileTime interval in 100 ns units, clamped to [1,221, 10,000,000]; returns
// the interval now in force. A running ProfileTime is reprogrammed on every CPU.
uint64_t HalSetProfileInterval(uint64_t interval);

// HalProfileSourceInterval: clamps the interval to what the source's counter can
// load (PMC sources: [1,000, 2^31-1] with legacy writes, up to 2^47-1 otherwise),
// writes the result back into the buffer, and applies it at the source's next
// start (ProfileTime: at once, as HalSetProfileInterval).
// HalProfileSourceInterruptHandler: buffer holds one HAL_PROFILE_INTERRUPT_HANDLER
// (NULL unregisters).
// Errors: STATUS_INVALID_INFO_CLASS, STATUS_INVALID_PARAMETER (NULL buffer, unknown
// source), STATUS_INFO_LENGTH_MISMATCH (size != the structure), STATUS_NOT_SUPPORTED.
NTSTATUS HalSetSystemInformation(HAL_SET_INFORMATION_CLASS cls, uint32_t size, void *buffer);

// HalProfileSourceInformation: size >= the structure (else STATUS_INFO_LENGTH_MISMATCH
// with *returned = the size needed). An unknown or unsupported source succeeds
// with Supported = false and Interval = 0.
// HalProfileSourceCounterInformation: the same size rule; an unknown or
// unsupported source succeeds with both masks 0 (ProfileTime: the timer).
NTSTATUS HalQuerySystemInformation(HAL_QUERY_INFORMATION_CLASS cls, uint32_t size, void *buffer,
                                   uint32_t *returned);

// Everything known about one source.
struct hal_profile_source_details {
    KPROFILE_SOURCE source;
    const char *name;        // "ProfileTime"
    const char *description; // "Time"
    bool supported;
    const char *reason;         // why not ("" when supported)
    enum pmc_counter_kind kind; // timer, fixed or general
    bool started;               // running on every CPU (users > 0)
    unsigned users;             // HalStartProfileInterrupt calls not yet stopped
    uint64_t interval;          // current; 100 ns for ProfileTime, events otherwise
    uint64_t default_interval, min_interval, max_interval;
    uint64_t throttled; // periods the PMI throttle let pass unsampled, all CPUs
};

// STATUS_INVALID_PARAMETER for an unknown source or NULL out.
NTSTATUS HalQueryProfileSource(KPROFILE_SOURCE source, struct hal_profile_source_details *out);
