// The PMC layer's boot order (FreeBSD hwpmc's PMC object over the profile
// layer): called once by kmain, after profile_init and before the first
// process. Each part that takes samples registers with the fan-out
// (ke/sample.h) as it starts.
#include "pmc/hwpmc/hwpmc_init.h"

#include "pmc/hwpmc/loggers.h"
#include "pmc/hwpmc/pmc.h"

void hwpmc_init(void)
{
    pmc_object_init();   // PMC objects: watch processes and context switches
    pmc_sampling_init(); // the sampling kinds, and their samplers as a consumer of samples
    pmc_counting_init(); // software and PMU-event counting, multiplexed on the tick
    pmc_loggers_init();  // the trace loggers, and their profile hook as a consumer of samples
}
