// System calls of the profiling subsystem's HAL side: the source list,
// `pmc info` and `pmc trace`. The NT profile-object calls are in
// sys/nt_profile.c.
#include "core/heap.h"
#include "lib/kprintf.h"
#include "arch/x86/percpu.h"
#include "pmc/hal.h"
#include "pmc/pmc.h"
#include "pmc/pmc_param.h"
#include "pmc/trace.h"
#include "core/process.h"
#include "profile/ke_profile.h"
#include "profile/sample_plan.h"
#include "core/sched.h"
#include "lib/string.h"
#include "sys/syscall.h"
#include "core/uaccess.h"

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
// (pid, parent, name: the name outlives the process, for the text); with a
// root pid set, only samples of the root and its descendants are kept, so a
// trace shows the command it ran and not the idle CPUs. Runs in interrupt
// context: no locks; a slot is claimed with an atomic add, and a duplicate
// from two CPUs at once is harmless.
#define TRACE_PIDS 64
static struct trace_pid {
    uint32_t pid, parent;
    char name[PROCESS_NAME_MAX];
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

static bool trace_filter(struct pmc_trace_record *r)
{
    struct thread *t = cpus[r->cpu].current;
    struct process *pr = t ? t->proc : NULL;
    r->pid = pr ? pr->pid : 0;
    if (ke_profile_scope_started(pr, (KPROFILE_SOURCE)r->source))
        r->flags |= PMC_TRACE_PROFILED;
    if (pr && !trace_pid_find(pr->pid)) {
        uint32_t i = __atomic_fetch_add(&trace_npids, 1, __ATOMIC_RELAXED);
        if (i < TRACE_PIDS) {
            trace_pids[i].parent = pr->parent;
            memcpy(trace_pids[i].name, pr->name, sizeof pr->name);
            __atomic_store_n(&trace_pids[i].pid, pr->pid, __ATOMIC_RELEASE);
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

// What a sample record says of its process: " pid 7 primes", " idle".
static int trace_sample_text(const struct pmc_trace_record *r, char *buf, size_t size)
{
    if (r->kind != PMC_TRACE_STEP || r->reg != PMC_STEP_SAMPLE)
        return 0;
    const char *prof = r->flags & PMC_TRACE_PROFILED ? " profiled" : "";
    if (r->pid == 0)
        return snprintf(buf, size, " idle%s", prof);
    const struct trace_pid *t = trace_pid_find(r->pid);
    return snprintf(buf, size, " pid %u %.*s%s", r->pid, PROCESS_NAME_MAX, t ? t->name : "?", prof);
}

// The trace as text: each CPU's ring once, oldest record first. A ring holds
// PMC_TRACE_RING records, read whole (pmc_trace_read copies, it does not
// consume: clearing is PMC_TRACE_CLEAR's job).
uint64_t do_SysPmcTrace(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (!process_current()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    switch (a[0]) {
    case PMC_TRACE_ON: {
        WRITE_ONCE(pmc_trace_sample_filter, trace_filter);
        NTSTATUS s = pmc_trace_enable();
        sample_plans_drop(); // traced samples take the general path, which traces buckets
        return STATUS(s);
    }
    case PMC_TRACE_OFF: pmc_trace_disable(); return STATUS(STATUS_SUCCESS);
    case PMC_TRACE_CLEAR:
        pmc_trace_clear();
        trace_pids_clear();
        return STATUS(STATUS_SUCCESS);
    case PMC_TRACE_FILTER: WRITE_ONCE(trace_root, (uint32_t)a[1]); return STATUS(STATUS_SUCCESS);
    case PMC_TRACE_READ: break;
    default: return STATUS(STATUS_INVALID_PARAMETER);
    }
    struct pmc_trace_record *recs = kmalloc(PMC_TRACE_RING * sizeof *recs);
    if (!recs)
        return STATUS(STATUS_NO_MEMORY);
    uint64_t pos = 0, cap = a[2];
    NTSTATUS s = STATUS_SUCCESS;
    for (unsigned cpu = 0; cpu < ncpus && NT_SUCCESS(s); cpu++) {
        size_t n = pmc_trace_read(cpu, recs, PMC_TRACE_RING);
        uint64_t dropped = pmc_trace_dropped(cpu);
        for (size_t i = 0; i < n + (dropped != 0) && NT_SUCCESS(s); i++) {
            char line[192];
            int len;
            if (i == n) { // after the ring: what it lost
                len = snprintf(line, sizeof line, "cpu%u overwritten: %lu older records", cpu,
                               (unsigned long)dropped);
            } else {
                len = snprintf(line, sizeof line, "cpu%u %8lu.%03lu us  ", cpu,
                               recs[i].time_ns / 1000, recs[i].time_ns % 1000);
                len += pmc_trace_format(&recs[i], line + len, sizeof line - (size_t)len - 1);
                len = MIN(len, (int)sizeof line - 2);
                len += trace_sample_text(&recs[i], line + len, sizeof line - (size_t)len - 1);
            }
            len = MIN(len, (int)sizeof line - 2);
            line[len++] = '\n';
            if (pos + (uint64_t)len > cap) {
                s = STATUS_BUFFER_TOO_SMALL; // what fits was written; *got says how much
                break;
            }
            s = copy_to_user(a[1] + pos, line, (size_t)len);
            pos += (uint64_t)len;
        }
    }
    kfree(recs);
    NTSTATUS s2 = copy_to_user(a[3], &pos, sizeof pos);
    return STATUS(NT_SUCCESS(s) ? s2 : s);
}
