// NT's per-logger PMC counters as Windows programs reach them (lib/abi/etw.h):
// NtSetSystemInformation(SystemPerformanceTraceInformation) with the counter
// list (EventTraceProfileCounterListInformation) and the event list
// (EventTraceProfileEventListInformation) of a logger, NtQuerySystemInformation
// with the source list (EventTraceProfileSourceListInformation), and
// NtPmcTraceLogger, this kernel's way to create and close a logger. The
// loggers themselves are pmc/hwpmc/loggers.c's.
#include "lib/string.h"

#include "core/heap.h"
#include "core/process.h"
#include "core/swevent.h"
#include "core/uaccess.h"

#include "pmc/hal/hal.h"
#include "pmc/hal/profile_source.h"

#include "pmc/hwpmc/loggers.h"

#include "sys/syscall.h"

#define LIST_OFFSET 16 // of ProfileSource[] and HookId[]: after the class and the TraceHandle
#define ENTRY_HEAD  24 // PROFILE_SOURCE_INFO before Description

static struct process *me(void)
{
    return process_current();
}

// Sets 0x0E and 0x0F: {class; TraceHandle; ULONG list[n]}, n from len.
static NTSTATUS set_list(uint32_t sub, uint64_t ubuf, uint64_t len)
{
    if (len < LIST_OFFSET + sizeof(uint32_t) || (len - LIST_OFFSET) % sizeof(uint32_t))
        return STATUS_INFO_LENGTH_MISMATCH;
    if (!me()->privileged)
        return STATUS_PRIVILEGE_NOT_HELD;
    uint64_t n = (len - LIST_OFFSET) / sizeof(uint32_t);
    unsigned max =
        sub == EventTraceProfileCounterListInformation ? ETW_MAX_PMC_COUNTERS : ETW_MAX_PMC_EVENTS;
    if (n > max)
        return STATUS_INVALID_PARAMETER; // too many counters or events
    struct {
        uint32_t cls, pad;
        TRACEHANDLE handle;
        uint32_t list[ETW_MAX_PMC_COUNTERS > ETW_MAX_PMC_EVENTS ? ETW_MAX_PMC_COUNTERS
                                                                : ETW_MAX_PMC_EVENTS];
    } in;
    NTSTATUS s = copy_from_user(&in, ubuf, len);
    if (!NT_SUCCESS(s))
        return s;
    if (sub == EventTraceProfileCounterListInformation)
        return pmc_logger_set_counters(me(), in.handle, in.list, (unsigned)n);
    return pmc_logger_set_hooks(me(), in.handle, in.list, (unsigned)n);
}

uint64_t do_NtSetSystemInformation(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t sub;
    if ((uint32_t)a[0] != SystemPerformanceTraceInformation)
        return STATUS(STATUS_INVALID_INFO_CLASS);
    if (a[2] < sizeof sub)
        return STATUS(STATUS_INFO_LENGTH_MISMATCH);
    NTSTATUS s = copy_from_user(&sub, a[1], sizeof sub);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (sub != EventTraceProfileCounterListInformation &&
        sub != EventTraceProfileEventListInformation)
        return STATUS(STATUS_INVALID_INFO_CLASS); // 0x0D is a query; the rest: none here
    return STATUS(set_list(sub, a[1], a[2]));
}

// One PROFILE_SOURCE_INFO at out + at (when it fits in cap): its size, 8-aligned.
static uint32_t put_entry(uint8_t *out, uint32_t at, uint32_t cap, uint32_t source,
                          const char *name, uint64_t min, uint64_t max)
{
    uint32_t len = (uint32_t)strlen(name);
    uint32_t size = (ENTRY_HEAD + 2 * (len + 1) + 7) & ~7u;
    if (at + size > cap)
        return size;
    PROFILE_SOURCE_INFO *e = (PROFILE_SOURCE_INFO *)(out + at);
    memset(e, 0, size);
    e->NextEntryOffset = size; // the last one's is cleared by the caller
    e->Source = source;
    e->MinInterval = (uint32_t)MIN(min, 0xFFFFFFFFull);
    e->MaxInterval = (uint32_t)MIN(max, 0xFFFFFFFFull);
    for (uint32_t i = 0; i <= len; i++)
        e->Description[i] = (uint16_t)(uint8_t)name[i]; // ASCII names: UTF-16 by widening
    return size;
}

