// Grace periods (see grace.h).
//
// Each CPU counts its quiescent states. A grace period notes every other
// online CPU's count when it begins and ends when each has moved on. One
// period at a time runs for the deferred functions: those queued while it
// runs wait for the next, so a burst of frees costs one or two periods, not
// one each. Nobody drives a period by interrupting CPUs: a CPU passes the
// scheduler or the idle loop at least once a scheduler tick (the tick asks a
// CPU spinning in user mode to pass it), and the pollers below notice. Only
// grace_wait, whose caller waits, interrupts the CPUs still missing after
// GRACE_EXPEDITE_NS.
#include "core/grace.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/irq.h"
#include "arch/x86/percpu.h"

#include "core/smp.h"
#include "core/spinlock.h"

// Each CPU's count of quiescent states, a cache line each: its own CPU adds,
// the others read.
static struct quiescent {
    uint64_t count;
} __attribute__((aligned(64))) quiescent[MAX_CPUS];

static struct spinlock grace_lock = SPINLOCK_INIT("grace");
static uint64_t started, completed; // grace periods begun and ended
static uint64_t waiting;            // CPUs the running period waits for
static uint64_t snapshot[MAX_CPUS]; // their counts when it began
struct grace_item *grace_queue;     // deferred, oldest first
static struct grace_item **tail = &grace_queue;

void grace_quiescent(void)
{
    __atomic_fetch_add(&quiescent[cpu_id()].count, 1, __ATOMIC_SEQ_CST);
}

bool grace_waits_for_this_cpu(void)
{
    return READ_ONCE(waiting) & (1ull << cpu_id());
}

// The CPUs other than the caller's that are online, and their counts now.
static uint64_t note_counts(uint64_t *counts)
{
    uint64_t mask = smp_online_mask() & ~(1ull << cpu_id());
    __atomic_thread_fence(__ATOMIC_SEQ_CST); // what was unpublished is seen first
    for (unsigned i = 0; i < ncpus; i++)
        if (mask & (1ull << i))
            counts[i] = __atomic_load_n(&quiescent[i].count, __ATOMIC_ACQUIRE);
    return mask;
}

// The CPUs of mask that have not moved on from counts.
static uint64_t still_missing(uint64_t mask, const uint64_t *counts)
{
    for (unsigned i = 0; i < ncpus; i++)
        if ((mask & (1ull << i)) &&
            __atomic_load_n(&quiescent[i].count, __ATOMIC_ACQUIRE) != counts[i])
            mask &= ~(1ull << i);
    return mask;
}

// Under grace_lock: end the running period if every CPU has moved on, and
// begin one when deferred functions wait for it. The caller is in process
// context, so it is quiescent itself.
static void advance_locked(void)
{
    if (started != completed) {
        WRITE_ONCE(waiting, still_missing(waiting, snapshot));
        if (waiting)
            return;
        WRITE_ONCE(completed, started);
    }
    if (grace_queue && grace_queue->period > completed) {
        started++;
        WRITE_ONCE(waiting, note_counts(snapshot));
        if (!waiting)
            WRITE_ONCE(completed, started);
    }
}

// Take the deferred items whose period has ended (all when every is true).
static struct grace_item *take_ready(bool every)
{
    uint64_t f = spin_lock_irqsave(&grace_lock);
    advance_locked();
    struct grace_item *ready = NULL, **end = &ready;
    while (grace_queue && (every || grace_queue->period <= completed)) {
        *end = grace_queue;
        end = &grace_queue->next;
        grace_queue = grace_queue->next;
    }
    *end = NULL;
    if (!grace_queue)
        tail = &grace_queue;
    spin_unlock_irqrestore(&grace_lock, f);
    return ready;
}

static void run_items(struct grace_item *it)
{
    while (it) {
        struct grace_item *next = it->next;
        it->fn(it);
        it = next;
    }
}

void grace_defer(struct grace_item *item, void (*fn)(struct grace_item *item))
{
    item->fn = fn;
    item->next = NULL;
    uint64_t f = spin_lock_irqsave(&grace_lock);
    item->period = started + 1; // a period that begins after the unpublish
    *tail = item;
    tail = &item->next;
    spin_unlock_irqrestore(&grace_lock, f);
}

void grace_run_ready(void)
{
    grace_quiescent(); // the caller is in process context
    run_items(take_ready(false));
}

static void nothing(void *arg)
{
    UNUSED(arg); // answering is the quiescent state (call_ipi counts it)
}

void grace_wait(void)
{
    uint64_t counts[MAX_CPUS];
    uint64_t missing = note_counts(counts);
    uint64_t deadline = clock_ns() + GRACE_EXPEDITE_NS;
    while ((missing = still_missing(missing, counts)) && clock_ns() < deadline)
        cpu_relax();
    if (missing)
        smp_call_many(missing, nothing, NULL);
}

void grace_wait_cpus(uint64_t cpus)
{
    smp_call_many(cpus, nothing, NULL);
}

void grace_flush(void)
{
    struct grace_item *all = take_ready(true);
    grace_wait();
    run_items(all);
}
