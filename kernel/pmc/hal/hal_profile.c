// The HAL face: HalStart/StopProfileInterrupt, HalSetProfileInterval,
// Hal{Set,Query}SystemInformation and HalQueryProfileSource.
//
// ProfileTime goes to hal/profile_time.c; every other source to the chosen
// interface (halp_profile_interface), run on every CPU through smp_call_all.
//
// The HAL counts the users of each source: the first HalStartProfileInterrupt
// starts it on every CPU, the last HalStopProfileInterrupt stops it. Starts,
// stops and interval changes are serialized by one mutex, so none of them
// fails because another is in progress. Each runs smp_call_all rounds, which
// need interrupts on: a spinlock cannot be held across them, and a waiter
// must be able to sleep. They are called from process context only (system
// calls, profile and PMC objects, the boot self-tests). The sample paths take
// no lock here: the ProfileTime tick and the PMI (with its throttle) re-arm
// from per-CPU copies of the period and only read what they need.
#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/mutex.h"
#include "core/smp.h"
#include "core/spinlock.h"

#include "pmc/hal/deliver.h"
#include "pmc/hal/hal.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/profile_time.h"
#include "pmc/hal/rows.h"
#include "pmc/hal/trace.h"

static struct mutex hal_mutex = MUTEX_INIT("hal profile"); // start, stop, intervals
static unsigned users[ProfileSourceCount];    // per source: starts not yet stopped (hal_mutex)
static uint8_t levels_of[ProfileSourceCount]; // the levels a started PMC source counts in
static uint32_t started;                      // bit per source running on every CPU: users != 0
_Static_assert(ProfileSourceCount <= 32, "started is a 32-bit set");

static bool is_started(KPROFILE_SOURCE source)
{
    return (READ_ONCE(started) >> source) & 1;
}

static NTSTATUS fail(const char **reason, const char *why, NTSTATUS status)
{
    if (reason)
        *reason = why;
    return status;
}

// Support, reason, counter kind and largest interval of a known source.
static void query(KPROFILE_SOURCE source, struct pmc_source_query *q)
{
    if (source == ProfileTime)
        *q = (struct pmc_source_query){true, "", PMC_COUNTER_TIMER, PROFILE_TIME_MAX};
    else
        halp_profile_interface->QueryInformation(source, q);
}

// One smp_call_all round: the source, and each CPU's answer.
struct hal_call {
    KPROFILE_SOURCE source;
    unsigned levels, old; // old: the levels a reprogramming falls back to
    NTSTATUS status[MAX_CPUS];
};

static void enable_on_cpu(void *arg)
{
    struct hal_call *call = arg;
    call->status[cpu_id()] = halp_profile_interface->EnableMonitoring(call->source, call->levels);
}

static void disable_on_cpu(void *arg)
{
    struct hal_call *call = arg;
    halp_profile_interface->DisableMonitoring(call->source);
}

// Reprogram a running source for call->levels on this CPU, interrupts off:
// its counter freed and taken again at once; without a counter for the new
// levels, the old ones (call->old) are restored.
static void relevel_on_cpu(void *arg)
{
    struct hal_call *call = arg;
    halp_profile_interface->DisableMonitoring(call->source);
    NTSTATUS s = halp_profile_interface->EnableMonitoring(call->source, call->levels);
    if (!NT_SUCCESS(s))
        halp_profile_interface->EnableMonitoring(call->source, call->old);
    call->status[cpu_id()] = s;
}

// Widen a running PMC source to levels on every CPU, or on none (hal_mutex
// held).
static NTSTATUS widen_everywhere(KPROFILE_SOURCE source, unsigned levels, const char **reason)
{
    struct hal_call call = {.source = source, .levels = levels, .old = levels_of[source]};
    smp_call_all(relevel_on_cpu, &call);
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
        if (NT_SUCCESS(call.status[cpu]))
            continue;
        call.levels = call.old; // back to the old levels everywhere
        smp_call_all(relevel_on_cpu, &call);
        return fail(reason, "no counter for the wider levels", call.status[cpu]);
    }
    levels_of[source] = (uint8_t)levels;
    return fail(reason, "", STATUS_SUCCESS);
}

