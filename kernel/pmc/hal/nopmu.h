// The interface used without a usable PMU (QEMU TCG, a hypervisor that hides
// or faults the PMU's registers): ProfileTime only.
#pragma once

// Why it was chosen, without the hypervisor suffix; every PMC source reports
// "no PMU: <this>".
extern char nopmu_reason[176];
