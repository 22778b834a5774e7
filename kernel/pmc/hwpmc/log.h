// The PMC log, hwpmc's one log: one ring per CPU, written only by its own
// CPU (the sampling interrupt, or process context and the switch path with
// interrupts off), drained by the log's owner through NtPmcReadLog. Every
// mode's records go here, in one family (lib/abi/pmclog.h: struct pmclog_*): samples,
// images, exits and switches of sampling and counting PMCs alike, counter
// values at context switches, user records.
#pragma once
#include "lib/abi/pmc.h"
#include "lib/abi/pmclog.h"
#include "lib/abi/status.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

#include "pmc/hwpmc/pmc.h"

struct process;
struct thread;

// NtPmcConfigureLog: allocate (or resize) the rings; the caller becomes the
// owner. Writes a PMCLOG_MAP record for the kernel and every live process.
NTSTATUS pmc_log_configure(struct process *owner, const struct pmc_log_config *cfg);
// Release the rings (owner only; no sampling PMC may be using them).
NTSTATUS pmc_log_release(struct process *owner);
// A sampling PMC of p's starts writing the log (STATUS_PMC_NO_LOG unless p
// owns it), or stops: while any does, the log is neither resized nor released.
NTSTATUS pmc_log_use(const struct process *p);
void pmc_log_unuse(void);
// STATUS_SUCCESS for the owner, STATUS_PMC_NOT_LOG_OWNER or STATUS_PMC_NO_LOG.
NTSTATUS pmc_log_owner_status(const struct process *p);
uint32_t pmc_log_depth(void);

// A tick of a source sampled by the PMCs of s and those chained after it:
// each one whose PMC takes it (pmc_sampler_take: its levels, its period)
// gets a record of the interrupted context f of this CPU's current thread,
// with the call chain when it asks for one. In the interrupt; counted
// delivered on this CPU, then logged or lost.
void pmc_log_sample(struct pmc_sampler *s, const struct intr_frame *f);
// cpu's part of the log, for its samplers.
struct log_cpu *pmc_log_cpu(unsigned cpu);

// PMC_F_LOG_OFFCPU: this CPU's current thread leaves the CPU: the record
// head (its reason and seq filled in) with the chain, when chain, from the
// kernel context f (the scheduler's, pmc_switch_frame) and the user-mode
// state at the top of its kernel stack; with f NULL, from the user-mode state
// alone (a PMC that may not sample kernel mode). Scheduler context,
// interrupts off; without room the record is dropped (and counted).
void pmc_log_offcpu(const struct pmclog_offcpu *head, bool chain, const struct intr_frame *f);

// Any other record, from process context (interrupts are disabled inside).
// rec->h.type and the body are the caller's; cpu, size and tsc are filled in.
// Dropped (and counted) when there is no log or no room.
void pmc_log_write(struct pmclog_header *rec, uint32_t size);
// The same from a context that already has interrupts off (the scheduler).
void pmc_log_write_irqoff(struct pmclog_header *rec, uint32_t size);

// A record of values read now, with interrupts off, kept in log order with
// the records of NMIs: pmc_log_mark before the values are read, then
// pmc_log_write_unchanged, which writes the record (or drops it, as
// pmc_log_write_irqoff does) and returns true, unless a record was written on
// this CPU since the mark (by an NMI that interrupted the reads). That record
// precedes this one in the log and may hold later values: this one is not
// written and false says to read the values again. An NMI's own writer is
// never interrupted on its CPU, so it never sees false.
uint32_t pmc_log_mark(void);
bool pmc_log_write_unchanged(struct pmclog_header *rec, uint32_t size, uint32_t mark);

NTSTATUS pmc_log_read(struct process *reader, uint64_t ubuf, uint64_t len, size_t *got);
NTSTATUS pmc_log_flush(struct process *caller);
void pmc_log_stats(struct pmc_driver_stats *out);
void pmc_log_process_gone(struct process *p); // the owner exited: release the rings
void pmc_log_map_process(const struct process *p, const uint8_t *elf, size_t size);
