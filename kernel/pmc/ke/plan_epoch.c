// The replan rule's two moves of the plan epoch (ke/plan_epoch.h). Both add
// 2: the epoch is odd only inside a context switch's publishing
// (core/switch_publish.h), and adding 2 keeps that parity the switching
// CPU's own.
#include "pmc/ke/plan_epoch.h"

#include "arch/x86/percpu.h"

void sample_plans_drop(void)
{
    for (unsigned cpu = 0; cpu < ncpus; cpu++) // the CPUs that can run
        __atomic_fetch_add(&cpus[cpu].plan_epoch, 2, __ATOMIC_SEQ_CST);
}

void sample_plans_forget_here(void)
{
    __atomic_fetch_add(&this_cpu()->plan_epoch, 2, __ATOMIC_SEQ_CST);
}
