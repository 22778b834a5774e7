// Where every sample leaves the HAL (hal/deliver.c): to the handler
// registered with HalSetSystemInformation's HalProfileSourceInterruptHandler
// (the fan-out, KeProfileInterruptWithSource), or, while `pmc trace` is on,
// through a wrapper that records the sample first.
#pragma once
#include "lib/abi/profile.h"
#include "lib/abi/status.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

#include "pmc/hal/hal.h"

// The function every sample is handed to: a no-op while no handler is
// registered. Set again whenever the handler or the trace changes, so a
// sample makes no test of its own.
extern HAL_PROFILE_INTERRUPT_HANDLER halp_deliver;

// Hand one sample on: the one way samples leave the HAL, from the ProfileTime
// tick (hal/profile_time.c) and the PMI (hal/pmi.c).
static inline void halp_deliver_sample(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    READ_ONCE(halp_deliver)(source, f);
}

// The handler samples go to from now on; NULL: none (samples go nowhere).
void halp_deliver_register(HAL_PROFILE_INTERRUPT_HANDLER h);

// Turn `pmc trace` on (its rings allocated the first time: STATUS_NO_MEMORY
// if that fails) or off, the samples' way out with it.
NTSTATUS pmc_trace_enable(void);
void pmc_trace_disable(void);
