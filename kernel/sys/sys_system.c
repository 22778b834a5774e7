// System calls about the machine: time, counters, CPUs, the ramdisk, power.
#include "lib/cmdline.h"
#include "lib/kprintf.h"
#include "lib/ksym.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "arch/x86/power.h"
#include "arch/x86/timer.h"

#include "core/grace.h"
#include "core/heap.h"
#include "core/irqoff.h"
#include "core/object.h"
#include "core/pin.h"
#include "core/pmm.h"
#include "core/process.h"
#include "core/ramdisk.h"
#include "core/smp.h"
#include "core/sysmap.h"
#include "core/uaccess.h"

#include "pmc/hal/detect.h"

#include "sys/syscall.h"

uint64_t do_SysClock(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct sys_clock c = {clock_ns(), rdtsc(), tsc_hz};
    return STATUS(copy_to_user(a[0], &c, sizeof c));
}

uint64_t do_SysInfo(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    struct sys_info i = {
        .ncpus = ncpus_online,
        .nprocesses = (uint32_t)process_live_count(),
        .free_pages = pmm_free_count(),
        .total_pages = pmm_usable_count(),
        .heap_bytes = heap_bytes_in_use(),
        .uptime_ns = clock_ns(),
        .tsc_hz = tsc_hz,
        .time_sampling_approximate =
            strcmp(pmc_caps.hypervisor_id, "TCGTCGTCGTCG") == 0 && !cmdline_has("icount"),
    };
    return STATUS(copy_to_user(a[0], &i, sizeof i));
}

uint64_t do_SysCpuInfo(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t n = MIN((uint32_t)a[1], ncpus);
    for (uint32_t i = 0; i < n; i++) {
        struct cpu *c = &cpus[i];
        struct thread *t = READ_ONCE(c->current);
        struct process *p = t ? READ_ONCE(t->proc) : NULL;
        struct sys_cpu_info info = {
            .id = c->id,
            .apic_id = c->apic_id,
            .online = c->online,
            .current_pid = p ? p->pid : 0,
            .ticks = c->ticks,
            .idle_ns = c->idle_ns,
            .busy_ns = c->busy_ns,
            .calls_sent = smp_calls_sent(i),
        };
        timer_periodic_stats(i, TIMER_SLOT_PROFILE, &info.profile_ticks,
                             &info.profile_ticks_skipped);
        NTSTATUS s = copy_to_user(a[0] + i * sizeof info, &info, sizeof info);
        if (!NT_SUCCESS(s))
            return STATUS(s);
    }
    return STATUS(copy_to_user(a[2], &n, sizeof n));
}

uint64_t do_SysPowerOff(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(a);
    UNUSED(tf);
    if (!process_current()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    power_off();
    return STATUS(STATUS_NOT_SUPPORTED);
}

uint64_t do_SysFileRead(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    char name[64];
    NTSTATUS s = copy_string_from_user(name, a[0], sizeof name);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    const struct ramdisk_file *f = ramdisk_find(name);
    if (!f)
        return STATUS(STATUS_OBJECT_NAME_NOT_FOUND);
    uint64_t off = a[1];
    size_t n = off >= f->size ? 0 : MIN(a[3], f->size - off);
    s = copy_to_user(a[2], f->data + (off < f->size ? off : 0), n);
    if (NT_SUCCESS(s))
        s = copy_to_user(a[4], &n, sizeof n);
    return STATUS(s);
}

uint64_t do_SysFileList(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    size_t need = 0, len = a[1];
    for (unsigned i = 0; ramdisk_file_at(i); i++) {
        const char *name = ramdisk_file_at(i)->name;
        size_t n = strlen(name);
        if (need + n + 1 <= len) {
            NTSTATUS s = copy_to_user(a[0] + need, name, n);
            if (NT_SUCCESS(s))
                s = copy_to_user(a[0] + need + n, "\n", 1);
            if (!NT_SUCCESS(s))
                return STATUS(s);
        }
        need += n + 1;
    }
    NTSTATUS s = copy_to_user(a[2], &need, sizeof need);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    return STATUS(need <= len ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL);
}

uint64_t do_SysSelfCheck(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    // What waits for a grace period or a TLB purge is freed first: memory
    // that is only late must not read as a leak.
    grace_flush();
    sysmap_purge();
    struct sys_self_check c = {
        .free_pages = pmm_free_count() + heap_empty_pages(),
        .heap_bytes = heap_bytes_in_use(),
        .live_processes = process_live_count(),
        .live_objects = object_live_count(),
        .pinned_pages = pinned_page_count(),
    };
    return STATUS(copy_to_user(a[0], &c, sizeof c));
}

// For teaching (lib/abi/syscalls.h): the two halves of irqoff.h, each for a[0]
// microseconds. The result's pages are checked before the spin, so a bad
// pointer costs no spinning.
uint64_t do_SysIrqoffSpin(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    if (a[0] < 1 || a[0] > IRQOFF_SPIN_MAX_US)
        return STATUS(STATUS_INVALID_PARAMETER);
    struct sys_irqoff_split r = {.tsc_hz = tsc_hz};
    NTSTATUS s = copy_to_user(a[1], &r, sizeof r);
    if (!NT_SUCCESS(s))
        return STATUS(s);
    uint64_t ticks = a[0] * tsc_hz / 1000000;
    r.locked_tsc = irqoff_spin_locked(ticks);
    r.open_tsc = irqoff_spin_open(ticks);
    return STATUS(copy_to_user(a[1], &r, sizeof r));
}

// "function+0xoffset (what)" for a section's site, as a backtrace names it.
static void irqoff_where(char *out, const struct irqoff_record *r)
{
    uint64_t off = 0;
    const char *fn = r->tsc ? ksym_lookup(r->site, &off) : NULL;
    if (fn)
        snprintf(out, IRQOFF_WHERE, "%s+%#lx (%s)", fn, off, r->what ? r->what : "?");
    else if (r->tsc)
        snprintf(out, IRQOFF_WHERE, "%#lx (%s)", r->site, r->what ? r->what : "?");
}

// The tracker's rows (lib/abi/syscalls.h), one per online CPU up to max.
uint64_t do_SysIrqoffLongest(const uint64_t *a, struct trapframe *tf)
{
    UNUSED(tf);
    uint32_t max = (uint32_t)a[1], flags = (uint32_t)a[3], n = 0;
    if (flags & ~(uint32_t)IRQOFF_RESET)
        return STATUS(STATUS_INVALID_PARAMETER);
    if ((flags & IRQOFF_RESET) && !process_current()->privileged)
        return STATUS(STATUS_PRIVILEGE_NOT_HELD);
    if (flags & IRQOFF_RESET)
        irqoff_reset();
    for (; n < max && n < ncpus; n++) {
        struct irqoff_record longest, excused;
        struct sys_irqoff_longest row = {0};
        irqoff_longest(n, &longest, &excused, &row.sections);
        row.tsc = longest.tsc;
        row.excused_tsc = excused.tsc;
        irqoff_where(row.where, &longest);
        irqoff_where(row.excused_where, &excused);
        if (excused.why)
            snprintf(row.why, sizeof row.why, "%s", excused.why);
        NTSTATUS s = copy_to_user(a[0] + n * sizeof row, &row, sizeof row);
        if (!NT_SUCCESS(s))
            return STATUS(s);
    }
    return STATUS(copy_to_user(a[2], &n, sizeof n));
}
