// Appending formatted text to a buffer, for `pmc info` and the trace's lines:
// like snprintf, len counts everything, even what did not fit.
#pragma once
#include "lib/types.h"

struct pmc_text {
    char *buf; // NULL: only measure
    size_t size;
    int len;
};

void pmc_text_put(struct pmc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
