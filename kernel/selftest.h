// In-kernel self-tests, selected by test=NAME on the command line. They print
// KTAP on the console and end QEMU through isa-debug-exit with the verdict.
#pragma once
#include "types.h"

void selftest_run(const char *name) NORETURN;
