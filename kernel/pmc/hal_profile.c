// The HAL face: HalStart/StopProfileInterrupt, HalSetProfileInterval,
// Hal{Set,Query}SystemInformation and HalQueryProfileSource.
//
// ProfileTime goes to profile_time.c; every other source to the chosen
// HalpProfileInterface, run on every CPU through smp_call_all.
#include "arch/x86/percpu.h"
#include "pmc/hal.h"
#include "pmc/hal_interface.h"
#include "pmc/profile_time.h"
#include "pmc/pmi.h"
#include "pmc/trace.h"
#include "core/smp.h"
#include "core/spinlock.h"

const struct halp_profile_interface *halp_profile_interface = &nopmu_profile_interface;

// The callback while none is registered: samples go nowhere.
static void no_handler(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    UNUSED(source);
    UNUSED(f);
}
static HAL_PROFILE_INTERRUPT_HANDLER registered = no_handler;
HAL_PROFILE_INTERRUPT_HANDLER halp_deliver = no_handler;

// halp_deliver while `pmc trace` is on: the sample is recorded, then handed on.
static void deliver_traced(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    PMC_TRACE_STEP(PMC_STEP_SAMPLE, source, f->rip);
    READ_ONCE(registered)(source, f);
}

// Under a lock: a choice made from one change's state never lands after the
// next change's.
void halp_deliver_choose(void)
{
    static struct spinlock lock = SPINLOCK_INIT("hal deliver");
    uint64_t flags = spin_lock_irqsave(&lock);
    __atomic_store_n(&halp_deliver,
                     READ_ONCE(pmc_trace_on) ? deliver_traced : READ_ONCE(registered),
                     __ATOMIC_RELEASE);
    spin_unlock_irqrestore(&lock, flags);
}

static uint32_t started; // bit per source running on every CPU
static int busy;         // a start/stop is between its smp_call_all rounds
_Static_assert(ProfileSourceCount <= 32, "started is a 32-bit set");

static bool try_lock(void)
{
    return __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE) == 0;
}

static void unlock(void)
{
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

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
    NTSTATUS status[MAX_CPUS];
};

static void enable_on_cpu(void *arg)
{
    struct hal_call *call = arg;
    call->status[cpu_id()] = halp_profile_interface->EnableMonitoring(call->source);
}

static void disable_on_cpu(void *arg)
{
    struct hal_call *call = arg;
    halp_profile_interface->DisableMonitoring(call->source);
}

// Enable on every CPU, or on none: a failure anywhere undoes the others.
static NTSTATUS enable_everywhere(KPROFILE_SOURCE source, const char **reason)
{
    struct hal_call call = {.source = source};
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

NTSTATUS HalStartProfileInterrupt(KPROFILE_SOURCE source, const char **reason)
{
    struct pmc_source_query q;
    if ((unsigned)source >= ProfileSourceCount)
        return fail(reason, "unknown profile source", STATUS_INVALID_PARAMETER);
    query(source, &q);
    if (!q.supported)
        return fail(reason, q.reason, STATUS_NOT_SUPPORTED);
    if (!try_lock())
        return fail(reason, "another profile start or stop is in progress", STATUS_DEVICE_BUSY);

    NTSTATUS status;
    PMC_TRACE_STEP(PMC_STEP_START, source, 0);
    if (is_started(source)) {
        status = fail(reason, "already started", STATUS_PROFILING_NOT_STOPPED);
    } else if (source == ProfileTime) {
        profile_time_start();
        status = fail(reason, "", STATUS_SUCCESS);
    } else {
        status = enable_everywhere(source, reason);
    }
    if (NT_SUCCESS(status))
        __atomic_fetch_or(&started, 1u << source, __ATOMIC_RELEASE);
    unlock();
    return status;
}

NTSTATUS HalStopProfileInterrupt(KPROFILE_SOURCE source, const char **reason)
{
    if ((unsigned)source >= ProfileSourceCount)
        return fail(reason, "unknown profile source", STATUS_INVALID_PARAMETER);
    if (!try_lock())
        return fail(reason, "another profile start or stop is in progress", STATUS_DEVICE_BUSY);

    NTSTATUS status = fail(reason, "", STATUS_SUCCESS);
    PMC_TRACE_STEP(PMC_STEP_STOP, source, 0);
    if (!is_started(source)) {
        status = fail(reason, "not started", STATUS_PROFILING_NOT_STARTED);
    } else if (source == ProfileTime) {
        profile_time_stop();
    } else {
        struct hal_call call = {.source = source};
        smp_call_all(disable_on_cpu, &call);
    }
    if (NT_SUCCESS(status))
        __atomic_fetch_and(&started, ~(1u << source), __ATOMIC_RELEASE);
    unlock();
    return status;
}

uint64_t HalSetProfileInterval(uint64_t interval)
{
    uint64_t actual = profile_time_clamp(interval);
    WRITE_ONCE(profile_time_interval, actual);
    PMC_TRACE_STEP(PMC_STEP_SET_INTERVAL, ProfileTime, actual);
    // Reprogram a running ProfileTime; a start or stop in progress reads the
    // new interval itself or makes it moot.
    if (is_started(ProfileTime) && try_lock()) {
        if (is_started(ProfileTime))
            profile_time_start();
        unlock();
    }
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
        // Under the start/stop lock: a start reads the interval on every CPU,
        // and all of them must get the same one. (A running counter re-arms
        // from its own per-CPU copy, so the PMI needs no lock.)
        if (!try_lock())
            return STATUS_DEVICE_BUSY;
        NTSTATUS st = halp_profile_interface->SetInterval(in->ProfileSource, &in->Interval);
        unlock();
        return st;
    }
    case HalProfileSourceInterruptHandler:
        if (buffer == NULL)
            return STATUS_INVALID_PARAMETER;
        if (size != sizeof(HAL_PROFILE_INTERRUPT_HANDLER))
            return STATUS_INFO_LENGTH_MISMATCH;
        {
            HAL_PROFILE_INTERRUPT_HANDLER h = *(HAL_PROFILE_INTERRUPT_HANDLER *)buffer;
            __atomic_store_n(&registered, h ? h : no_handler, __ATOMIC_RELEASE);
            halp_deliver_choose();
            return STATUS_SUCCESS;
        }
    default: return STATUS_INVALID_INFO_CLASS;
    }
}

// An unknown or unsupported source is not an error: Supported = false, Interval 0.
NTSTATUS HalQuerySystemInformation(HAL_QUERY_INFORMATION_CLASS cls, uint32_t size, void *buffer,
                                   uint32_t *returned)
{
    HAL_PROFILE_SOURCE_INFORMATION *info = buffer;
    if (returned)
        *returned = 0;
    if (cls != HalProfileSourceInformation)
        return STATUS_INVALID_INFO_CLASS;
    if (info == NULL)
        return STATUS_INVALID_PARAMETER;
    if (size < sizeof(*info)) {
        if (returned)
            *returned = sizeof(*info);
        return STATUS_INFO_LENGTH_MISMATCH;
    }
    struct hal_profile_source_details d;
    if (NT_SUCCESS(HalQueryProfileSource(info->ProfileSource, &d)) && d.supported) {
        info->Supported = true;
        info->Interval = d.interval > UINT32_MAX ? UINT32_MAX : (uint32_t)d.interval;
    } else {
        info->Supported = false;
        info->Interval = 0;
    }
    if (returned)
        *returned = sizeof(*info);
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

// pmc_init and pmc_shutdown: nothing started, no callback.
void hal_profile_reset(void)
{
    started = 0;
    busy = 0;
    registered = no_handler;
    halp_deliver_choose();
}
