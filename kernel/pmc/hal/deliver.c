// Where every sample leaves the HAL (hal/deliver.h). The choice between the
// registered handler and the traced wrapper is made when either changes,
// under a lock, so that a choice made from one change's state never lands
// after the next change's.
#include "pmc/hal/deliver.h"

#include "core/spinlock.h"

#include "pmc/hal/trace.h"

// The handler while none is registered: samples go nowhere.
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

static void choose(void)
{
    static struct spinlock lock = SPINLOCK_INIT("hal deliver");
    uint64_t flags = spin_lock_irqsave(&lock);
    __atomic_store_n(&halp_deliver,
                     READ_ONCE(pmc_trace_on) ? deliver_traced : READ_ONCE(registered),
                     __ATOMIC_RELEASE);
    spin_unlock_irqrestore(&lock, flags);
}

void halp_deliver_register(HAL_PROFILE_INTERRUPT_HANDLER h)
{
    __atomic_store_n(&registered, h ? h : no_handler, __ATOMIC_RELEASE);
    choose();
}

NTSTATUS pmc_trace_enable(void)
{
    NTSTATUS s = pmc_trace_rings_alloc();
    if (!NT_SUCCESS(s))
        return s;
    WRITE_ONCE(pmc_trace_on, true);
    choose();
    return STATUS_SUCCESS;
}

void pmc_trace_disable(void)
{
    WRITE_ONCE(pmc_trace_on, false);
    choose();
}
