// When the sample fan-out's plans (ke/sample.c) stop holding: the one replan
// rule, below the fan-out so that what plans are made from can drop them
// without naming the fan-out.
//
// A plan holds while the plan epoch of its CPU (arch/x86/percpu.h) is the one
// it was made at. Every context switch moves its CPU's epoch
// (core/switch_publish.h). Whatever a plan is made from (a profile set, a PMC's
// target slot, the running PMCs, a consumer's armed state, a process's profile
// sets) is published with sample_publish, which moves every CPU's epoch; a CPU
// that begins or ends counting a profile moves its own
// (sample_plans_forget_here), since a plan also records which profiles count
// on its CPU.
#pragma once

// Every CPU's plans are stale: after any change a plan may have seen.
void sample_plans_drop(void);

// Store value at *ptr for the lock-free readers of the sample path, then
// drop the plans (a plan made from the old value no longer answers).
#define sample_publish(ptr, value) \
    do { \
        __atomic_store_n((ptr), (value), __ATOMIC_RELEASE); \
        sample_plans_drop(); \
    } while (0)

// This CPU's plans are stale (interrupts off).
void sample_plans_forget_here(void);
