// The rows' published words (hal/row_state.h).
#include "pmc/hal/row_state.h"

volatile uint32_t pmc_rows_reserved;
volatile uint32_t pmc_rows_disabled[MAX_CPUS];

bool pmc_row_off_anywhere(unsigned row)
{
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
        if (pmc_row_off(cpu, row))
            return true;
    return false;
}

void pmc_row_mark(unsigned cpu, unsigned row, bool disabled)
{
    if (disabled)
        __atomic_fetch_or(&pmc_rows_disabled[cpu], 1u << row, __ATOMIC_SEQ_CST);
    else
        __atomic_fetch_and(&pmc_rows_disabled[cpu], ~(1u << row), __ATOMIC_SEQ_CST);
}
