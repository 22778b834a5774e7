// pmc_init and pmc_shutdown: bring the profile interface up and down.
#include "pmc/pmc.h"
#include "lib/kprintf.h"
#include "arch/x86/percpu.h"
#include "pmc/detect.h"
#include "pmc/hal.h"
#include "pmc/hal_interface.h"
#include "pmc/pmi.h"
#include "pmc/trace.h"
#include "core/smp.h"

static void initialize_on_cpu(void *arg)
{
    UNUSED(arg);
    halp_profile_interface->InitializeProfiling();
}

void pmc_init(void)
{
    WRITE_ONCE(halp_profile_interface, &nopmu_profile_interface);
    hal_profile_reset();
    pmc_counters_reset();
    pmc_pmi_reset();

    pmc_detect(&pmc_caps);
    const struct halp_profile_interface *pi = pmc_caps.choice;
    pi->Setup(&pmc_caps);
    if (pi != &nopmu_profile_interface && !pmc_counters_alloc()) {
        // Seed 000: without its memory every PMC source is unsupported.
        size_t bytes = pmc_counters_bytes();
        snprintf(pmc_caps.reason, sizeof(pmc_caps.reason),
                 "%s counter state allocation failed (%zu bytes)", pi->name, bytes);
        snprintf(nopmu_reason, sizeof(nopmu_reason), "counter state allocation failed");
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

    char line[160];
    pmc_boot_line(line, sizeof(line));
    kprintf("%s\n", line);
}

void pmc_shutdown(void)
{
    for (unsigned s = 0; s < ProfileSourceCount; s++)
        HalStopProfileInterrupt((KPROFILE_SOURCE)s, NULL); // not started: harmless
    WRITE_ONCE(halp_profile_interface, &nopmu_profile_interface);
    hal_profile_reset();
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
