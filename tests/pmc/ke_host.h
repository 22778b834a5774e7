// The hosted stand-ins for what the PMC object (kernel/pmc/hwpmc/) needs
// above the PMU model: CPUs running threads, processes, context switches, the
// scheduler tick, and a sample log that counts what it is given.
#pragma once
#include "arch/x86/percpu.h"
#include "core/process.h"
#include "pmc/hwpmc/pmc.h"

// n CPUs, each running its idle thread; no tick hook.
void ke_host_reset(unsigned n);
// The model booted with cfg (tests.h's boot), its CPUs reset, and the PMC
// object with its sampling and counting kinds initialized (test_util.c).
struct model_config;
void ke_host_boot(const struct model_config *cfg);
// A live privileged process with one thread that has not run.
void ke_host_process(struct process *p, struct thread *t, uint32_t pid);
// pmc_allocate by owner of source in mode with flags, on every CPU: the PMC,
// or NULL with *st the status.
struct pmc *ke_host_allocate(struct process *owner, uint32_t source, uint32_t mode, uint32_t flags,
                             NTSTATUS *st);
// Switch cpu to next (NULL: its idle thread), as switch_to does: the PMC
// layer's switch work runs there with interrupts off.
void ke_host_switch(unsigned cpu, struct thread *next);
struct thread *ke_host_running(unsigned cpu);
// One scheduler tick on cpu (the PMC layer's tick hook).
void ke_host_tick(unsigned cpu);
// The exiting process's PROCESS_EXITING watchers, on cpu (exit_status 3).
void ke_host_exit(unsigned cpu, struct process *p);

// What the PMC object gave a process's sample log (and the fan-out) since
// the reset: one log per owner, as kernel/pmc/hwpmc/log.c keeps them.
struct ke_host_log {
    uint32_t owner_pid;   // the log's owner (0: no log)
    uint32_t users;       // PMCs and loggers using it
    uint64_t samples;     // pmc_log_sample calls
    uint32_t last_pmc;    // the PMC id of the last sample
    uint64_t records[16]; // pmc_log_write_irqoff records, by type
    uint8_t bytes[4096];  // the first of them, as written
    size_t nbytes;
    uint64_t drops; // sample_plans_drop calls
};
extern struct ke_host_log ke_host_log;       // the first owner's (drops: the fan-out's)
extern struct ke_host_log ke_host_log_other; // a second owner's, beside it
