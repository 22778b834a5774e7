// Grace periods: freeing what an interrupt on another CPU may still be reading.
//
// The sample path (timer, PMI, NMI) reads profile sets, PMC sets and log rings
// without a lock. A writer unpublishes an object (stores a new pointer), but a
// handler that loaded the old pointer a moment earlier may still be using it.
// Interrupt handlers never sleep and never let another interrupt in, so once
// a CPU is seen outside every handler after the unpublish — in the scheduler,
// in the idle loop, or answering a cross-CPU call — it holds no old pointer.
// A grace period is the time until every CPU has been seen so; what was
// unpublished before it began may then be freed. This is the quiescent-state
// rule of Linux's RCU (Documentation/RCU/whatisRCU.rst) for a kernel without
// preemption. docs/grace-periods.md tells the whole story beside the sample path.
#pragma once
#include "lib/types.h"

// How long grace_wait waits for CPUs to pass a quiescent state of their own
// before it interrupts those that have not (their answer is one).
#define GRACE_EXPEDITE_NS 1000000ull // 1 ms: a tenth of a scheduler tick

struct grace_item {
    struct grace_item *next;
    void (*fn)(struct grace_item *item);
    uint64_t period; // the grace period after which fn may run
};

// This CPU is outside every interrupt handler: the scheduler, the idle loop
// and the cross-CPU call interrupt say so. One locked add to this CPU's
// count: the sample path's loads before it are done when it is seen (Intel
// SDM vol. 3A, 8.2.2: loads are not reordered with locked instructions).
void grace_quiescent(void);
// Whether a grace period waits for this CPU (the scheduler tick then asks
// for a pass through the scheduler, so a CPU spinning in user mode answers).
bool grace_waits_for_this_cpu(void);
// Return when every CPU has passed a quiescent state since the call began.
// Process context, interrupts on, no spinlock held.
void grace_wait(void);
// The same over the CPUs of the mask cpus only (no wait at all when it is
// empty), for a reader known to run only there: each is interrupted, and the
// answer is its quiescent state.
void grace_wait_cpus(uint64_t cpus);
// Call fn(item), in process context with interrupts on and without sleeping
// (grace_poll's callers), after a grace period that begins after this call.
// Batched: any number of items cost one grace period together. Any context
// where a spinlock may be taken.
void grace_defer(struct grace_item *item, void (*fn)(struct grace_item *item));
// Run, now, every function deferred so far (one grace period, then the
// calls): leak checks call it before they count memory.
void grace_flush(void);
// Run the deferred functions whose grace period has ended (process context,
// interrupts on): the idle loop and the end of every system call call it.
// The functions may take spinlocks and free memory, never sleep. Inline:
// with nothing deferred it is one load and a branch.
extern struct grace_item *grace_queue;
void grace_run_ready(void);
static inline void grace_poll(void)
{
    if (__builtin_expect(__atomic_load_n(&grace_queue, __ATOMIC_RELAXED) != NULL, 0))
        grace_run_ready();
}
