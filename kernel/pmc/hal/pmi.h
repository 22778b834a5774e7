// Statistics of the performance-monitoring interrupt handler (hal/pmi.c).
#pragma once
#include "lib/abi/profile.h"
#include "lib/types.h"

struct pmc_pmi_stats {
    uint64_t pmis;          // PMIs taken
    uint64_t samples;       // counter overflows reported to the profile callback
    uint64_t spurious;      // PMIs with nothing overflowed (counted and ignored)
    uint64_t lost;          // whole periods that passed while no PMI could be taken
    uint64_t throttled;     // periods the throttle let pass without a sample
    uint64_t stuck;         // PMIs that gave up after PMC_PMI_MAX_LOOPS and reset the counters
    uint64_t handler_ns;    // time spent in the handler
    uint64_t max_window_ns; // most handler time in one PMC_THROTTLE_WINDOW_NS window
    uint64_t squeezed;      // windows whose handler budget ran out
    unsigned shift;         // adapted rate: periods are now 2^shift times the interval
};

// How the PMI is delivered, chosen at boot (pmi=nmi|vector; default vector):
// as NMI the LVTPC's delivery mode is NMI (pmc_pmi_as_nmi: every LVTPC write
// goes through pmc_lapic_write in hal/pmu_regs.h, which sets it), and
// pmc_pmi_nmi_handler, registered with the NMI dispatcher, runs the same
// handler, so code with interrupts off is sampled too. pmc_pmi_choose reads
// the option and registers the handler (before pmc_init).
void pmc_pmi_choose(void);
struct intr_frame;
bool pmc_pmi_nmi_handler(const struct intr_frame *f);

// The performance-monitoring interrupt, from the vector's lean entry
// (arch/x86/trap.c: pmi_interrupt, which sends the EOI) or the NMI dispatcher.
void pmc_pmi_handler(const struct intr_frame *f);

void pmc_pmi_stats(unsigned cpu, struct pmc_pmi_stats *out);
uint64_t pmc_pmi_throttled(KPROFILE_SOURCE source); // periods of source not sampled, all CPUs
void pmc_pmi_reset(void);                           // zero everything (pmc_init)
