// A KTAP-style line per check, counted in the program's checks and failed:
// "ok N<sep>WHAT", or "not ok N<sep>WHAT" (the host tests' check.h and
// counttests; each program prints its own totals).
#pragma once
#include <stdarg.h>
#include <stdio.h>

extern int checks, failed;

// Prints the check's line; returns ok.
static inline __attribute__((format(printf, 3, 4))) int ktap_check(int ok, const char *sep,
                                                                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    checks++;
    printf("%sok %d%s", ok ? "" : "not ", checks, sep);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failed += !ok;
    return ok;
}
