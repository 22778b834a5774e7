// The performance-monitoring interrupt.
//
// Order (as Linux's intel_pmu_handle_irq does it, arch/x86/events/intel/core.c): freeze
// all counters (global ctrl 0) -> read the overflow status (nothing: spurious,
// count and ignore) -> for each overflowed counter report (source, IP) and
// re-arm it for exactly its next period -> acknowledge (write 1 to clear) ->
// re-read, at most PMC_PMI_MAX_LOOPS times -> unmask the LVTPC (Intel masks it
// on delivery) -> restore the global enables. Version-1 Intel and
// pre-PerfMonV2 AMD have no global registers: the interface finds overflows by
// the counter's top bit, freezing is a no-op, and the LVTPC is unmasked first
// (see handle); version-1 Intel re-enables its re-armed counters only in
// ThawCounters.
//
// Throttle: the handler's cost is time, not samples. Under a hypervisor every
// MSR access traps to the host (microseconds each), so a sample count that is
// harmless on bare metal can fill the CPU. Each CPU therefore budgets the time
// it spends here: at most PMC_PMI_MAX_PERCENT of every PMC_THROTTLE_WINDOW_NS
// window (Linux's perf_cpu_time_max_percent), and at most PMC_MAX_SAMPLE_RATE
// samples per second. A counter is never stopped for this; its next arm is
// stretched to a power-of-two multiple of its period instead:
//   - once the window's budget is nearly spent, far enough that the next
//     overflow falls after the window ends, at the event rate seen since the
//     previous PMI (the window's remaining PMIs cost nothing more);
//   - a window that ran out doubles every period on the CPU from then on, and
//     one that used under a quarter of the budget halves them again (the
//     adapted rate, pmc_pmi_stats.shift).
// The periods stretched over are counted per source as "throttled", so
// samples + throttled + lost still account for every period of events.
//
// Runs with interrupts off; allocates nothing; each CPU touches only its own
// state. The re-arm uses the per-CPU copy of the period (pmc_counter_cpu.period,
// fixed at start), so an interval set meanwhile applies at the next start.
// As a vector, pmi_interrupt (arch/x86/trap.c) sends the LAPIC EOI after we
// return; as an NMI, no EOI is due.
#include "pmc/hal/pmi.h"

#include "lib/cmdline.h"
#include "lib/param.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/lapic.h"
#include "arch/x86/nmi.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trapframe.h"
#include "arch/x86/vectors.h"

#include "core/swevent.h"

#include "pmc/hal/deliver.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmu_regs.h"
#include "pmc/hal/trace.h"

#define WINDOW_SAMPLES   ((uint64_t)PMC_MAX_SAMPLE_RATE * PMC_THROTTLE_WINDOW_NS / 1000000000ull)
#define WINDOW_BUDGET_NS ((uint64_t)PMC_THROTTLE_WINDOW_NS * PMC_PMI_MAX_PERCENT / 100)

struct pmi_cpu {
    struct pmc_pmi_stats stats;
    uint64_t window;         // clock_ns() / PMC_THROTTLE_WINDOW_NS of the current window
    uint64_t window_ns;      // handler time spent in it
    uint64_t window_samples; // samples taken in it
    uint64_t cost_ns;        // recent handler duration: rises at once, decays 1/8 per PMI
    uint64_t entry_ns;       // clock_ns() at this PMI's entry
    uint64_t prev_entry_ns;  // ... and at the previous PMI's
    uint64_t prev_took_ns;   // how long the previous PMI took
    bool squeezed;           // this window's budget ran out
};

static struct pmi_cpu pmi_cpus[MAX_CPUS];
static uint64_t throttled_by_source[ProfileSourceCount];

// A new window: adapt the rate from the one that ended. Halving at under a
// quarter of the budget at most doubles the share, so the rate does not swing.
static void window_roll(struct pmi_cpu *pc, uint64_t now)
{
    uint64_t w = now / PMC_THROTTLE_WINDOW_NS;
    if (w == pc->window)
        return;
    if (pc->squeezed && pc->stats.shift < PMC_THROTTLE_MAX_SHIFT)
        pc->stats.shift++;
    else if (!pc->squeezed && pc->stats.shift && pc->window_ns < WINDOW_BUDGET_NS / 4)
        pc->stats.shift--;
    pc->window = w;
    pc->window_ns = 0;
    pc->window_samples = 0;
    pc->squeezed = false;
}

