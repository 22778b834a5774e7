// Boot self-tests (test=boot) and deliberate failures (test=fault, test=panic)
// that the QEMU test runner uses to prove the panic path works.
#include "test/selftest.h"

#include "lib/kprintf.h"
#include "lib/panic.h"
#include "lib/param.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/qemu.h"
#include "arch/x86/timer.h"
#include "arch/x86/vectors.h"

#include "core/heap.h"
#include "core/pmm.h"
#include "core/process.h"
#include "core/smp.h"
#include "core/spinlock.h"

static unsigned test_number, test_failures;

void check(bool ok, const char *name)
{
    test_number++;
    if (!ok)
        test_failures++;
    kprintf("%sok %u %s\n", ok ? "" : "not ", test_number, name);
}

void sleep_ms(uint64_t ms)
{
    uint64_t end = clock_ns() + ms * 1000000;
    while (clock_ns() < end)
        hlt(); // the scheduler tick wakes us at least every 10 ms
}

// --- cross-CPU calls and locks ---
static volatile uint64_t seen_mask;
static void mark_cpu(void *arg)
{
    UNUSED(arg);
    __atomic_fetch_or(&seen_mask, 1ull << cpu_id(), __ATOMIC_SEQ_CST);
}

static struct spinlock counter_lock = SPINLOCK_INIT("selftest counter");
static uint64_t counter;
static void hammer_lock(void *arg)
{
    uint64_t n = (uint64_t)arg;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t f = spin_lock_irqsave(&counter_lock);
        uint64_t v = counter; // a non-atomic read-modify-write: only the lock keeps it exact
        cpu_relax();
        counter = v + 1;
        spin_unlock_irqrestore(&counter_lock, f);
    }
}

static volatile unsigned ipi_hits[MAX_CPUS];
static void test_ipi_handler(struct trapframe *tf)
{
    UNUSED(tf);
    ipi_hits[cpu_id()]++;
}

// --- timers ---
// What one CPU's 1 ms test slot saw, in TSC ticks (test_timer_multiplex):
// rdtsc() just before and just after its start; in its user's first, next to
// last and last call (after stands in for a call not made); the scheduler
// slot's expiries at the first and the last call; the test slot's own when
// stopped.
static struct slot_seen {
    uint64_t before, after, first, prev, last;
    uint64_t sched_first, sched_last, calls, count;
} slot_seen[MAX_CPUS];

static void test_tick(const struct intr_frame *f, void *arg)
{
    UNUSED(f);
    UNUSED(arg);
    struct slot_seen *s = &slot_seen[cpu_id()];
    uint64_t now = rdtsc(), sched = timer_periodic_count(TIMER_SLOT_SCHED);
    if (s->calls == 0) {
        s->first = now;
        s->sched_first = sched;
    }
    s->prev = s->last;
    s->last = now;
    s->sched_last = sched;
    WRITE_ONCE(s->calls, s->calls + 1);
}
static void start_test_timer(void *arg)
{
    struct slot_seen *s = &slot_seen[cpu_id()];
    *s = (struct slot_seen){.before = rdtsc()};
    timer_periodic_start(TIMER_SLOT_TEST, (uint64_t)arg, test_tick, NULL);
    s->after = s->first = s->prev = s->last = rdtsc();
}
static void stop_test_timer(void *arg)
{
    UNUSED(arg);
    slot_seen[cpu_id()].count = timer_periodic_count(TIMER_SLOT_TEST);
    timer_periodic_stop(TIMER_SLOT_TEST);
}

static bool test_pmm(void)
{
    size_t before = pmm_free_count();
    uint64_t one = pmm_alloc_page();
    uint64_t run = pmm_alloc_pages(64);
    bool ok = one && run && (one & 0xFFF) == 0 && (run & 0xFFF) == 0 &&
              pmm_free_count() == before - 65 && (one < run || one >= run + 64 * PAGE_SIZE);
    if (run)
        pmm_free_pages(run, 64);
    if (one)
        pmm_free_page(one);
    return ok && pmm_free_count() == before;
}

static bool test_heap(void)
{
    size_t bytes = heap_bytes_in_use(), pages = pmm_free_count();
    void *p[200];
    bool ok = true;
    for (int i = 0; i < 200; i++) {
        size_t size = (size_t)(i * 37 % 5000) + 1;
        p[i] = kmalloc(size);
        ok &= p[i] != NULL && ((uintptr_t)p[i] & 15) == 0;
        if (p[i])
            memset(p[i], i, size);
    }
    for (int i = 0; i < 200; i++) {
        size_t size = (size_t)(i * 37 % 5000) + 1;
        ok &= p[i] && ((uint8_t *)p[i])[size - 1] == (uint8_t)i;
    }
    for (int i = 0; i < 200; i++)
        kfree(p[i]);
    ok &= heap_bytes_in_use() == bytes;
    // Slabs may keep one page per size class; allow for them, not for leaks.
    ok &= pmm_free_count() + 8 >= pages;
    return ok;
}

