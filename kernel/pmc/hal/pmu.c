// pmc_init and pmc_shutdown: bring the profile interface up and down.
#include "pmc/hal/pmu.h"

#include "lib/kprintf.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trap.h"
#include "arch/x86/vectors.h"

#include "core/smp.h"

#include "pmc/hal/deliver.h"
#include "pmc/hal/counts.h"
#include "pmc/hal/detect.h"
#include "pmc/hal/hal.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/nopmu.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/pmu_regs.h"
#include "pmc/hal/profile_time.h"
#include "pmc/hal/trace.h"

static void initialize_on_cpu(void *arg)
{
    UNUSED(arg);
    halp_profile_interface->InitializeProfiling();
}

void pmc_init(void)
{
    WRITE_ONCE(halp_profile_interface, &nopmu_profile_interface);
    hal_profile_reset();
    pmc_count_reset();
    pmc_counters_reset();
    pmc_pmi_reset();

    pmc_detect(&pmc_caps);
    const struct halp_profile_interface *pi = pmc_caps.choice;
    pi->Setup(&pmc_caps);
    if (pi != &nopmu_profile_interface && !pmc_counters_alloc()) {
        // As in the Windows HAL's Emon interface, without the per-processor counter
        // memory every PMC source is unsupported.
        size_t bytes = pmc_counters_bytes();
        snprintf(pmc_caps.reason, sizeof(pmc_caps.reason),
                 "%s counter state allocation failed (%zu bytes)", pi->name, bytes);
        snprintf(nopmu_reason, sizeof(nopmu_reason), "counter state allocation failed");
        pmc_count_reset();
        pmc_counters_reset();
        pi = pmc_caps.choice = &nopmu_profile_interface;
    }

    profile_time_interval = PROFILE_TIME_DEFAULT;
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        uint64_t interval = PMC_DEFAULT_INTERVAL;
        pmc_source_interval[s] = 0;
        if (s != ProfileTime)
            pi->SetInterval((KPROFILE_SOURCE)s, &interval);
    }
    WRITE_ONCE(halp_profile_interface, pi);
    PMC_TRACE_STEP(PMC_STEP_INIT, PMC_TRACE_NO_SOURCE, ncpus);
    smp_call_all(initialize_on_cpu, NULL);
    pmc_count_go_live();
    WRITE_ONCE(trap_user_gp_hook, pmc_count_rdpmc_gp); // ring-3 rdpmc while CR4.PCE is off

    char line[256];
    pmc_boot_line(line, sizeof(line));
    kprintf("%s\n", line);
}

// Every CPU: no further PMI from the LVTPC, no counter left counting. Runs
// after the interface was switched to nopmu, so any PMI still latched in the
// LAPIC is taken as spurious without touching the counter state.
static void quiesce_on_cpu(void *arg)
{
    const struct halp_profile_interface *pi = arg;
    pmc_lapic_write(LAPIC_LVT_PMC, VEC_PMI | LVT_MASKED);
    if (pi->StopCounter == NULL)
        return;
    pi->FreezeCounters();
    unsigned cpu = cpu_id();
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (pmc_counter(cpu, i)->period)
            pi->StopCounter(i);
    write_cr4(read_cr4() & ~CR4_PCE); // no count is left for ring 3 to read
}

// Every CPU, while the interface is still the live one: save and unload the
// counts (the counting PMCs keep their values).
static void unload_counts_on_cpu(void *arg)
{
    UNUSED(arg);
    pmc_count_unload_all(clock_ns());
}

// Mask, drain, then free. A PMI handler that started before the switch to
// nopmu may still be using the counter state on another CPU; smp_call_all
// returns only after every CPU has run quiesce_on_cpu with interrupts off, which
// it cannot do while its PMI handler runs, so after it no handler holds the old
// interface, and a PMI delivered later is spurious and touches nothing freed.
void pmc_shutdown(void)
{
    const struct halp_profile_interface *pi = halp_profile_interface;
    hal_profile_stop_all();
    pmc_count_stop_loading();
    smp_call_all(unload_counts_on_cpu, NULL);
    WRITE_ONCE(halp_profile_interface, &nopmu_profile_interface);
    pmc_trace_disable();
    smp_call_all(quiesce_on_cpu, (void *)pi);
    hal_profile_reset();
    pmc_count_reset();
    pmc_counters_reset();
    pmc_trace_free();
}

int pmc_boot_line(char *buf, size_t size)
{
    const struct pmc_caps *c = &pmc_caps;
    return snprintf(buf, size, "pmc: interface %s: %s%s%s%s", halp_profile_interface->name,
                    c->reason[0] ? c->reason : "not initialized",
                    c->hypervisor ? ", hypervisor" : "",
                    c->hypervisor && c->hypervisor_id[0] ? " " : "", c->hypervisor_id);
}
