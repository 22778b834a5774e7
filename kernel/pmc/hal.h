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
#include "lib/abi.h"
#include "arch/x86/trapframe.h"
#include "pmc/profile_source.h"
#include "lib/types.h"

// Information classes, with NT's values.
typedef enum {
    HalProfileSourceInterval = 0,         // HAL_PROFILE_SOURCE_INTERVAL
    HalProfileSourceInterruptHandler = 1, // HAL_PROFILE_INTERRUPT_HANDLER
} HAL_SET_INFORMATION_CLASS;

typedef enum {
    HalProfileSourceInformation = 1, // HAL_PROFILE_SOURCE_INFORMATION
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