// Each CPU's scheduler tick runs: two ticks on every CPU (the second from a
// timer re-armed in its own interrupt), waited for up to 10 s. How many ticks
// fit in a time is test_timer_multiplex's check: a virtual CPU the host does
// not run for a while takes fewer, and counts the periods it missed.
static bool test_ticking(void)
{
    uint64_t before[MAX_CPUS];
    for (unsigned i = 0; i < ncpus; i++)
        before[i] = READ_ONCE(cpus[i].ticks);
    bool ticking = false;
    unsigned ms = 0;
    for (; ms < 10000 && !ticking; ms++) {
        sleep_ms(1);
        ticking = true;
        for (unsigned i = 0; i < ncpus; i++)
            ticking &= READ_ONCE(cpus[i].ticks) - before[i] >= 2;
    }
    for (unsigned i = 0; i < ncpus; i++) {
        uint64_t d = READ_ONCE(cpus[i].ticks) - before[i];
        if (d < 2)
            kprintf("# CPU %u: %lu scheduler ticks in %u ms\n", i, d, ms);
    }
    return ticking;
}

static bool test_call_all(void)
{
    seen_mask = 0;
    smp_call_all(mark_cpu, NULL);
    return seen_mask == (ncpus == 64 ? ~0ull : (1ull << ncpus) - 1);
}

static bool test_spinlock(void)
{
    counter = 0;
    smp_call_all(hammer_lock, (void *)20000);
    return counter == 20000ull * ncpus;
}

// Up to a second for every CPU's hit count to reach want: a virtual CPU the
// host does not run takes its IPI late, but takes it.
static bool ipis_reach(unsigned first, unsigned end, unsigned want)
{
    for (unsigned ms = 0; ms < 1000; ms++) {
        bool all = true;
        for (unsigned i = first; i < end; i++)
            all &= ipi_hits[i] >= want;
        if (all)
            break;
        sleep_ms(1);
    }
    bool exact = true;
    for (unsigned i = first; i < end; i++)
        exact &= ipi_hits[i] == want;
    return exact;
}

// One IPI at a time (two pending IPIs of one vector coalesce into one), then
// one to all: each CPU's count goes to 1, then to 2, never further.
static bool test_ipis(void)
{
    irq_register(VEC_RESCHED, test_ipi_handler);
    memset((void *)ipi_hits, 0, sizeof ipi_hits);
    bool ipis = true;
    for (unsigned i = 0; i < ncpus; i++) {
        lapic_send_ipi(cpus[i].apic_id, VEC_RESCHED);
        ipis &= ipis_reach(i, i + 1, 1);
    }
    lapic_send_ipi_shorthand(IPI_ALL, VEC_RESCHED);
    ipis &= ipis_reach(0, ncpus, 2);
    sleep_ms(5);
    for (unsigned i = 0; i < ncpus; i++)
        ipis &= ipi_hits[i] == 2; // and no third
    irq_register(VEC_RESCHED, NULL);
    return ipis;
}

static bool test_clock(void)
{
    uint64_t a = clock_ns();
    sleep_ms(50);
    uint64_t b = clock_ns();
    return b > a && b - a >= 50000000 && b - a < 500000000;
}

