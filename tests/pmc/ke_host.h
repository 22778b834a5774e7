// The hosted stand-ins for what kernel/profile/vcounter.c needs above the PMU
// model: CPUs running threads, processes, context switches, the scheduler tick.
#pragma once
#include "arch/x86/percpu.h"
#include "core/process.h"
#include "profile/vcounter.h"

// n CPUs, each running its idle thread; no tick hook.
void ke_host_reset(unsigned n);
// A live privileged process with one thread that has not run.
void ke_host_process(struct process *p, struct thread *t, uint32_t pid);
// Switch cpu to next (NULL: its idle thread), as switch_to does: the PMC
// layer's switch work runs there with interrupts off.
void ke_host_switch(unsigned cpu, struct thread *next);
struct thread *ke_host_running(unsigned cpu);
// One scheduler tick on cpu (the PMC layer's tick hook).
void ke_host_tick(unsigned cpu);
