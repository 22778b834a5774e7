// The kernel command line: space-separated words, "key" or "key=value".
//
//   test=NAME   run the self-test NAME (selftest.c) and exit QEMU with its verdict
//   nosmp       start only the boot CPU
//   noacpi      ignore ACPI (one CPU)
//   nox2apic    stay in xAPIC mode even when x2APIC is offered
//   init=PROG,ARG,...  the first process (default sh), privileged
//   privileged  every program started by a privileged one is privileged too:
//               the shell's programs may profile the system without sudo
//   icount      QEMU runs with -icount (make run ICOUNT=1): guest time counts
//               instructions, so time sampling is exact (reports stop saying
//               it is approximate, self-tests expect exact tick counts)
#pragma once
#include "lib/types.h"

void cmdline_init(const char *line);
// The value of key= (or "" for a bare key) copied into buf; false when absent.
bool cmdline_get(const char *key, char *buf, size_t size);
bool cmdline_has(const char *key);
bool cmdline_test_mode(void);