// The expiries each slot may have had, whatever the host did. timer.c moves
// a slot's deadline by whole periods P from origin, the TSC it read in
// timer_periodic_start, only in an interrupt whose TSC reading now has passed
// it, and then past now: after that interrupt the slot has had exactly
// floor((now - origin) / P) expiries, the missed ones included (timer.h).
// Where the stamps are taken, before <= origin <= after (interrupts are off
// around the start), and each call's interrupt read now with prev < now <=
// last: the user is called after that reading, and the previous call (or the
// start) ended before this interrupt came in. So the test slot's count, which
// no interrupt moves after its last call, is bounded by
//     floor((prev - after) / P) <= count <= floor((last - before) / P),
// and the scheduler slot's expiries between the first and the last call, as
// floor(x / P) - floor(y / P) is floor((x - y) / P) or one more, by
//     floor((prev - first) / Ps) <= sched_last - sched_first
//                                <= floor((last - after) / Ps) + 1.
// A virtual CPU the host leaves unrun, even between a TSC reading and the
// user's call, only widens these windows: no slack is needed for a slow
// host, and an expiry outside them is a timer bug (an expiry before its
// time, or a period lost). A span of clock_ns stamps alone bounds the count
// only from above, never from below with a fixed slack: the host may stall a
// virtual CPU for any time between the interrupt's reading and the user's
// stamp (the re-arm's and the EOI's LAPIC writes lie there, which QEMU's TCG
// makes under its global lock).
static bool slot_within(unsigned cpu, uint64_t p, uint64_t ps, bool report)
{
    const struct slot_seen *s = &slot_seen[cpu];
    uint64_t lo = (s->prev - s->after) / p, hi = (s->last - s->before) / p;
    uint64_t sched = s->sched_last - s->sched_first;
    uint64_t slo = s->calls > 1 ? (s->prev - s->first) / ps : 0;
    uint64_t shi = (s->last - s->after) / ps + 1;
    bool ok = lo <= s->count && s->count <= hi && slo <= sched && sched <= shi;
    if (!ok || report)
        kprintf("# CPU %u: 1 ms slot %lu expiries (%lu to %lu fit), 10 ms slot %lu (%lu to %lu), "
                "%lu calls\n",
                cpu, s->count, lo, hi, sched, slo, shi, s->calls);
    return ok;
}

static bool slots_called(void)
{
    for (unsigned i = 0; i < ncpus; i++)
        if (READ_ONCE(slot_seen[i].calls) == 0)
            return false;
    return true;
}

// A 1 ms user next to the 10 ms scheduler tick: each keeps its own period on
// every CPU. Each CPU's slot must have been called once at least (waited for
// up to 10 s after the 200 ms), so that every CPU has a window to judge.
static bool test_timer_multiplex(void)
{
    smp_call_all(start_test_timer, (void *)1000000);
    sleep_ms(200);
    for (unsigned ms = 0; ms < 10000 && !slots_called(); ms++)
        sleep_ms(1);
    smp_call_all(stop_test_timer, NULL);
    // The periods in TSC ticks, as timer_periodic_start computes them.
    uint64_t p = MAX(ns_to_tsc(1000000), 1ull);
    uint64_t ps = MAX(ns_to_tsc(1000000000ull / SCHED_TICK_HZ), 1ull);
    bool ok = slots_called();
    for (unsigned i = 0; i < ncpus; i++)
        ok &= slot_within(i, p, ps, i == 0);
    return ok;
}

// --- process exit ---
// PROCESS_EXITED as process.h says: in a thread that may sleep and belongs to
// no process (the reaper), interrupts on, the process's thread gone, exited
// not yet set.
static volatile uint32_t exit_watch_pid;
static volatile int exit_watch_seen; // 1: told as said, -1: otherwise
static void exit_watcher(struct process *p, enum process_event event)
{
    if (event != PROCESS_EXITED || p->pid != exit_watch_pid)
        return;
    bool as_said = irq_enabled() && !process_current() && current_thread() != this_cpu()->idle &&
                   !p->thread && !p->exited;
    exit_watch_seen = as_said ? 1 : -1;
}

// A process exits while a watcher looks. This code is CPU 0's idle thread:
// it lets the scheduler run the process and the reaper (with one CPU, nothing
// else would), for up to 10 s.
static bool test_exit_watchers(void)
{
    process_watch(exit_watcher);
    const char *argv[] = {"spin", "0"};
    struct process *p;
    if (!NT_SUCCESS(process_spawn("spin", argv, 2, SPAWN_SUSPENDED, 0, false, &p)))
        return false;
    exit_watch_pid = p->pid;
    process_resume(p);
    for (unsigned ms = 0; ms < 10000 && !READ_ONCE(p->exited); ms++) {
        uint64_t f = irq_save();
        schedule();
        irq_restore(f);
        sleep_ms(1);
    }
    bool ok = p->exited && p->exit_status == 0 && exit_watch_seen == 1;
    if (!ok)
        kprintf("# exited %d, status %d, watcher %d\n", p->exited, p->exit_status, exit_watch_seen);
    object_unref(&p->obj);
    return ok;
}

// object.h's rule for finders: a process whose count has reached zero on
// another CPU, its destroy not yet past the process list's lock, must not be
// handed out by a lookup (it would be destroyed twice). The state that window
// leaves is made here on one CPU: a suspended process, its count set to zero
// for the lookup, then given back (the process stays suspended; the machine
// stops after the self-tests).
static bool test_lookup_skips_dying(void)
{
    const char *argv[] = {"spin", "1"};
    struct process *p;
    if (!NT_SUCCESS(process_spawn("spin", argv, 2, SPAWN_SUSPENDED, 0, false, &p)))
        return false;
    uint32_t held = __atomic_exchange_n(&p->obj.refs, 0, __ATOMIC_SEQ_CST);
    struct process *dying = process_by_pid(p->pid);
    __atomic_store_n(&p->obj.refs, held, __ATOMIC_SEQ_CST); // whatever the lookup did
    struct process *alive = process_by_pid(p->pid);
    if (alive)
        object_unref(&alive->obj);
    return dying == NULL && alive == p;
}

