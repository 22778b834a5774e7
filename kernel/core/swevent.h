// Software events: what a perf-stat user counts with no PMU at all.
//
// Each thread and each CPU keeps running totals of every enum pmc_sw_event
// (lib/abi/pmc.h), always: an increment where the event happens costs less than
// deciding whether anyone is counting it, and a counting PMC then only needs a
// baseline (pmc/hwpmc/kind_counting.c). The hooks sit where the events happen:
//   switch_to (sched.c)          context switches, migrations, task-clock, and
//                                the PMIs and ProfileTime ticks of the interval
//   syscall_dispatch (syscall.c) system calls
//   process_fault (process.c)    user-mode page faults
#pragma once
#include "lib/abi/pmc.h"

#include "arch/x86/percpu.h"

#include "core/sched.h"

// Software events on one CPU: running totals; the performance-monitoring
// interrupts taken there since boot, which the HAL adds to (pmc/hal/pmi.c)
// and nothing resets; and the PMI and ProfileTime tick counts at the last
// switch (their difference at the next one is charged to the thread that ran
// in between).
struct swevent_cpu {
    uint64_t count[PMC_SW_COUNT];
    uint64_t pmis;
    uint64_t pmis_seen, ticks_seen;
} __attribute__((aligned(128))); // its own cache lines; an index is a shift
extern struct swevent_cpu swevent_cpus[MAX_CPUS];

// On the switch from cur to next on c, at time now; ran_ns is how long cur ran.
// Interrupts off, run-queue lock held.
void swevent_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t ran_ns);

static inline void swevent_count(enum pmc_sw_event e)
{
    struct cpu *c = this_cpu();
    swevent_cpus[c->id].count[e]++;
    c->current->sw[e]++;
}

// ProfileTime ticks taken on cpu since boot, never reset (a restart of the
// source included): the profile layer's per-CPU sample count, which it
// registers at boot (sample_plan_init). NULL until then: no tick yet.
extern uint64_t (*swevent_profile_ticks)(unsigned cpu);

// Thread t's total of e up to now (task-clock includes the current run).
uint64_t swevent_thread_value(const struct thread *t, enum pmc_sw_event e);
// CPU cpu's total of e up to now.
uint64_t swevent_cpu_value(unsigned cpu, enum pmc_sw_event e);

const char *swevent_name(enum pmc_sw_event e); // perf's name, "task-clock"

// The levels a value is asked for: bit 0 kernel mode, bit 1 user mode (the encoding
// of pmc/hal/profile_source.h's enum pmc_levels). Only task-clock tells them
// apart: user-mode time (arch/x86/user_time.h) and the rest of the CPU time.
#define SWEVENT_LEVEL_KERNEL 1u
#define SWEVENT_LEVEL_USER   2u
#define SWEVENT_LEVELS_ALL   3u
bool swevent_has_levels(enum pmc_sw_event e);
uint64_t swevent_thread_value_levels(const struct thread *t, enum pmc_sw_event e, unsigned levels);
uint64_t swevent_cpu_value_levels(unsigned cpu, enum pmc_sw_event e, unsigned levels);
