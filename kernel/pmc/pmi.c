// The performance-monitoring interrupt.
//
// Order (x86-pmu.md): freeze all counters (global ctrl 0) -> read the overflow
// status (nothing: spurious, count and ignore) -> for each overflowed counter
// report (source, IP) and re-arm it for exactly its next period -> acknowledge
// (write 1 to clear) -> re-read, at most PMC_PMI_MAX_LOOPS times -> unmask the
// LVTPC (Intel masks it on delivery) -> restore the global enables. Version-1
// Intel and pre-PerfMonV2 AMD have no global registers: the interface finds
// overflows by the counter's top bit and freezing is a no-op.
//
// Storms: each CPU may take PMC_MAX_SAMPLE_RATE samples per second, measured
// over PMC_THROTTLE_WINDOW_NS windows; the source whose sample crosses the limit
// is stopped on that CPU (it keeps its counter until HalStopProfileInterrupt)
// and counted, so a tiny period costs a bounded number of interrupts, never a
// hang.
//
// Runs with interrupts off; allocates nothing; each CPU touches only its own
// state. The dispatcher sends the LAPIC EOI after we return.
#include "pmc/pmi.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trapframe.h"
#include "arch/x86/vectors.h"
#include "arch/x86/clock.h"
#include "lib/param.h"
#include "arch/x86/percpu.h"
#include "lib/string.h"
#include "pmc/hal_interface.h"
#include "pmc/pmc.h"
#include "pmc/trace.h"

#define WINDOW_SAMPLES ((uint64_t)PMC_MAX_SAMPLE_RATE * PMC_THROTTLE_WINDOW_NS / 1000000000ull)

struct pmi_cpu {
    struct pmc_pmi_stats stats;
    uint64_t window_start;   // clock_ns() when the current rate window began
    uint64_t window_samples; // samples taken in it
};

static struct pmi_cpu pmi_cpus[MAX_CPUS];
static uint64_t throttled_by_source[ProfileSourceCount];

// Report one overflow of counter i and re-arm it, or stop it if this CPU is
// over its sample rate.
static void sample(const struct halp_profile_interface *pi, struct pmi_cpu *pc, unsigned i,
                   KPROFILE_SOURCE source, const struct trapframe *tf)
{
    HAL_PROFILE_INTERRUPT_HANDLER handler = READ_ONCE(halp_profile_handler);
    pc->stats.samples++;
    PMC_TRACE_STEP(PMC_STEP_SAMPLE, source, tf->rip);
    if (handler)
        handler(source, tf_intr_frame(tf));
    if (++pc->window_samples > WINDOW_SAMPLES) {
        pi->StopCounter(i);
        pc->stats.throttled++;
        __atomic_fetch_add(&throttled_by_source[source], 1, __ATOMIC_RELAXED);
        PMC_TRACE_STEP(PMC_STEP_THROTTLE, source, pc->window_samples);
        return;
    }
    uint64_t lost = 0;
    pi->ReloadCounter(i, &lost);
    pc->stats.lost += lost;
}

// The overflow keeps coming back: stop every counter on this CPU.
static void reset_stuck(const struct halp_profile_interface *pi, struct pmi_cpu *pc, unsigned cpu,
                        uint64_t mask)
{
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        struct pmc_counter *c = pmc_counter(cpu, i);
        if (c->period && !c->stopped)
            pi->StopCounter(i);
    }
    pi->AcknowledgeOverflow(mask);
    pc->stats.stuck++;
    PMC_TRACE_STEP(PMC_STEP_STUCK, PMC_TRACE_NO_SOURCE, PMC_PMI_MAX_LOOPS);
}

void pmc_pmi_handler(struct trapframe *tf)
{
    const struct halp_profile_interface *pi = READ_ONCE(halp_profile_interface);
    unsigned cpu = cpu_id();
    struct pmi_cpu *pc = &pmi_cpus[cpu];
    struct overflow_status ovf;

    pc->stats.pmis++;
    PMC_TRACE_STEP(PMC_STEP_PMI, PMC_TRACE_NO_SOURCE, 0);
    if (pi->FreezeCounters == NULL) { // no PMU: nothing can have overflowed
        pc->stats.spurious++;
        PMC_TRACE_STEP(PMC_STEP_SPURIOUS, PMC_TRACE_NO_SOURCE, 0);
        return;
    }

    pi->FreezeCounters();
    pi->CheckOverflowStatus(&ovf);
    if (ovf.Number == 0 && ovf.Mask == 0) {
        pc->stats.spurious++;
        PMC_TRACE_STEP(PMC_STEP_SPURIOUS, PMC_TRACE_NO_SOURCE, 0);
    } else {
        uint64_t now = clock_ns();
        if (now - pc->window_start >= PMC_THROTTLE_WINDOW_NS) {
            pc->window_start = now;
            pc->window_samples = 0;
        }
        for (unsigned loops = 0; ovf.Number || ovf.Mask; loops++) {
            if (loops == PMC_PMI_MAX_LOOPS) {
                reset_stuck(pi, pc, cpu, ovf.Mask);
                break;
            }
            for (unsigned k = 0; k < ovf.Number; k++)
                sample(pi, pc, ovf.Counter[k], ovf.Source[k], tf);
            pi->AcknowledgeOverflow(ovf.Mask);
            pi->CheckOverflowStatus(&ovf);
        }
    }
    pmc_lapic_write(LAPIC_LVT_PMC, VEC_PMI);
    pi->ThawCounters();
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
