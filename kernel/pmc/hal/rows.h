// Rows as hwpmc(4) counts them: every counting resource of one CPU, numbered,
// with a class, an administrative state and a disposition (FreeBSD
// sys/sys/pmc.h: struct pmc_info, struct pmc_classinfo; pmccontrol(8)). All
// of it is here: the numbering, the reservation of counter rows for
// counting, the administrative state, and what the HAL layer knows of each
// row; the PMC layer above adds only which PMC holds one (pmc/hwpmc/admin.c).
//
// The numbering on every CPU: the interface's counters first, in counter
// table order (row i is counter i on every CPU), then ProfileTime's timer
// slot, then one row per software event. Under QEMU TCG (no PMU) that is the
// timer and the software rows.
//
// Reservation. A process-scope count must find a counter on whatever CPU its
// thread runs, so counting reserves whole rows for one scope: THREAD rows
// carry process-scope counts (hal/counts.h), SYSTEM rows system-scope counts.
// Sampling (EnableMonitoring) claims only rows no count has reserved, and a
// row that sampling uses on any CPU is not reserved. Each reservation (one
// per counting PMC) has a home row. A reservation that finds no free row able
// to count its event shares a row of its scope that can. While a scope's
// reservations outnumber its rows, a count that finds no counter of its
// scope free takes a row freed since (a logger's, sampling's) as a spare of
// the scope, a row with no reservation, given back once the reservations no
// longer outnumber the rows.
#pragma once
#include "lib/abi/pmc.h"
#include "lib/abi/status.h"

#include "lib/param.h"
#include "lib/types.h"

#include "pmc/hal/counters.h"
#include "pmc/hal/profile_source.h"
#include "pmc/hal/row_state.h"

_Static_assert(PMC_MAX_COUNTERS + 1 + PMC_SW_COUNT <= PMC_ROWS_MAX, "rows fit the ABI's arrays");
_Static_assert(PMC_ROWS_MAX <= 32, "pmc_rows_disabled is a 32-bit set");

static inline unsigned pmc_row_timer(void)
{
    return pmc_ncounters;
}

static inline unsigned pmc_row_soft(enum pmc_sw_event e)
{
    return pmc_ncounters + 1 + (unsigned)e;
}

static inline unsigned pmc_row_count(void)
{
    return pmc_ncounters + 1 + PMC_SW_COUNT;
}

#define PMC_ROW_MAX_RESERVED 16 // reservations per scope (counting PMCs using hardware)

enum pmc_row_scope { PMC_ROW_FREE, PMC_ROW_THREAD, PMC_ROW_SYSTEM };

// Each counter row's reservation: written under the rows' lock, read by the
// counts' placement (hal/counts.c) without it.
struct pmc_row {
    uint8_t scope; // enum pmc_row_scope
    uint8_t users; // reservations whose home it is
    bool pinned;   // its one reservation reads it from user mode, or a logger's
};
extern struct pmc_row pmc_rows[PMC_MAX_COUNTERS];

// ---- reservation ----

// Reserve a home row for counting source in scope (THREAD or SYSTEM): a free
// row that can count it, else a row of the scope that can (shared: the counts
// multiplex). Returns
//   STATUS_NOT_SUPPORTED               the PMU cannot count source (*reason says why)
//   STATUS_INSUFFICIENT_RESOURCES      no row of the scope or free can count it
//   STATUS_PMC_TOO_MANY_RUNNING        PMC_ROW_MAX_RESERVED reservations in the scope
// Any context but the PMI.
NTSTATUS pmc_row_reserve(KPROFILE_SOURCE source, enum pmc_row_scope scope, unsigned *row,
                         const char **reason);
// The same for an unprivileged owner: the last free general-purpose row is
// kept for the privileged users (a reservation shares a row of its scope
// rather than take it), so unprivileged counting PMCs cannot hold every
// counter.
NTSTATUS pmc_row_reserve_unprivileged(KPROFILE_SOURCE source, enum pmc_row_scope scope,
                                      unsigned *row, const char **reason);
// The same, but only a free row, pinned at once (pmc_row_pin): a trace
// logger's, whose records hold whole counts. Its counts are loaded on that
// counter only, before any other count of the scope, and never rotated out.
NTSTATUS pmc_row_reserve_own(KPROFILE_SOURCE source, enum pmc_row_scope scope, unsigned *row,
                             const char **reason);
void pmc_row_release(unsigned row);
// Keep row to its one reservation (a user-mode reader relies on its counter
// index); false when others share it already. Released with the reservation.
bool pmc_row_pin(unsigned row);
// The row's scope and how many reservations share it (pmc info, tests).
enum pmc_row_scope pmc_row_scope(unsigned row, unsigned *users);

// Called on every CPU, interrupts off, when the rows of the mask freed lose
// their last reservation, before their bits in pmc_rows_reserved go: each CPU
// moves its counts off them. hal/counts.c sets it at boot (pmc_count_reset).
extern void (*pmc_rows_leave_hook)(void *freed);

// A spare for a count of source in scope (see above): its row, or -1.
int pmc_row_take_spare(KPROFILE_SOURCE source, enum pmc_row_scope scope);
// Forget every reservation and disabled row (pmc_count_reset).
void pmc_rows_reset(void);

// ---- administration ----

// The reserved and disabled words: hal/row_state.h.
// Disable (or enable) counter row on cpu: STATUS_PMC_ROW_BUSY while a
// reservation holds the row or sampling holds its counter on cpu.
NTSTATUS pmc_row_admin_counter(unsigned cpu, unsigned row, bool disable);

// ---- description ----

// The classes, their widths, capabilities and events (NtPmcGetCpuInfo).
void pmc_cpuinfo(struct pmc_cpuinfo *out);

// What this layer knows of row on cpu: its name, class and administrative
// state; a counter's reservation (THREAD, or SYSTEM as STANDALONE) or its
// sampling use on cpu (STANDALONE, with the source and period); the timer's
// (STANDALONE while ProfileTime runs there). A software row is FREE here:
// only PMCs use it, and the PMC layer knows them. A disabled row is
// STANDALONE, as hwpmc marks it.
void pmc_row_describe(unsigned cpu, unsigned row, struct pmc_rowinfo *out);

// NtPmcAdmin of the timer row on cpu (hal/hal_profile.c): STATUS_PMC_ROW_BUSY
// while ProfileTime runs.
NTSTATUS hal_timer_admin(unsigned cpu, bool disable);