// Enable on every CPU, or on none: a failure anywhere undoes the others.
static NTSTATUS enable_everywhere(KPROFILE_SOURCE source, unsigned levels, const char **reason)
{
    struct hal_call call = {.source = source, .levels = levels};
    smp_call_all(enable_on_cpu, &call);
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
        if (NT_SUCCESS(call.status[cpu]))
            continue;
        smp_call_all(disable_on_cpu, &call);
        if (call.status[cpu] == STATUS_INSUFFICIENT_RESOURCES)
            return fail(reason, "no free counter", call.status[cpu]);
        return fail(reason, "the interface refused the source", call.status[cpu]);
    }
    return fail(reason, "", STATUS_SUCCESS);
}

// The first user: start source on every CPU (hal_mutex held).
static NTSTATUS start_everywhere(KPROFILE_SOURCE source, unsigned levels, const char **reason)
{
    NTSTATUS status = fail(reason, "", STATUS_SUCCESS);
    PMC_TRACE_STEP(PMC_STEP_START, source, 0);
    if (source == ProfileTime)
        profile_time_start();
    else
        status = enable_everywhere(source, levels, reason);
    if (NT_SUCCESS(status)) {
        levels_of[source] = (uint8_t)levels;
        __atomic_fetch_or(&started, 1u << source, __ATOMIC_RELEASE);
    }
    return status;
}

// The last user gone: stop source on every CPU (hal_mutex held).
static void stop_everywhere(KPROFILE_SOURCE source)
{
    PMC_TRACE_STEP(PMC_STEP_STOP, source, 0);
    if (source == ProfileTime) {
        profile_time_stop();
    } else {
        struct hal_call call = {.source = source};
        smp_call_all(disable_on_cpu, &call);
    }
    __atomic_fetch_and(&started, ~(1u << source), __ATOMIC_RELEASE);
}

// A PMC source has one counter per CPU, programmed for one set of levels. A
// user wanting others while it runs widens them to the union of both, on
// every CPU, so that no user's levels are held against another's (an
// unprivileged user-mode sampler started first must not refuse a privileged
// system-wide profile): every user filters its samples by level itself
// (hwpmc/kind_sampling.h's pmc_sampler_take; an NT profile object takes every
// level), so a narrower user only sees its period count the wider levels'
// events too. The levels stay the widest asked until the last user stops.
// ProfileTime is the timer, which ticks in every level.
NTSTATUS HalStartProfileInterruptEx(KPROFILE_SOURCE source, unsigned levels, const char **reason)
{
    struct pmc_source_query q;
    if ((unsigned)source >= ProfileSourceCount)
        return fail(reason, "unknown profile source", STATUS_INVALID_PARAMETER);
    if (levels == 0 || levels > PMC_LEVELS_ALL)
        return fail(reason, "no level to count in", STATUS_INVALID_PARAMETER);
    query(source, &q);
    if (!q.supported)
        return fail(reason, q.reason, STATUS_NOT_SUPPORTED);
    mutex_lock(&hal_mutex);
    NTSTATUS status = fail(reason, "", STATUS_SUCCESS);
    if (users[source] == 0)
        status = start_everywhere(source, levels, reason);
    else if (source != ProfileTime && (levels_of[source] | levels) != levels_of[source])
        status = widen_everywhere(source, levels_of[source] | levels, reason);
    if (NT_SUCCESS(status))
        users[source]++;
    mutex_unlock(&hal_mutex);
    return status;
}

NTSTATUS HalStartProfileInterrupt(KPROFILE_SOURCE source, const char **reason)
{
    return HalStartProfileInterruptEx(source, PMC_LEVELS_ALL, reason);
}

NTSTATUS HalStopProfileInterrupt(KPROFILE_SOURCE source, const char **reason)
{
    if ((unsigned)source >= ProfileSourceCount)
        return fail(reason, "unknown profile source", STATUS_INVALID_PARAMETER);
    mutex_lock(&hal_mutex);
    NTSTATUS status = fail(reason, "", STATUS_SUCCESS);
    if (users[source] == 0)
        status = fail(reason, "not started", STATUS_PROFILING_NOT_STARTED);
    else if (--users[source] == 0)
        stop_everywhere(source);
    mutex_unlock(&hal_mutex);
    return status;
}

