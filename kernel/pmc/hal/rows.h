// Rows as hwpmc(4) counts them: every counting resource of one CPU, numbered,
// with a class, an administrative state and a disposition (FreeBSD
// sys/sys/pmc.h: struct pmc_info, struct pmc_classinfo; pmccontrol(8)).
//
// The numbering on every CPU: the interface's counters first, in counter
// table order (row i is counter i, the "row" of hal/counts.h), then
// ProfileTime's timer slot, then one row per software event. Under QEMU TCG
// (no PMU) that is the timer and the software rows. NtPmcAdmin's state of
// each is pmc_rows_disabled (hal/counts.h); the PMC layer above fills in which
// PMC holds a row (pmc/hwpmc/admin.c).
#pragma once
#include "lib/abi/pmc.h"
#include "lib/abi/status.h"

#include "pmc/hal/counters.h"
#include "pmc/hal/counts.h"

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
