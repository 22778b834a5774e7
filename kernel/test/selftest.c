// Boot self-tests (test=boot) and deliberate failures (test=fault, test=panic)
// that the QEMU test runner uses to prove the panic path works.
#include "test/selftest.h"

#include "lib/kprintf.h"
#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
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
// Each CPU's 1 ms slot: its expiries when stopped, and when it started and
// last ran there. A virtual CPU the host did not run for a while catches the
// periods up at its next interrupt; one stalled at the end has expiries only
// up to its last interrupt, so each CPU is judged against its own span.
static uint64_t test_slot_counts[MAX_CPUS], test_slot_start[MAX_CPUS], test_slot_last[MAX_CPUS];
static void test_tick(const struct intr_frame *f, void *arg)
{
    UNUSED(f);
    UNUSED(arg);
    test_slot_last[cpu_id()] = clock_ns();
}
static void start_test_timer(void *arg)
{
    test_slot_start[cpu_id()] = test_slot_last[cpu_id()] = clock_ns();
    timer_periodic_start(TIMER_SLOT_TEST, (uint64_t)arg, test_tick, NULL);
}
static void stop_test_timer(void *arg)
{
    UNUSED(arg);
    test_slot_counts[cpu_id()] = timer_periodic_count(TIMER_SLOT_TEST);
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

// Each CPU's scheduler tick runs: at least 5 ticks of 10 ms in 100 ms.
static bool test_ticking(void)
{
    uint64_t before[MAX_CPUS];
    for (unsigned i = 0; i < ncpus; i++)
        before[i] = READ_ONCE(cpus[i].ticks);
    sleep_ms(100);
    bool ticking = true;
    for (unsigned i = 0; i < ncpus; i++) {
        uint64_t d = READ_ONCE(cpus[i].ticks) - before[i];
        if (d < 5) {
            kprintf("# CPU %u: %lu scheduler ticks in 100 ms\n", i, d);
            ticking = false;
        }
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

// A 1 ms user next to the 10 ms scheduler tick: each keeps its own period.
static bool test_timer_multiplex(void)
{
    smp_call_all(start_test_timer, (void *)1000000);
    uint64_t t0 = clock_ns();
    uint64_t ticks0 = READ_ONCE(cpus[0].ticks);
    sleep_ms(200);
    smp_call_all(stop_test_timer, NULL);
    uint64_t elapsed = clock_ns() - t0, sched = READ_ONCE(cpus[0].ticks) - ticks0;
    bool mux = true;
    for (unsigned i = 0; i < ncpus; i++) {
        uint64_t expect = (test_slot_last[i] - test_slot_start[i]) / 1000000;
        if (test_slot_counts[i] + 20 < expect || test_slot_counts[i] > expect + 20) {
            kprintf("# CPU %u: %lu ticks of 1 ms in %lu us\n", i, test_slot_counts[i],
                    elapsed / 1000);
            mux = false;
        }
    }
    kprintf("# 1 ms timer: %lu ticks on CPU 0 in %lu us; scheduler ticks %lu\n",
            test_slot_counts[0], elapsed / 1000, sched);
    return mux && sched >= 10 && sched <= 40;
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

static void selftest_boot(void)
{
    kprintf("KTAP version 1\n1..10\n");
    check(ncpus_online == ncpus, "every processor in the MADT is online");
    check(test_ticking(), "every CPU's timer ticks");
    check(test_call_all(), "smp_call_all runs on every CPU");
    check(test_spinlock(), "spinlock keeps a shared counter exact under contention");
    check(test_ipis(), "IPIs to one CPU and to all CPUs arrive");
    check(test_clock(), "monotonic clock advances");
    check(test_timer_multiplex(), "periodic timers multiplex on one LAPIC timer");
    check(test_pmm(), "page allocator: allocate, free, counters exact");
    check(test_heap(), "heap: sizes 1..5000, aligned, contents kept, bytes back to baseline");
    check(test_lookup_skips_dying(), "a process lookup never revives a process being destroyed");
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
