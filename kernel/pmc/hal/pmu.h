// pmc: the entry points the rest of the kernel calls.
//
//   pmi_register(pmc_pmi_handler)
//                      before pmc_init: InitializeProfiling unmasks every LVTPC.
//   pmc_init()         boot CPU, once, after SMP start-up and the timers, with
//                      interrupts enabled (it uses smp_call_all).
//
// The profile API itself is in pmc/hal/hal.h; tracing in pmc/hal/trace.h.
#pragma once
#include "lib/types.h"

#include "arch/x86/trapframe.h"

// Detect the PMU, choose the profile interface, allocate the counter state,
// program every CPU (LVTPC = VEC_PMI), and print the one boot line
// "pmc: interface <emon|amd64|none>: <reason>".
void pmc_init(void);

// Stop every started source and free the counter state and trace rings.
void pmc_shutdown(void);

// The boot line without its newline; returns what snprintf returns.
int pmc_boot_line(char *buf, size_t size);

// `pmc info`: decoded CPUID, the interface, the counters and sources in use.
int pmc_info(char *buf, size_t size);
