// The sample fan-out: one per-CPU plan per source listing what a sample
// feeds — the profile objects whose buckets count its address (ke/profile.c)
// and the consumers registered with it below (the PMCs whose log records it
// becomes, a logger's profile hook, `pmc trace`'s bucket records).
//
// KeProfileInterruptWithSource, the handler the HAL calls with every sample,
// runs this CPU's plan for the sample's source. A plan holds while nothing it
// was made from has changed (ke/plan_epoch.h: the replan rule), the CPU has
// not switched context, and the address lies in the interval over which its
// bucket lookups hold; otherwise a new plan is made first, and run the same
// way.
#pragma once
#include "lib/abi/profile.h"
#include "lib/param.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

#include "pmc/ke/plan_epoch.h"

// Where a sample is counted when what it belongs to keeps no count (a
// process without a profile set, a system-scope PMC): per CPU, never read.
extern uint64_t samples_sink[MAX_CPUS][8];

// --- consumers ---------------------------------------------------------------------
//
// What takes samples besides the profile objects' buckets lives in the layer
// above (hwpmc's sampling PMCs and its loggers' profile hook) or beside them
// (`pmc trace`'s bucket records), and reaches the fan-out through this one
// interface, registered at boot: the fan-out names none of them. When a CPU
// makes a plan, each consumer says what it takes of the samples the plan
// holds for, as a token (NULL: nothing); with each such sample the plan calls
// its take with that token. plan reads the state the consumer publishes with
// sample_publish and writes only its own per-CPU scratch (a plan is made at
// any sample and thrown away at any time); both run in the interrupt, with
// interrupts off.
typedef void sample_take_fn(void *token, const struct intr_frame *f);
struct process;
struct sample_consumer {
    void *(*plan)(KPROFILE_SOURCE source, const struct process *pr, unsigned cpu);
    sample_take_fn *take;
};
#define SAMPLE_CONSUMERS_MAX 4

// At boot, before the consumer's state can change: c takes part in every plan
// made from now on (every CPU's plans are dropped).
void sample_consumer_register(const struct sample_consumer *c);

// The HAL's sample callback (HalSetSystemInformation's
// HalProfileSourceInterruptHandler), in interrupt context.
void KeProfileInterruptWithSource(KPROFILE_SOURCE source, const struct intr_frame *f);

void sample_plan_init(void); // at boot: claim the per-CPU area, register the handler
