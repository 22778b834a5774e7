// The rows' (hal/rows.h) two published words: what counting has reserved
// and what administration has disabled. Below both sides that read them:
// sampling checks them before it claims a counter (hal/counters.c), the
// ProfileTime timer before it arms (hal/profile_time.c), and the rows' own
// reservation and administration write them (hal/rows.c).
#pragma once
#include "lib/param.h"
#include "lib/types.h"

// Rows some reservation holds: sampling must not claim them (hal/counters.c).
extern volatile uint32_t pmc_rows_reserved;

// Administration (hwpmc's PMC_OP_PMCADMIN): bit r of pmc_rows_disabled[cpu]
// is row r disabled on that CPU, in hal/rows.h's numbering (the counters,
// then ProfileTime's timer, then the software events). A counter disabled on
// a CPU is never claimed there by sampling (hal/counters.c), and a counter
// disabled on any CPU is never reserved for counting, whose rows span every
// CPU (as hwpmc marks a disabled row STANDALONE, which no process-scope PMC
// may take).
extern volatile uint32_t pmc_rows_disabled[MAX_CPUS];
static inline bool pmc_row_off(unsigned cpu, unsigned row)
{
    return (__atomic_load_n(&pmc_rows_disabled[cpu], __ATOMIC_SEQ_CST) >> row) & 1;
}
bool pmc_row_off_anywhere(unsigned row);
void pmc_row_mark(unsigned cpu, unsigned row, bool disabled); // set or clear the bit
