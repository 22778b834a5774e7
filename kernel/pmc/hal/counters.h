// The hardware counters of the chosen interface, their per-CPU state, and the
// period arithmetic every interface shares.
//
// An interface describes its counters once at boot (pmc_counter_add: struct
// pmc_counter_hw); the description is the same on every CPU. Each CPU then
// owns one struct pmc_counter_cpu per counter, its use of that counter for
// sampling, touched only by that CPU with interrupts off (from smp_call_all
// or the PMI), so no lock is needed. (What counting loads on a counter is a
// count: hal/counts.h.)
#pragma once
#include "lib/abi/profile.h"
#include "lib/param.h"
#include "lib/types.h"

#include "pmc/hal/profile_source.h"
#include "pmc/hal/tunables.h"

struct pmc_counter_hw {
    enum pmc_counter_kind kind; // PMC_COUNTER_FIXED or PMC_COUNTER_GENERAL
    uint8_t number;             // PMCn / PERF_CTRn / FIXED_CTRn
    uint8_t status_bit;         // bit in the global ctrl/status registers
    uint32_t ctl_msr;           // PERFEVTSELn / PERF_CTLn; 0 for fixed counters
    uint32_t ctr_msr;           // the counter as written (IA32_A_PMCn when full-width)
    uint64_t mask;              // 2^width - 1
    uint64_t max_period;        // largest period a write can load
};

// One counter on one CPU: 8 bytes per counter per processor, as in the Windows
// HAL's Emon interface.
struct pmc_counter_cpu {
    uint64_t period : 48; // events per sample; 0 = counter free
    uint64_t source : 6;  // KPROFILE_SOURCE counted (ProfileSourceCount <= 32)
    uint64_t levels : 2;  // enum pmc_levels it counts in
    uint64_t stopped : 1; // owned, not counting: not loaded yet, or reset by the PMI (stuck)
    uint64_t stretch : 6; // log2 of how many periods the last arm covered (hal/pmi.c's throttle)
    uint64_t unused : 1;
};
_Static_assert(sizeof(struct pmc_counter_cpu) == 8, "8 bytes per counter per processor");

extern struct pmc_counter_hw pmc_hw[PMC_MAX_COUNTERS];
// Counters each CPU has a count loaded on (bit i = counter i; pmc/hal/counts.c), which
// the interfaces enable alongside their sampling counters.
extern uint32_t pmc_counters_loaded[MAX_CPUS];
extern unsigned pmc_ncounters;
extern struct pmc_counter_cpu *pmc_state; // [MAX_CPUS][pmc_ncounters], NULL before allocation

// Interval each PMC source is started with (events); SetInterval stores here.
extern uint64_t pmc_source_interval[ProfileSourceCount];

// Forget counters and free the state (after pmc_count_reset: nothing counts
// on the state about to go).
void pmc_counters_reset(void);
// Called on this CPU, interrupts off, when sampling takes (freed false) or
// gives back counter i: hal/counts.c sets it at boot (pmc_count_reset), and
// decides CR4.PCE again.
extern void (*pmc_counter_sampling_hook)(unsigned i, bool freed);
void pmc_counter_add(const struct pmc_counter_hw *hw); // describe the next counter
bool pmc_counters_alloc(void);                         // state for MAX_CPUS; false if no memory
size_t pmc_counters_bytes(void);                       // what pmc_counters_alloc asks for

static inline struct pmc_counter_cpu *pmc_counter(unsigned cpu, unsigned i)
{
    return &pmc_state[cpu * pmc_ncounters + i];
}

// Claim a free counter on cpu for source, counting in levels, with the given period: the fixed
// counter `fixed` if it exists and is free, else a free GP counter whose number
// is in general_mask (bit n = PMCn / PERF_CTRn may count the event; 0 = no GP
// counter). Rows reserved for counting, and counters NtPmcAdmin disabled on
// cpu (pmc/hal/counts.h), are never free here.
// Returns the counter index or -1. The counter is claimed stopped, which the
// PMI passes over: the interface loads it, then calls pmc_counter_loaded.
int pmc_counter_claim(unsigned cpu, KPROFILE_SOURCE source, unsigned levels, int fixed,
                      uint32_t general_mask, uint64_t interval);
// Counter i of this CPU (cpu) now holds its first period: the PMI may
// sample it from here on. Before the global enable is written.
void pmc_counter_loaded(unsigned cpu, unsigned i);
// Counter i of this CPU (cpu) is about to be halted: the PMI passes over it
// from here on. Before the wrmsr that halts it, so that a PMI (an NMI with
// pmi=nmi) taken between that wrmsr and the release neither samples it nor
// re-enables it (Intel version 1's re-arm, pmc/hal/emon.c).
void pmc_counter_stopping(unsigned cpu, unsigned i);
int pmc_counter_find(unsigned cpu, KPROFILE_SOURCE source); // owned counter or -1
// Global-enable bits (status_bit) of the counters cpu samples with and has not
// stopped, and of those it counts with: what IA32_PERF_GLOBAL_CTRL or
// AMD's PerfCntrGlobalCtl holds while no PMI runs.
uint64_t pmc_enabled_bits(unsigned cpu);
// The counter a source would use on an idle CPU (for the max interval), or -1.
int pmc_counter_preferred(int fixed, uint32_t general_mask);

uint64_t pmc_period_clamp(uint64_t interval, uint64_t max_period);

// Value that makes counter hw overflow after `left` more events.
static inline uint64_t pmc_arm_value(const struct pmc_counter_hw *hw, uint64_t left)
{
    return (0 - left) & hw->mask;
}

// True when a counter armed with a negative value has since passed zero:
// its top bit (width - 1) is clear.
static inline bool pmc_counter_wrapped(const struct pmc_counter_hw *hw, uint64_t value)
{
    return (value & (hw->mask ^ (hw->mask >> 1))) == 0;
}

// Value to reload after an overflow for a next period of `period` events, given
// the counter's current value: the events already counted past zero are charged
// to that period so that samples == events / period exactly. *lost gets whole
// periods skipped.
uint64_t pmc_reload_value(const struct pmc_counter_hw *hw, uint64_t period, uint64_t now,
                          uint64_t *lost);
