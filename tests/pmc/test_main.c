// The hosted pmc tests: the real kernel/pmc sources against the PMU model.
#include <stdio.h>
#include "tests.h"

int main(void)
{
    printf("TAP version 13\n");
    test_source();
    test_detect();
    test_emon();
    test_amd();
    test_pmi();
    test_hal();
    test_time();
    test_trace();
    test_hyper();
    test_counting();
    test_review();
    test_interleave();
    test_admin();
    test_levels();
    test_ownership();
    test_pmc_object(); // last: the context-switch log keeps its rings allocated
    return tap_finish();
}
