// Counting on the hardware counters: rows reserved for one scope, and the
// counts each CPU has loaded, multiplexed when they outnumber the counters.
//
// A row is counter i on every CPU (hwpmc(4)'s "PMC row"). A process-scope
// count must find a counter on whatever CPU its thread runs, so counting
// reserves whole rows for one scope: THREAD rows carry process-scope counts,
// SYSTEM rows system-scope counts. Sampling (EnableMonitoring) claims only
// rows no count has reserved, and a row that sampling uses on any CPU is not
// reserved.
//
// Each reservation (one per counting PMC) has a home row. A reservation that
// finds no free row able to count its event shares a row of its scope that
// can. While a scope's reservations outnumber its rows, a count that finds no
// counter of its scope free takes a row freed since (a logger's, sampling's)
// as a spare of the scope, a row with no reservation, given back once the
// reservations no longer outnumber the rows. On each CPU the counts that want a counter (the
// system-scope counts of that CPU, the running process's counts) are loaded onto their scope's
// rows; when they outnumber those rows, pmc_count_tick rotates which are loaded (perf's
// multiplexing), and every count keeps time enabled (wanted) and time running (loaded), so that
// value x enabled / running estimates the whole.
//
// A count's value is 64 bits wide in memory. A counter is loaded with the
// value's low bits it can hold (47 with full-width writes or on AMD, 31
// with legacy Intel writes, which sign-extend bit 31: Intel SDM vol. 3B,
// 21.2.6 "Full-Width Writes to Performance Counter Registers") and what it
// counts is added back when it is read, wrap-safe to the counter's width. So a
// user-mode rdpmc of a loaded count reads its value modulo 2^47 (or 2^31).
//
// Everything runs on the current CPU with interrupts off (the context switch,
// smp_call_all, the scheduler tick), on that CPU's counts: a count is wanted
// on one CPU at a time.
#pragma once
#include "lib/abi/profile.h"
#include "lib/abi/status.h"
#include "lib/param.h"
#include "lib/types.h"

#include "arch/x86/trapframe.h"

#include "pmc/hal/counters.h"
#include "pmc/hal/profile_source.h"
#include "pmc/hal/rows.h"

#define PMC_COUNT_MAX_WANT (2 * PMC_ROW_MAX_RESERVED) // counts wanted on one CPU

struct pmc_count {
    KPROFILE_SOURCE source;
    uint8_t levels; // enum pmc_levels: what its counter counts (both unless set after init)
    uint8_t scope;  // PMC_ROW_THREAD or PMC_ROW_SYSTEM
    uint8_t home;   // its reservation's row, tried first
    bool user_read; // user mode may rdpmc it: CR4.PCE is set while it is loaded
    int8_t counter; // counter it is loaded on (-1: none)
    int16_t cpu;    // CPU that wants it (-1: none)
    uint64_t value; // events counted up to the last load, sync or unload
    uint64_t load;  // what the counter was written with
    uint64_t enabled_ns, running_ns;
    uint64_t since_ns; // when enabled_ns/running_ns were last brought up to date
};

// A count of source in both levels on row's scope, wanted nowhere yet; set
// c->levels before its first pmc_count_in to count in one level only. Counts of
// one event in different levels are different event selects: each load
// programs its own, so they may take turns on a row but never share a count.
void pmc_count_init(struct pmc_count *c, KPROFILE_SOURCE source, unsigned row, bool user_read);

// This CPU now wants c counted (a target switched in, a system count started
// here), or no longer does (its value and times are then final until the next
// pmc_count_in). now: clock_ns().
void pmc_count_in(struct pmc_count *c, uint64_t now);
void pmc_count_out(struct pmc_count *c, uint64_t now);
// c's value now: read from its counter when it is loaded here.
uint64_t pmc_count_read(struct pmc_count *c);
// Bring the value and times of every count this CPU wants up to date.
void pmc_count_sync(uint64_t now);
// The scheduler tick: when this CPU's counts outnumber their rows, load the next ones.
void pmc_count_tick(uint64_t now);
// True when this CPU has counts waiting for a counter (pmc_count_tick has work).
bool pmc_count_multiplexing(void);

// Sampling took (freed false) or gave back counter i on this CPU: CR4.PCE
// is decided again (hal/counters.c; interrupts off).
void pmc_count_sampling_changed(unsigned i, bool freed);
// A user-mode rdpmc of ECX = ecx on this CPU that raised #GP because CR4.PCE is
// off: true and *value = the reader's own counter, or 0 for another counter
// of the interface, when this CPU has a user-mode-read count loaded; false
// otherwise (the #GP stands).
bool pmc_count_rdpmc_value(uint32_t ecx, uint64_t *value);
// trap.c's user #GP hook: emulates a user-mode `rdpmc` (0F 33) with
// pmc_count_rdpmc_value.
bool pmc_count_rdpmc_gp(struct trapframe *tf);

// rdpmc's ECX for the counter of row (Intel: fixed counters have bit 30 set;
// Intel SDM vol. 2B, RDPMC). Only meaningful for a row held exclusively.
uint32_t pmc_count_rdpmc_index(unsigned row);

// pmc_init, once the interface is chosen: counts may be loaded.
void pmc_count_go_live(void);
// pmc_shutdown, before the no-PMU interface replaces the live one: no count is
// loaded from now on (pmc_count_stop_loading, once), and each CPU unloads
// every count it has, their values saved (pmc_count_unload_all, on every CPU
// with interrupts off). A count switched in or out afterwards touches no
// counter: its value stays what the unload saved.
void pmc_count_stop_loading(void);
void pmc_count_unload_all(uint64_t now);

// The rows in freed (a bit set) are no longer their scope's: a count of
// this CPU loaded on one moves to another (hal/rows.c: smp_call_all).
void pmc_count_leave_rows(void *freed);

// Forget reservations and loaded counts (pmc_init, pmc_shutdown). A count
// still wanted somewhere then leaves on its next pmc_count_out, and a
// reservation released afterwards releases nothing.
void pmc_count_reset(void);