uint64_t HalSetProfileInterval(uint64_t interval)
{
    uint64_t actual = profile_time_clamp(interval);
    // Under the mutex: a start or stop in progress finishes first, and a
    // running ProfileTime is reprogrammed at the interval just set.
    mutex_lock(&hal_mutex);
    WRITE_ONCE(profile_time_interval, actual);
    PMC_TRACE_STEP(PMC_STEP_SET_INTERVAL, ProfileTime, actual);
    if (is_started(ProfileTime))
        profile_time_start();
    mutex_unlock(&hal_mutex);
    return actual;
}

// The interval a PMC source gets takes effect at its next start.
NTSTATUS HalSetSystemInformation(HAL_SET_INFORMATION_CLASS cls, uint32_t size, void *buffer)
{
    switch (cls) {
    case HalProfileSourceInterval: {
        HAL_PROFILE_SOURCE_INTERVAL *in = buffer;
        if (in == NULL)
            return STATUS_INVALID_PARAMETER;
        if (size != sizeof(*in))
            return STATUS_INFO_LENGTH_MISMATCH;
        if ((unsigned)in->ProfileSource >= ProfileSourceCount)
            return STATUS_INVALID_PARAMETER;
        if (in->ProfileSource == ProfileTime) {
            in->Interval = HalSetProfileInterval(in->Interval);
            return STATUS_SUCCESS;
        }
        // Under the mutex: a start reads the interval on every CPU, and all
        // of them must get the same one. (A running counter re-arms from its
        // own per-CPU copy, so the PMI needs no lock.)
        mutex_lock(&hal_mutex);
        NTSTATUS st = halp_profile_interface->SetInterval(in->ProfileSource, &in->Interval);
        mutex_unlock(&hal_mutex);
        return st;
    }
    case HalProfileSourceInterruptHandler:
        if (buffer == NULL)
            return STATUS_INVALID_PARAMETER;
        if (size != sizeof(HAL_PROFILE_INTERRUPT_HANDLER))
            return STATUS_INFO_LENGTH_MISMATCH;
        {
            halp_deliver_register(*(HAL_PROFILE_INTERRUPT_HANDLER *)buffer);
            return STATUS_SUCCESS;
        }
    default: return STATUS_INVALID_INFO_CLASS;
    }
}

// An unknown or unsupported source is not an error: Supported = false, Interval 0.
static void source_information(HAL_PROFILE_SOURCE_INFORMATION *info)
{
    struct hal_profile_source_details d;
    if (NT_SUCCESS(HalQueryProfileSource(info->ProfileSource, &d)) && d.supported) {
        info->Supported = true;
        info->Interval = d.interval > UINT32_MAX ? UINT32_MAX : (uint32_t)d.interval;
    } else {
        info->Supported = false;
        info->Interval = 0;
    }
}

// The counters of the interface by kind, and those source may use (the
// interface's CountersFor, which counting and sampling both follow).
static void source_counters(HAL_PROFILE_SOURCE_COUNTERS *out)
{
    KPROFILE_SOURCE source = out->ProfileSource;
    struct pmc_source_query q = {0};
    bool known = (unsigned)source < ProfileSourceCount;
    if (known)
        query(source, &q);
    uint32_t fits =
        known && q.supported && source != ProfileTime && halp_profile_interface->CountersFor
            ? halp_profile_interface->CountersFor(source)
            : 0;
    uint32_t all_gp = 0;
    *out = (HAL_PROFILE_SOURCE_COUNTERS){.ProfileSource = source};
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        bool fixed = pmc_hw[i].kind == PMC_COUNTER_FIXED;
        uint32_t bit = 1u << pmc_hw[i].number;
        out->FixedCount += fixed;
        out->GeneralCount += !fixed;
        all_gp |= fixed ? 0 : bit;
        if ((fits >> i) & 1)
            *(fixed ? &out->FixedMask : &out->GeneralMask) |= bit;
    }
    if (known && source == ProfileTime)
        out->Constraints = PROFILE_COUNTERS_TIMER;
    else if (!out->GeneralMask && out->FixedMask)
        out->Constraints = PROFILE_COUNTERS_FIXED_ONLY;
    else if (out->GeneralMask && out->GeneralMask != all_gp)
        out->Constraints = PROFILE_COUNTERS_GP_SUBSET;
}

