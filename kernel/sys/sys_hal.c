// System calls of the profiling subsystem's HAL side: the source list,
// `pmc info` and `pmc trace`. The NT profile-object calls are in
// sys/nt_profile.c.
#include "lib/kprintf.h"
#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/heap.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/uaccess.h"

#include "pmc/hal/deliver.h"
#include "pmc/hal/hal.h"
#include "pmc/hal/pmu.h"
#include "pmc/hal/trace.h"
#include "pmc/hal/tunables.h"

#include "pmc/ke/profile.h"
#include "pmc/ke/sample.h"

#include "sys/syscall.h"

static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = src ? MIN(strlen(src), cap - 1) : 0;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

uint64_t do_SysProfileSources(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t n = 0, max = (uint32_t)a[1];
    for (uint32_t s = 0; s < ProfileSourceCount && n < max; s++) {
        struct hal_profile_source_details d;
        if (!profile_source_listed((KPROFILE_SOURCE)s))
            continue;
        if (!NT_SUCCESS(HalQueryProfileSource((KPROFILE_SOURCE)s, &d)))
            continue;
        struct sys_profile_source row = {
            .source = s,
            .supported = d.supported,
            .kind = (uint32_t)d.kind,
            .started = d.started,
            .users = d.users,
            .interval = d.interval,
            .default_interval = d.default_interval,
            .min_interval = d.min_interval,
            .max_interval = d.max_interval,
        };
        copy_text(row.name, sizeof row.name, d.name);
        copy_text(row.units, sizeof row.units, s == ProfileTime ? "100ns" : "events");
        copy_text(row.reason, sizeof row.reason, d.supported ? "" : d.reason);
        HAL_PROFILE_SOURCE_COUNTERS hc = {.ProfileSource = (KPROFILE_SOURCE)s};
        if (NT_SUCCESS(HalQuerySystemInformation(HalProfileSourceCounterInformation, sizeof hc, &hc,
                                                 NULL))) {
            row.gp_counters = hc.GeneralMask;
            row.fixed_counters = hc.FixedMask;
            row.constraints = hc.Constraints;
            row.gp_total = hc.GeneralCount;
            row.fixed_total = hc.FixedCount;
        }
        NTSTATUS st = copy_to_user(a[0] + n * sizeof row, &row, sizeof row);
        if (!NT_SUCCESS(st))
            return STATUS(st);
        n++;
    }
    return STATUS(copy_to_user(a[2], &n, sizeof n));
}

// Text output into a user buffer: *got is what was written, and the status is
// STATUS_BUFFER_TOO_SMALL when the text did not fit.
static NTSTATUS text_out(const char *text, size_t len, uint64_t ubuf, uint64_t ulen, uint64_t ugot)
{
    size_t n = MIN(len, ulen);
    NTSTATUS s = copy_to_user(ubuf, text, n);
    if (NT_SUCCESS(s))
        s = copy_to_user(ugot, &n, sizeof n);
    if (NT_SUCCESS(s) && n < len)
        s = STATUS_BUFFER_TOO_SMALL;
    return s;
}

uint64_t do_SysPmcInfo(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    size_t cap = 16384;
    char *buf = kmalloc(cap);
    if (!buf)
        return STATUS(STATUS_NO_MEMORY);
    int len = pmc_info(buf, cap);
    NTSTATUS s = text_out(buf, MIN((size_t)len, cap - 1), a[0], a[1], a[2]);
    kfree(buf);
    return STATUS(s);
}

// `pmc trace`'s sample filter. Each process a sample interrupts is noted once
// (pid, parent) and named in the trace by a PMCLOG_MAP record (the name
// outlives the process, for the decoder); with a root pid set, only samples
// of the root and its descendants are kept, so a trace shows the command it
// ran and not the idle CPUs. Runs in interrupt context: no locks; a slot is
// claimed with an atomic add, and a duplicate from two CPUs at once is harmless.
#define TRACE_PIDS 64
static struct trace_pid {
    uint32_t pid, parent;
} trace_pids[TRACE_PIDS];
static uint32_t trace_npids, trace_root;