static unsigned log2_ceil(uint64_t x)
{
    unsigned n = 0;
    while (n < 63 && (1ull << n) < x)
        n++;
    return n;
}

// log2 of the periods counter c's next arm should cover (see the top comment).
static unsigned stretch_for(struct pmi_cpu *pc, const struct pmc_counter_cpu *c,
                            uint64_t max_period)
{
    unsigned s = pc->stats.shift;
    uint64_t now = clock_ns();
    uint64_t spent = pc->window_ns + (now - pc->entry_ns);
    if (spent + 2 * pc->cost_ns >= WINDOW_BUDGET_NS || pc->window_samples >= WINDOW_SAMPLES) {
        if (!pc->squeezed)
            pc->stats.squeezed++;
        pc->squeezed = true;
        uint64_t end = (pc->window + 1) * PMC_THROTTLE_WINDOW_NS;
        // The last arm's 2^stretch periods were counted between the end of the
        // previous PMI and the start of this one (the handler counts little:
        // its counters are frozen).
        uint64_t gap = pc->entry_ns - pc->prev_entry_ns;
        gap = gap > pc->prev_took_ns ? gap - pc->prev_took_ns : 1;
        uint64_t left = end > now ? end - now : 0;
        // At most PMC_SQUEEZE_MAX_SHIFT more: a burst misjudged as a rate
        // must not silence the counter for long after the burst ends (2^16
        // periods of 1,000 events are 6.5e9 events per 10 ms window).
        unsigned need = c->stretch + log2_ceil((left + gap - 1) / gap);
        if (need > s + PMC_SQUEEZE_MAX_SHIFT)
            need = s + PMC_SQUEEZE_MAX_SHIFT;
        if (need > s)
            s = need;
    }
    if (s > PMC_THROTTLE_MAX_SHIFT)
        s = PMC_THROTTLE_MAX_SHIFT;
    while (s && c->period > (max_period >> s)) // never beyond what the counter can load
        s--;
    return s;
}

// Report one overflow of counter i and re-arm it.
static void report_overflow(const struct halp_profile_interface *pi, struct pmi_cpu *pc,
                            unsigned cpu, unsigned i, KPROFILE_SOURCE source,
                            const struct intr_frame *f)
{
    struct pmc_counter_cpu *c = pmc_counter(cpu, i);
    pc->stats.samples++;
    pc->window_samples++;
    halp_deliver_sample(source, f);
    uint64_t skipped = (1ull << c->stretch) - 1; // the arm covered 2^stretch periods
    if (skipped) {
        pc->stats.throttled += skipped;
        __atomic_fetch_add(&throttled_by_source[source], skipped, __ATOMIC_RELAXED);
    }
    unsigned s = stretch_for(pc, c, pmc_hw[i].max_period);
    if (s)
        PMC_TRACE_STEP(PMC_STEP_STRETCH, source, 1ull << s);
    uint64_t lost = 0;
    pi->ReloadCounter(i, (uint64_t)c->period << s, &lost);
    c->stretch = s;
    pc->stats.lost += lost << s;
}

// The overflow keeps coming back: stop every counter on this CPU.
static void reset_stuck(const struct halp_profile_interface *pi, struct pmi_cpu *pc, unsigned cpu,
                        uint64_t mask)
{
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        struct pmc_counter_cpu *c = pmc_counter(cpu, i);
        if (c->period && !c->stopped)
            pi->StopCounter(i);
    }
    pi->AcknowledgeOverflow(mask);
    pc->stats.stuck++;
    PMC_TRACE_STEP(PMC_STEP_STUCK, PMC_TRACE_NO_SOURCE, PMC_PMI_MAX_LOOPS);
}

