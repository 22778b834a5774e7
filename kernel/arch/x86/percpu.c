// Per-CPU data: the array and the GS base that points each CPU at its entry.
#include "arch/x86/percpu.h"

#include "arch/x86/msr.h"

struct cpu cpus[MAX_CPUS];
unsigned ncpus = 1;
volatile unsigned ncpus_online;

void percpu_init(struct cpu *c)
{
    c->self = c;
    wrmsr(MSR_GS_BASE, (uint64_t)c);
    wrmsr(MSR_KERNEL_GS_BASE, 0); // the user's GS base, swapped in on return to ring 3
}
