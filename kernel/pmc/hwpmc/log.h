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

// Where a sample comes from, the same for every sample while one process
// runs on one CPU: a PMC's plan (hwpmc/kind_sampling.h) keeps it ready, so a record's
// fields are copied, not looked up.
struct sample_origin {
    uint32_t pid;    // 0: the idle thread
    uint32_t tid;    // one thread per process: the pid
    uint32_t pmc;    // the PMC's id
    uint16_t cpu;    // this CPU
    uint16_t source; // KPROFILE_SOURCE
    bool chain;      // PMC_F_CALLCHAIN: walk the call chain
    uint16_t flags;  // the record's flags known in advance (PMCLOG_SAMPLE_CHAIN)
};

// A sample of the interrupted context f of this CPU's current thread, in the
// interrupt; user is intr_from_user(f), which the caller has already tested.
// Counts it delivered on o->cpu, then logged or lost.
void pmc_log_sample(const struct sample_origin *o, const struct intr_frame *f, bool user);

// PMC_F_LOG_OFFCPU: this CPU's current thread (o's process) leaves the CPU
// for reason (enum thread_wait): a PMCLOG_OFFCPU record with the chain from
// the kernel context f (the scheduler's, pmc_switch_frame) and the user-mode
// state at the top of its kernel stack, with o->chain. Scheduler context,
// interrupts off; without room the record is dropped (and counted).
void pmc_log_offcpu(const struct sample_origin *o, const struct intr_frame *f, uint16_t reason,
                    uint32_t seq);

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
