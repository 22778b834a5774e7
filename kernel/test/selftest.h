// In-kernel self-tests, selected by test=NAME on the command line. They print
// KTAP on the console and end QEMU through isa-debug-exit with the verdict.
#pragma once
#include "lib/types.h"

void selftest_run(const char *name) NORETURN;

// For the individual test files.
void check(bool ok, const char *name); // one KTAP line
void sleep_ms(uint64_t ms);            // halt-wait (other CPUs and time go on)
void selftest_nmi(void);               // selftest_nmi.c
void selftest_pmc(void);
void selftest_panic_sampling(void); // selftest_pmc.c               // selftest_pmc.c
