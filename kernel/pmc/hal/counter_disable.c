// DisableMonitoring for the interfaces with counters (hal/hal_interface.h):
// the one way emon and amd64 stop a source's counter.
#include "arch/x86/percpu.h"

#include "pmc/hal/counters.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/trace.h"

// ThawCounters writes the global enable (version 1 Intel: it has none, and
// nothing was re-armed outside a PMI, so it writes nothing).
void pmc_counter_disable(const struct halp_profile_interface *pi, KPROFILE_SOURCE source)
{
    unsigned cpu = cpu_id();
    int i = pmc_counter_find(cpu, source);
    if (i < 0)
        return;
    PMC_TRACE_STEP(PMC_STEP_DISABLE, source, pmc_hw[i].ctr_msr);
    pi->StopCounter((unsigned)i);
    *pmc_counter(cpu, (unsigned)i) = (struct pmc_counter_cpu){0};
    pi->ThawCounters();
    pi->AcknowledgeOverflow(1ull << pmc_hw[i].status_bit);
    pmc_counter_sampling_hook((unsigned)i, true);
}