// The APIC mode the boot CPU chose (x2APIC when CPUID offers it and the
// command line does not say nox2apic), as every CPU's IA32_APIC_BASE has it:
// enabled, and EXTD set exactly in x2APIC mode. The test's name says which
// mode, so a run's log shows what its QEMU and -cpu gave (tests/run checks it).
static volatile uint64_t apic_mode_ok;
static void check_apic_mode(void *arg)
{
    UNUSED(arg);
    uint64_t base = rdmsr(MSR_IA32_APIC_BASE);
    bool x2 = (base & APIC_BASE_X2APIC) != 0;
    if ((base & APIC_BASE_ENABLE) && x2 == lapic_x2apic())
        __atomic_fetch_or(&apic_mode_ok, 1ull << cpu_id(), __ATOMIC_SEQ_CST);
}

static bool test_apic_mode(void)
{
    apic_mode_ok = 0;
    smp_call_all(check_apic_mode, NULL);
    return apic_mode_ok == (ncpus == 64 ? ~0ull : (1ull << ncpus) - 1);
}

static void selftest_boot(void)
{
    kprintf("KTAP version 1\n1..12\n");
    check(ncpus_online == ncpus, "every processor in the MADT is online");
    check(test_ticking(), "every CPU's timer ticks");
    check(test_call_all(), "smp_call_all runs on every CPU");
    check(test_spinlock(), "spinlock keeps a shared counter exact under contention");
    check(test_ipis(), "IPIs to one CPU and to all CPUs arrive");
    check(test_clock(), "monotonic clock advances");
    check(test_timer_multiplex(), "periodic timers multiplex on one LAPIC timer");
    check(test_pmm(), "page allocator: allocate, free, counters exact");
    check(test_heap(), "heap: sizes 1..5000, aligned, contents kept, bytes back to baseline");
    check(test_exit_watchers(),
          "a process's exit is told to watchers in the reaper, interrupts on");
    check(test_lookup_skips_dying(), "a process lookup never revives a process being destroyed");
    check(test_apic_mode(), lapic_x2apic() ? "APIC mode: x2APIC (registers by MSR) on every CPU"
                                           : "APIC mode: xAPIC (registers by MMIO) on every CPU");
}

// Two real frames (no inlining, no tail calls) so the backtrace has something to show.
__attribute__((noinline)) int selftest_fault_deep(volatile int *p)
{
    int v = *p; // the deliberate page fault
    __asm__ volatile("" ::: "memory");
    return v;
}

__attribute__((noinline)) int selftest_fault(void)
{
    int v = selftest_fault_deep((volatile int *)0xdead0000ull);
    __asm__ volatile("" ::: "memory");
    return v + 1;
}

static void selftest_probe(void)
{
    kprintf("probe: booted\n"); // scripts/accel.sh: this accelerator runs the kernel
}

static void selftest_deliberate_fault(void)
{
    kprintf("selftest: touching an unmapped address on purpose\n");
    selftest_fault();
}

static void selftest_deliberate_panic(void)
{
    panic("selftest: deliberate panic");
}

static const struct {
    const char *name;
    void (*run)(void);
} selftests[] = {
    {"boot", selftest_boot},   // CPUs, timers, IPIs, locks, memory
    {"pmc", selftest_pmc},     // the HAL profile interface in this machine
    {"nmi", selftest_nmi},     // the NMI entry: exceptions inside, no nesting, CR2
    {"probe", selftest_probe}, // does this accelerator run us at all?
    {"fault", selftest_deliberate_fault},
    {"panic", selftest_deliberate_panic},
    {"nmipanic", selftest_panic_sampling}, // a panic while sampling (profile_nmi=1)
};

void selftest_run(const char *name)
{
    unsigned i = 0;
    while (i < ARRAY_SIZE(selftests) && strcmp(selftests[i].name, name) != 0)
        i++;
    if (i < ARRAY_SIZE(selftests)) {
        selftests[i].run();
    } else {
        kprintf("selftest: unknown test '%s'\n", name);
        test_failures = 1;
    }
    kprintf("# selftest %s: %u passed, %u failed\n", name, test_number - test_failures,
            test_failures);
    qemu_exit(test_failures ? QEMU_EXIT_FAILURE : QEMU_EXIT_SUCCESS);
}