// The sources a logger can count here: the software events, then each
// supported hardware source (ProfileTime is a timer, no counter). The
// chain's size; written into out when it fits in cap.
static uint32_t source_list(uint8_t *out, uint32_t cap)
{
    uint32_t at = 8, last = 0;
    for (unsigned e = 0; e < PMC_SW_COUNT; e++) {
        last = at;
        at += put_entry(out, at, cap, PMC_EVENT_SW(e), swevent_name((enum pmc_sw_event)e), 0, 0);
    }
    for (uint32_t src = 0; src < ProfileSourceCount; src++) {
        struct hal_profile_source_details d;
        if (!profile_source_listed((KPROFILE_SOURCE)src) ||
            !NT_SUCCESS(HalQueryProfileSource((KPROFILE_SOURCE)src, &d)) || !d.supported ||
            src == ProfileTime)
            continue;
        last = at;
        at += put_entry(out, at, cap, src, d.name, d.min_interval, d.max_interval);
    }
    if (at <= cap)
        ((PROFILE_SOURCE_INFO *)(out + last))->NextEntryOffset = 0;
    return at;
}

uint64_t do_NtQuerySystemInformation(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t sub, len = (uint32_t)MIN(a[2], 0xFFFFFFFFull), need = 0;
    uint64_t uret = a[3];
    if ((uint32_t)a[0] != SystemPerformanceTraceInformation)
        return STATUS(STATUS_INVALID_INFO_CLASS);
    if (len < sizeof sub)
        return STATUS(STATUS_INFO_LENGTH_MISMATCH);
    NTSTATUS s = copy_from_user(&sub, a[1], sizeof sub);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (sub != EventTraceProfileSourceListInformation)
        return STATUS(STATUS_INVALID_INFO_CLASS); // 0x0E and 0x0F are set only
    need = source_list(NULL, 0);
    uint8_t *buf = len >= need ? kzalloc(need) : NULL;
    if (len >= need && !buf)
        return STATUS(STATUS_NO_MEMORY);
    if (buf) {
        source_list(buf, need);
        memcpy(buf, &sub, sizeof sub);
        s = copy_to_user(a[1], buf, need);
        kfree(buf);
    } else {
        s = STATUS_INFO_LENGTH_MISMATCH; // ReturnLength says how much is needed
    }
    if (uret && s != STATUS_ACCESS_VIOLATION) {
        NTSTATUS r = copy_to_user(uret, &need, sizeof need);
        if (!NT_SUCCESS(r))
            s = r;
    }
    return STATUS(s);
}

// Create (*handle written) or close (*handle read) a trace logger; privileged.
uint64_t do_NtPmcTraceLogger(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t op = (uint32_t)a[0];
    TRACEHANDLE h = 0;
    if (op != PMC_LOGGER_CREATE && op != PMC_LOGGER_CLOSE)
        return STATUS(STATUS_INVALID_PARAMETER);
    if (!me()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    NTSTATUS s = op == PMC_LOGGER_CLOSE ? copy_from_user(&h, a[1], sizeof h)
                                        : probe_user_output(a[1], sizeof h);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    if (op == PMC_LOGGER_CLOSE)
        return STATUS(pmc_logger_close(me(), h));
    s = pmc_logger_create(me(), &h);
    if (NT_SUCCESS(s) && !NT_SUCCESS(s = copy_to_user(a[1], &h, sizeof h)))
        pmc_logger_close(me(), h);
    return STATUS(s);
}
