// The profile layer's boot order (NT's Ke layer over the HAL): called once by
// kmain, after the HAL (pmc_init) and before the PMC layer (hwpmc_init).
#include "pmc/ke/profile_init.h"

#include "pmc/ke/profile.h"
#include "pmc/ke/sample.h"

void profile_init(void)
{
    ke_profile_init();  // profile objects: each process's area of profile state
    sample_plan_init(); // the fan-out: the HAL's samples now reach the profiles
}
