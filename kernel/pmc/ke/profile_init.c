// The profile layer's boot order (NT's Ke layer over the HAL): called once by
// kmain, after the HAL (pmc_init) and before the first process.
#include "pmc/ke/profile_init.h"

#include "pmc/hwpmc/loggers.h"
#include "pmc/hwpmc/pmc.h"
#include "pmc/ke/profile.h"
#include "pmc/ke/sample.h"

void profile_init(void)
{
    ke_profile_init();   // profile objects: each process's area of profile state
    pmc_object_init();   // PMC objects: watch processes and context switches
    pmc_sampling_init(); // the PMC kinds: ProfileTime and PMU-event sampling
    pmc_counting_init(); // software and PMU-event counting, multiplexed on the tick
    pmc_loggers_init();  // the trace loggers: counter values at hook events, into the log
    sample_plan_init();  // last: the HAL's samples now reach all of the above
}
