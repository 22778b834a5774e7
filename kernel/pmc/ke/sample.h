// The sample fan-out: one per-CPU plan per source listing what a sample
// feeds — the profile objects whose buckets count its address (ke/profile.c)
// and the PMCs whose log records it becomes (hwpmc/kind_sampling.c).
//
// KeProfileInterruptWithSource, the handler the HAL calls with every sample,
// runs this CPU's plan for the sample's source. A plan holds while nothing it
// was made from has changed, the CPU has not switched context, and the
// address lies in the interval over which its bucket lookups hold; otherwise
// a new plan is made first, and run the same way.
//
// The replan rule, the only one: whatever a plan is made from (a profile set,
// a PMC's target slot, the running PMCs, a process's profile sets) is
// published with sample_publish, which also drops every CPU's plans (and a
// context switch drops its CPU's). A CPU that begins or ends counting a
// profile drops its own plan for the source (sample_plan_forget_here), since
// a plan also records which profiles count on its CPU.
#pragma once
#include "lib/abi/profile.h"

#include "arch/x86/trapframe.h"

// Every CPU's plans are stale: after any change a plan may have seen.
void sample_plans_drop(void);
// Store value at *ptr for the lock-free readers of the sample path, then
// drop the plans (a plan made from the old value no longer answers).
#define sample_publish(ptr, value) \
    do { \
        __atomic_store_n((ptr), (value), __ATOMIC_RELEASE); \
        sample_plans_drop(); \
    } while (0)
// This CPU's plan for source is stale (interrupts off).
void sample_plan_forget_here(KPROFILE_SOURCE source);

// The HAL's sample callback (HalSetSystemInformation's
// HalProfileSourceInterruptHandler), in interrupt context.
void KeProfileInterruptWithSource(KPROFILE_SOURCE source, const struct intr_frame *f);

void sample_plan_init(void); // at boot: claim the per-CPU area, register the handler