static const struct trace_pid *trace_pid_find(uint32_t pid)
{
    uint32_t n = MIN(READ_ONCE(trace_npids), TRACE_PIDS);
    for (uint32_t i = 0; i < n; i++)
        if (READ_ONCE(trace_pids[i].pid) == pid)
            return &trace_pids[i];
    return NULL;
}

static bool trace_descends(uint32_t pid, uint32_t parent)
{
    for (int depth = 0; depth < 8; depth++) {
        if (pid == trace_root || parent == trace_root)
            return true;
        const struct trace_pid *t = trace_pid_find(parent);
        if (!t)
            return false;
        pid = t->pid;
        parent = t->parent;
    }
    return false;
}

static bool trace_filter(struct pmclog_trace *r)
{
    struct thread *t = cpus[r->h.cpu].current;
    struct process *pr = t ? t->proc : NULL;
    r->pid = pr ? pr->pid : 0;
    if (ke_profile_scope_started(pr, (KPROFILE_SOURCE)r->source))
        r->flags |= PMC_TRACE_PROFILED;
    if (pr && !trace_pid_find(pr->pid)) {
        uint32_t i = __atomic_fetch_add(&trace_npids, 1, __ATOMIC_RELAXED);
        if (i < TRACE_PIDS) { // past that, samples of new processes go unnamed
            trace_pids[i].parent = pr->parent;
            __atomic_store_n(&trace_pids[i].pid, pr->pid, __ATOMIC_RELEASE);
            struct pmclog_map m = {.h.type = PMCLOG_MAP, .pid = pr->pid, .parent = pr->parent};
            memcpy(m.name, pr->name, MIN(sizeof pr->name, sizeof m.name - 1));
            pmc_trace_write_irqoff(&m.h, sizeof m);
        }
    }
    uint32_t root = READ_ONCE(trace_root);
    return root == 0 || (pr && trace_descends(pr->pid, pr->parent));
}

static void trace_pids_clear(void)
{
    WRITE_ONCE(trace_npids, 0);
    memset(trace_pids, 0, sizeof trace_pids);
}

// PMC_TRACE_READ drains like NtPmcReadLog: whole records, consumed, each
// CPU's ring oldest first; STATUS_BUFFER_TOO_SMALL only when not even one
// record fits.
uint64_t do_SysPmcTrace(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (!process_current()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    switch (a[0]) {
    case PMC_TRACE_ON: {
        WRITE_ONCE(pmc_trace_sample_filter, trace_filter);
        NTSTATUS s = pmc_trace_enable();
        sample_plans_drop(); // plans made from now on take the bucket trace (ke/sample.c)
        return STATUS(s);
    }
    case PMC_TRACE_OFF:
        pmc_trace_disable();
        sample_plans_drop(); // and from now on they do not
        return STATUS(STATUS_SUCCESS);
    case PMC_TRACE_CLEAR:
        pmc_trace_clear();
        trace_pids_clear();
        return STATUS(STATUS_SUCCESS);
    case PMC_TRACE_FILTER: WRITE_ONCE(trace_root, (uint32_t)a[1]); return STATUS(STATUS_SUCCESS);
    case PMC_TRACE_READ: break;
    default: return STATUS(STATUS_INVALID_PARAMETER);
    }
    struct ring_sink out = {.copy = user_sink_copy, .ctx = (void *)(uintptr_t)a[1], .len = a[2]};
    NTSTATUS s = user_buffer_check(a[1], a[2]); // the whole buffer once, not each record
    if (NT_SUCCESS(s))
        s = pmc_trace_drain(&out);
    if (NT_SUCCESS(s) && out.full && out.pos == 0)
        s = STATUS_BUFFER_TOO_SMALL;
    uint64_t got = out.pos;
    NTSTATUS s2 = copy_to_user(a[3], &got, sizeof got);
    return STATUS(NT_SUCCESS(s) ? s2 : s);
}
