// hwpmc's administration and information operations over the PMC object:
// PMC_OP_PMCADMIN (NtPmcAdmin) and PMC_OP_GETPMCINFO (NtPmcGetPmcInfo), FreeBSD
// sys/sys/pmc.h and pmccontrol(8). The rows and their numbering are the HAL
// layer's (pmc/hal/rows.h); this layer knows which PMC holds each.
#pragma once
#include "lib/abi/pmc.h"
#include "lib/abi/status.h"
#include "lib/types.h"

// Disable (state PMC_STATE_DISABLED) or enable (PMC_STATE_FREE) row on cpu.
// The caller has checked the privilege. In hwpmc's order:
//   STATUS_PMC_BAD_CPU         cpu is not an online CPU
//   STATUS_INVALID_PARAMETER   state is neither
//   STATUS_PMC_BAD_ROW         row is not below the rows per CPU
//   STATUS_PMC_ROW_BUSY        disable of a row in use on cpu
// Disabling a disabled row or enabling an enabled one succeeds.
NTSTATUS pmc_admin(uint32_t cpu, uint32_t row, uint32_t state);

// The rows of cpu: out[0 .. pmc_row_count()), with each holder's owner, mode
// and event. STATUS_PMC_BAD_CPU for a CPU that is not online.
NTSTATUS pmc_rows_info(uint32_t cpu, struct pmc_rowinfo *out);