// Freeze, sample and re-arm, acknowledge, unmask, thaw. Where nothing
// freezes (Intel version 1, AMD before PerfMonV2) the other counters keep
// counting, the handler's own events included, so the LVTPC is unmasked
// first: an overflow after that raises a PMI of its own, taken when this one
// returns, instead of signalling a masked LVTPC after the last re-check and
// waiting, unreported, for an unrelated PMI to find it with that PMI's IP.
// Linux's x86_pmu_handle_irq (arch/x86/events/core.c), the handler of those
// PMUs, unmasks at its top too. With the counters frozen, the unmask waits
// until the overflows are acknowledged, as Linux's intel_pmu_handle_irq does
// on recent parts ("late ack"), and nothing can overflow meanwhile.
static void handle(const struct halp_profile_interface *pi, struct pmi_cpu *pc, unsigned cpu,
                   const struct intr_frame *f)
{
    struct overflow_status ovf;
    bool frozen = pi->FreezeCounters();
    if (!frozen)
        pmc_lapic_write(LAPIC_LVT_PMC, VEC_PMI);
    pi->CheckOverflowStatus(&ovf);
    if (ovf.Number == 0 && ovf.Mask == 0) {
        pc->stats.spurious++;
        PMC_TRACE_STEP(PMC_STEP_SPURIOUS, PMC_TRACE_NO_SOURCE, 0);
    }
    for (unsigned loops = 0; ovf.Number || ovf.Mask; loops++) {
        if (loops == PMC_PMI_MAX_LOOPS) {
            reset_stuck(pi, pc, cpu, ovf.Mask);
            break;
        }
        for (unsigned k = 0; k < ovf.Number; k++)
            report_overflow(pi, pc, cpu, ovf.Counter[k], ovf.Source[k], f);
        pi->AcknowledgeOverflow(ovf.Mask);
        pi->CheckOverflowStatus(&ovf);
    }
    if (frozen)
        pmc_lapic_write(LAPIC_LVT_PMC, VEC_PMI);
    pi->ThawCounters();
}

void pmc_pmi_handler(const struct intr_frame *f)
{
    const struct halp_profile_interface *pi = READ_ONCE(halp_profile_interface);
    unsigned cpu = cpu_id();
    struct pmi_cpu *pc = &pmi_cpus[cpu];

    pc->prev_entry_ns = pc->entry_ns;
    pc->entry_ns = clock_ns();
    window_roll(pc, pc->entry_ns);
    pc->stats.pmis++;
    swevent_cpus[cpu].pmis++; // the count software events read (core/swevent.h)
    PMC_TRACE_STEP(PMC_STEP_PMI, PMC_TRACE_NO_SOURCE, 0);
    if (pi->FreezeCounters == NULL) { // no PMU (or shut down): nothing can have overflowed
        pc->stats.spurious++;
        PMC_TRACE_STEP(PMC_STEP_SPURIOUS, PMC_TRACE_NO_SOURCE, 0);
    } else {
        handle(pi, pc, cpu, f);
    }

    uint64_t took = clock_ns() - pc->entry_ns;
    pc->prev_took_ns = took;
    pc->window_ns += took;
    pc->stats.handler_ns += took;
    if (pc->window_ns > pc->stats.max_window_ns)
        pc->stats.max_window_ns = pc->window_ns;
    pc->cost_ns = took > pc->cost_ns ? took : pc->cost_ns - pc->cost_ns / 8;
}

bool pmc_pmi_as_nmi;

void pmc_pmi_choose(void)
{
    char v[8];
    pmc_pmi_as_nmi = cmdline_get("pmi", v, sizeof v) && strcmp(v, "nmi") == 0;
    if (pmc_pmi_as_nmi)
        nmi_register(pmc_pmi_nmi_handler); // the same handler from the NMI dispatcher
}

// An NMI: a PMI only where a PMU is in use (an NMI also stops CPUs for a
// panic, or is ProfileTime's timer); the handler itself tells an overflow
// from nothing (spurious: a shared NMI with no overflow counts as one).
bool pmc_pmi_nmi_handler(const struct intr_frame *f)
{
    const struct halp_profile_interface *pi = READ_ONCE(halp_profile_interface);
    if (!pmc_pmi_as_nmi || pi->FreezeCounters == NULL)
        return false;
    pmc_pmi_handler(f);
    return true;
}

void pmc_pmi_stats(unsigned cpu, struct pmc_pmi_stats *out)
{
    *out = cpu < MAX_CPUS ? pmi_cpus[cpu].stats : (struct pmc_pmi_stats){0};
}

uint64_t pmc_pmi_throttled(KPROFILE_SOURCE source)
{
    if ((unsigned)source >= ProfileSourceCount)
        return 0;
    return __atomic_load_n(&throttled_by_source[source], __ATOMIC_RELAXED);
}

void pmc_pmi_reset(void)
{
    memset(pmi_cpus, 0, sizeof(pmi_cpus));
    memset(throttled_by_source, 0, sizeof(throttled_by_source));
}
