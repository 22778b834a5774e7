// Counter descriptions, per-CPU counter state, and period arithmetic.
#include "pmc/hal/counters.h"

#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/heap.h"

#include "pmc/hal/row_state.h"
#include "pmc/hal/trace.h"

struct pmc_counter_hw pmc_hw[PMC_MAX_COUNTERS];
unsigned pmc_ncounters;
struct pmc_counter_cpu *pmc_state;
uint32_t pmc_counters_loaded[MAX_CPUS];
uint64_t pmc_source_interval[ProfileSourceCount];

static void no_sampling_hook(unsigned i, bool freed)
{
    UNUSED(i);
    UNUSED(freed);
}
void (*pmc_counter_sampling_hook)(unsigned i, bool freed) = no_sampling_hook;

void pmc_counters_reset(void)
{
    kfree(pmc_state);
    pmc_state = NULL;
    pmc_ncounters = 0;
    memset(pmc_hw, 0, sizeof(pmc_hw));
    memset(pmc_counters_loaded, 0, sizeof(pmc_counters_loaded));
}

void pmc_counter_add(const struct pmc_counter_hw *hw)
{
    if (pmc_ncounters < PMC_MAX_COUNTERS)
        pmc_hw[pmc_ncounters++] = *hw;
}

size_t pmc_counters_bytes(void)
{
    return (size_t)pmc_ncounters * MAX_CPUS * sizeof(struct pmc_counter_cpu);
}

// Sized for MAX_CPUS, not ncpus: the Emon interface allows for every possible processor.
bool pmc_counters_alloc(void)
{
    pmc_state = kzalloc(pmc_counters_bytes());
    return pmc_state != NULL;
}

static bool counter_free(unsigned cpu, int i)
{
    return pmc_counter(cpu, (unsigned)i)->period == 0;
}

static int fixed_index(int fixed)
{
    if (fixed < 0)
        return -1;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (pmc_hw[i].kind == PMC_COUNTER_FIXED && pmc_hw[i].number == fixed)
            return (int)i;
    return -1;
}

// GP counter i may count an event allowed on the counters in mask.
static bool general_fits(unsigned i, uint32_t mask)
{
    return pmc_hw[i].kind == PMC_COUNTER_GENERAL && pmc_hw[i].number < 32 &&
           ((mask >> pmc_hw[i].number) & 1);
}

// Counting has reserved counter i's row or has a count loaded on it here
// (cpu is this CPU, interrupts off), or it is disabled on cpu (NtPmcAdmin).
static bool held_elsewhere(unsigned cpu, unsigned i)
{
    return ((pmc_rows_reserved >> i) & 1) || ((pmc_counters_loaded[cpu] >> i) & 1) ||
           pmc_row_off(cpu, i);
}

// Take counter i unless counting has reserved its row or it is disabled on
// cpu. The counter is taken first and the reservations and disabled rows read
// after a full fence: hal/rows.c sets a row's bit first and reads the counters
// after one, so one of two racing sides sees the other. It is taken stopped:
// the PMI, which may be an NMI (pmi=nmi) taken between any two of the enable's
// accesses, passes over it until the interface has loaded it
// (pmc_counter_loaded). Until then it holds whatever it held before: where an
// overflow is a counter's top bit come back clear (AMD before PerfMonV2,
// Intel version 1), a stale value would read as an overflow of a source that
// counted nothing.
static bool take(unsigned cpu, unsigned i, KPROFILE_SOURCE source, unsigned levels,
                 uint64_t interval)
{
    if (!counter_free(cpu, (int)i) || held_elsewhere(cpu, i))
        return false;
    struct pmc_counter_cpu *c = pmc_counter(cpu, i);
    c->source = source;
    c->levels = levels;
    c->stopped = 1;
    c->stretch = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); // stopped before the period makes it owned
    c->period = pmc_period_clamp(interval, pmc_hw[i].max_period);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!held_elsewhere(cpu, i)) {
        pmc_counter_sampling_hook(i, false);
        return true;
    }
    *c = (struct pmc_counter_cpu){0};
    return false;
}

int pmc_counter_claim(unsigned cpu, KPROFILE_SOURCE source, unsigned levels, int fixed,
                      uint32_t general_mask, uint64_t interval)
{
    int f = fixed_index(fixed);
    if (f >= 0 && take(cpu, (unsigned)f, source, levels, interval))
        return f;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (general_fits(i, general_mask) && take(cpu, i, source, levels, interval))
            return (int)i;
    return -1;
}

// The NMI is this CPU's own: a compiler barrier orders it against our stores.
void pmc_counter_loaded(unsigned cpu, unsigned i)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pmc_counter(cpu, i)->stopped = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void pmc_counter_stopping(unsigned cpu, unsigned i)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pmc_counter(cpu, i)->stopped = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

uint64_t pmc_enabled_bits(unsigned cpu)
{
    uint64_t m = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        const struct pmc_counter_cpu *c = pmc_counter(cpu, i);
        if ((c->period && !c->stopped) || ((pmc_counters_loaded[cpu] >> i) & 1))
            m |= 1ull << pmc_hw[i].status_bit;
    }
    return m;
}

int pmc_counter_find(unsigned cpu, KPROFILE_SOURCE source)
{
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        struct pmc_counter_cpu *c = pmc_counter(cpu, i);
        if (c->period != 0 && c->source == (unsigned)source)
            return (int)i;
    }
    return -1;
}

int pmc_counter_preferred(int fixed, uint32_t general_mask)
{
    int pick = fixed_index(fixed);
    for (unsigned i = 0; pick < 0 && i < pmc_ncounters; i++)
        if (general_fits(i, general_mask))
            pick = (int)i;
    return pick;
}

uint64_t pmc_period_clamp(uint64_t interval, uint64_t max_period)
{
    if (interval < PMC_MIN_INTERVAL)
        return PMC_MIN_INTERVAL;
    return interval > max_period ? max_period : interval;
}

uint64_t pmc_reload_value(const struct pmc_counter_hw *hw, uint64_t period, uint64_t now,
                          uint64_t *lost)
{
    uint64_t past = pmc_counter_wrapped(hw, now) ? now : 0; // events since the wrap
    *lost = past / period;
    return pmc_arm_value(hw, period - past % period);
}
