// The pmi lab's grader on the host: the PMI tests of tests/pmc/test_pmi.c
// alone, against the register-level PMU model (tests/pmc/pmu_model.c) in its
// Intel and AMD variants. Built by labs/labs.mk from the real
// kernel/pmc/hal sources; labs/pmi/check reads its TAP lines.
#include <stdio.h>
#include "tests.h"

int main(void)
{
    printf("TAP version 13\n");
    test_pmi();
    return tap_finish();
}
