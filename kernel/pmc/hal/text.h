// Appending formatted text to a buffer, for `pmc info` and detect's messages:
// like snprintf, len counts everything, even what did not fit. And the names
// of the PMU MSRs.
#pragma once
#include "lib/types.h"

struct pmc_text {
    char *buf; // NULL: only measure
    size_t size;
    int len;
};

void pmc_text_put(struct pmc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Name of an MSR the pmc code touches ("IA32_PMC1"), NULL if not a PMU MSR.
const char *pmc_msr_name(uint32_t msr, char *buf, size_t size);
