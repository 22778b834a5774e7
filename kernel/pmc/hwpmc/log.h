// The PMC logs: hwpmc's log, one per owning process (PMC_OP_CONFIGURELOG is
// per process in hwpmc(4)), at most PMC_LOGS_MAX on the machine. Each is one
// ring per CPU, written only by its own CPU (the sampling interrupt, or
// process context and the switch path with interrupts off), drained by its
// owner through NtPmcReadLog. Every mode's records go to the log of the PMC's
// owner, in one family (lib/abi/pmclog.h: struct pmclog_*): samples, exits
// and switches of sampling and counting PMCs alike, counter values at context
// switches (a logger's owner's), user records; images go to every log.
#pragma once
#include "lib/abi/pmc.h"
#include "lib/abi/pmclog.h"
#include "lib/abi/status.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

struct process;
struct thread;

struct pmc_log; // one process's log (hwpmc/log.c)
struct log_cpu; // its part on one CPU

// A sampling PMC on one CPU while one process runs there: what a tick of
// its source does. Every sampling PMC has one per CPU. The fan-out's plan
// for a source (ke/sample.c) chains those of the PMCs sampling the CPU for
// the running process (hwpmc/kind_sampling.c: pmc_samplers_make) and hands
// every tick to the first (hwpmc/log.c: pmc_log_sample). Remade at the
// first tick after any change (a start, stop, attach, detach or exit drops
// the plans: ke/sample.h) or context switch; only its CPU touches it, with
// interrupts off.
struct pmc_sampler {
    struct pmc_sampler *next; // the next PMC the same ticks go to; NULL: none
    uint64_t head[5];         // its records' struct pmclog_sample before the frames
    bool in_level[2];         // its levels: [0] kernel-mode ticks count, [1] user-mode ones
    bool chain;               // PMC_F_CALLCHAIN: walk the call chain
    uint64_t period;          // ticks of the source per sample
    uint64_t phase;           // ticks since this CPU's last sample
    uint64_t slice;           // samples on this CPU since its last switch
    uint64_t *samples;        // the target's total (a per-CPU sink at system scope)
    struct log_cpu *log;      // this CPU's part of its owner's log (pmc_log_cpu)
};

// A tick counts for s's PMC when its IP is in one of the PMC's levels (a
// hardware counter counts only those, but a PMI may arrive after the CPU
// changed levels) and it is the period-th such tick on this CPU.
static inline bool pmc_sampler_take(struct pmc_sampler *s, bool user)
{
    if (!s->in_level[user])
        return false;
    uint64_t ticks = s->phase + 1;
    if (ticks < s->period) {
        s->phase = ticks;
        return false;
    }
    s->phase = 0;
    (*s->samples)++; // one thread per process: one CPU at a time
    s->slice++;
    return true;
}

// NtPmcConfigureLog: allocate (or resize) owner's log. Writes a PMCLOG_MAP
// record for the kernel and every live process. STATUS_PMC_TOO_MANY_LOGS
// without a slot the owner may take (an unprivileged one: PMC_LOGS_UNPRIVILEGED
// at most), STATUS_PMC_LOG_QUOTA past the unprivileged logs' share of rings.
NTSTATUS pmc_log_configure(struct process *owner, const struct pmc_log_config *cfg);
// Release owner's log (no sampling PMC or logger may be using it).
NTSTATUS pmc_log_release(struct process *owner);
// A PMC or logger of p's starts writing p's log, *out (STATUS_PMC_NO_LOG when
// p has none), or stops: while any does, the log is neither resized nor
// released, and when p exits meanwhile it is freed at the last stop. Called
// by p itself; unuse by whoever stops the writer.
NTSTATUS pmc_log_use(const struct process *p, struct pmc_log **out);
void pmc_log_unuse(struct pmc_log *log);

// A tick of a source sampled by the PMCs of samplers (a struct pmc_sampler,
// the first of a chain: the sampling PMCs' take, ke/sample.h): each one
// whose PMC takes it (pmc_sampler_take: its levels, its period) gets a
// record of the interrupted context f of this CPU's current thread, with the
// call chain when it asks for one. In the interrupt; counted delivered on
// this CPU, then logged or lost.
void pmc_log_sample(void *samplers, const struct intr_frame *f);
// cpu's part of log, for the samplers of a PMC writing it.
struct log_cpu *pmc_log_cpu(struct pmc_log *log, unsigned cpu);

// PMC_F_LOG_OFFCPU: this CPU's current thread leaves the CPU: into log, the record
// head (its reason and seq filled in) with the chain, when chain, from the
// kernel context f (the scheduler's, pmc_switch_frame) and the user-mode
// state at the top of its kernel stack; with f NULL, from the user-mode state
// alone (a PMC that may not sample kernel mode). Scheduler context,
// interrupts off; without room the record is dropped (and counted).
void pmc_log_offcpu(struct pmc_log *log, const struct pmclog_offcpu *head, bool chain,
                    const struct intr_frame *f);

// Any other record into log (one a writer uses, pmc_log_use), from a context
// with interrupts off (the scheduler, a hook, pmc_lock held). rec->h.type and
// the body are the caller's; cpu, size and tsc are filled in. Dropped (and
// counted) when there is no room.
void pmc_log_write_irqoff(struct pmc_log *log, struct pmclog_header *rec, uint32_t size);

// A record of values read now, with interrupts off, kept in log order with
// the records of NMIs: pmc_log_mark before the values are read, then
// pmc_log_write_unchanged, which writes the record (or drops it, as
// pmc_log_write_irqoff does) and returns true, unless a record was written in
// log on this CPU since the mark (by an NMI that interrupted the reads). That
// record precedes this one in the log and may hold later values: this one is
// not written and false says to read the values again. An NMI's own writer is
// never interrupted on its CPU, so it never sees false.
uint32_t pmc_log_mark(struct pmc_log *log);
bool pmc_log_write_unchanged(struct pmc_log *log, struct pmclog_header *rec, uint32_t size,
                             uint32_t mark);

// NtPmcWriteLog: a PMCLOG_USER record into p's own log (STATUS_PMC_NO_LOG without one).
NTSTATUS pmc_log_write_user(const struct process *p, uint64_t userdata);
// The calls of the owner's own thread (one thread a process: the only one
// that reads, resizes or releases its log).
NTSTATUS pmc_log_read(struct process *reader, uint64_t ubuf, uint64_t len, size_t *got);
NTSTATUS pmc_log_flush(struct process *caller);
void pmc_log_stats(const struct process *caller, struct pmc_driver_stats *out); // its log's
void pmc_log_process_gone(struct process *p); // the owner exited: release its log
// A new image: its PMCLOG_MAP record into every log.
void pmc_log_map_process(const struct process *p, const uint8_t *elf, size_t size);