NTSTATUS HalQuerySystemInformation(HAL_QUERY_INFORMATION_CLASS cls, uint32_t size, void *buffer,
                                   uint32_t *returned)
{
    uint32_t need = cls == HalProfileSourceInformation ? sizeof(HAL_PROFILE_SOURCE_INFORMATION)
                                                       : sizeof(HAL_PROFILE_SOURCE_COUNTERS);
    if (returned)
        *returned = 0;
    if (cls != HalProfileSourceInformation && cls != HalProfileSourceCounterInformation)
        return STATUS_INVALID_INFO_CLASS;
    if (buffer == NULL)
        return STATUS_INVALID_PARAMETER;
    if (size < need) {
        if (returned)
            *returned = need;
        return STATUS_INFO_LENGTH_MISMATCH;
    }
    if (cls == HalProfileSourceInformation)
        source_information(buffer);
    else
        source_counters(buffer);
    if (returned)
        *returned = need;
    return STATUS_SUCCESS;
}

NTSTATUS HalQueryProfileSource(KPROFILE_SOURCE source, struct hal_profile_source_details *out)
{
    const struct profile_source_desc *desc = profile_source(source);
    if (desc == NULL || out == NULL)
        return STATUS_INVALID_PARAMETER;
    struct pmc_source_query q;
    query(source, &q);
    *out = (struct hal_profile_source_details){
        .source = source,
        .name = desc->name,
        .description = desc->description,
        .supported = q.supported,
        .reason = q.supported ? "" : q.reason,
        .kind = q.kind,
        .started = is_started(source),
        .users = READ_ONCE(users[source]),
        .throttled = pmc_pmi_throttled(source),
    };
    if (source == ProfileTime) {
        out->interval = READ_ONCE(profile_time_interval);
        out->default_interval = PROFILE_TIME_DEFAULT;
        out->min_interval = PROFILE_TIME_MIN;
        out->max_interval = PROFILE_TIME_MAX;
    } else if (q.supported) {
        out->interval = READ_ONCE(pmc_source_interval[source]);
        out->default_interval = MIN((uint64_t)PMC_DEFAULT_INTERVAL, q.max_interval);
        out->min_interval = PMC_MIN_INTERVAL;
        out->max_interval = q.max_interval;
    }
    return STATUS_SUCCESS;
}

// NtPmcAdmin of ProfileTime's timer row on cpu: under the mutex its starts
// take, and refused while ProfileTime runs (it runs on every CPU not
// disabled). hal/profile_time.c leaves a disabled CPU's timer slot alone; an
// enable while ProfileTime runs starts it on that CPU.
NTSTATUS hal_timer_admin(unsigned cpu, bool disable)
{
    mutex_lock(&hal_mutex);
    NTSTATUS s = STATUS_SUCCESS;
    bool was_off = pmc_row_off(cpu, pmc_row_timer());
    if (disable && users[ProfileTime])
        s = STATUS_PMC_ROW_BUSY;
    else
        pmc_row_mark(cpu, pmc_row_timer(), disable);
    if (!disable && was_off && users[ProfileTime])
        profile_time_start_cpu(cpu);
    mutex_unlock(&hal_mutex);
    return s;
}

// pmc_shutdown: every started source stops, however many users it has.
void hal_profile_stop_all(void)
{
    mutex_lock(&hal_mutex);
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        if (users[s])
            stop_everywhere((KPROFILE_SOURCE)s);
        users[s] = 0;
    }
    mutex_unlock(&hal_mutex);
}

// pmc_init and pmc_shutdown: nothing started, no user, no callback.
void hal_profile_reset(void)
{
    started = 0;
    memset(users, 0, sizeof(users));
    halp_deliver_register(NULL);
}
