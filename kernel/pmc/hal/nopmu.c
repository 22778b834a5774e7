// The no-PMU profile interface: chosen when detection finds no usable counters
// (QEMU TCG, unknown vendors) or their state could not be allocated. Only
// ProfileTime, which the HAL runs on the LAPIC timer, is supported; every PMC
// source is refused with the reason detection gave.
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/nopmu.h"

char nopmu_reason[176] = "no PMU: not initialized";

static void nopmu_setup(const struct pmc_caps *caps)
{
    UNUSED(caps);
}

static NTSTATUS nopmu_initialize(void)
{
    return STATUS_SUCCESS; // nothing to program: the LVTPC stays as the LAPIC left it
}

static NTSTATUS nopmu_enable(KPROFILE_SOURCE source, unsigned levels)
{
    UNUSED(source);
    UNUSED(levels);
    return STATUS_NOT_SUPPORTED;
}

static void nopmu_disable(KPROFILE_SOURCE source)
{
    UNUSED(source);
}

static NTSTATUS nopmu_set_interval(KPROFILE_SOURCE source, uint64_t *interval)
{
    UNUSED(source);
    UNUSED(interval);
    return STATUS_NOT_SUPPORTED;
}

static void nopmu_check_overflow(struct overflow_status *o)
{
    o->Number = 0;
    o->Mask = 0;
}

static void nopmu_query(KPROFILE_SOURCE source, struct pmc_source_query *q)
{
    UNUSED(source);
    q->supported = false;
    q->reason = nopmu_reason;
    q->kind = PMC_COUNTER_NONE;
    q->max_interval = 0;
}

const struct halp_profile_interface nopmu_profile_interface = {
    .name = "none",
    .Setup = nopmu_setup,
    .InitializeProfiling = nopmu_initialize,
    .EnableMonitoring = nopmu_enable,
    .DisableMonitoring = nopmu_disable,
    .SetInterval = nopmu_set_interval,
    .CheckOverflowStatus = nopmu_check_overflow,
    .QueryInformation = nopmu_query,
    // No PMI steps: a PMI here is always spurious.
};

// The interface in use (hal/hal_interface.h) starts here, before pmc_init
// chooses, and comes back here at pmc_shutdown.
const struct halp_profile_interface *halp_profile_interface = &nopmu_profile_interface;
