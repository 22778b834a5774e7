// test=pmc: the HAL profile interface on this machine (QEMU: no PMU).
//
//   - the interface choice and per-source support are consistent: without a
//     PMU (TCG) only ProfileTime is supported and every other source says why;
//     with one (KVM -cpu host) every supported PMC source starts, delivers
//     samples whose IPs lie in the kernel's text while the kernel spins, and
//     stops, and several run at once;
//   - a PMI sent by self-IPI is counted as spurious and reports no sample;
//   - ProfileTime at 1,221, 10,000 and 78,125 (100 ns units) delivers the
//     expected number of ticks on every CPU: within one tick with the kernel
//     option icount (QEMU -icount shift=0,sleep=off), within 2% otherwise.
#include "lib/cmdline.h"
#include "lib/kprintf.h"
#include "lib/panic.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/percpu.h"
#include "arch/x86/timer.h"
#include "arch/x86/vectors.h"

#include "core/spinlock.h"

#include "pmc/hal/hal.h"
#include "pmc/hal/pmi.h"

#include "test/selftest.h"

static volatile uint64_t ticks[MAX_CPUS];
static volatile uint64_t per_source[ProfileSourceCount], bad_ips, kernel_ips;
static volatile uint64_t irqoff_samples, irqoff_in_section; // samples taken with IF=0
static volatile bool in_section;
extern char __kernel_start[], __text_end[];

static void count_sample(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    uint64_t ip = f->rip;
    bool user = intr_from_user(f);
    unsigned cpu = cpu_id();
    if (source < ProfileSourceCount)
        per_source[source]++;
    if (!user && ip >= (uint64_t)__kernel_start && ip < (uint64_t)__text_end)
        kernel_ips++;
    else if (!user)
        bad_ips++; // a kernel-mode sample outside the kernel's code: not a sane IP
    if (source == ProfileTime)
        ticks[cpu]++;
    if (!(f->rflags & RFLAGS_IF)) {
        irqoff_samples++;
        irqoff_in_section += in_section;
    }
}

static void spin_ms(uint64_t ms) // retire instructions: halted CPUs count nothing
{
    uint64_t end = clock_ns() + ms * 1000000;
    while (clock_ns() < end)
        __asm__ volatile("" ::: "memory");
}

// ProfileTime while CPU 0 spins inside a spin_lock_irqsave section: the
// maskable timer can only sample after the unlock, never with IF=0; the
// timer as NMI (profile_nmi=1) samples inside.
static struct spinlock section_lock = SPINLOCK_INIT("selftest irqoff");
static void irqoff_section(void)
{
    const char *reason = "";
    HalSetProfileInterval(1221);
    irqoff_samples = irqoff_in_section = 0;
    NTSTATUS s = HalStartProfileInterrupt(ProfileTime, &reason);
    for (int i = 0; i < 10; i++) {
        uint64_t flags = spin_lock_irqsave(&section_lock);
        in_section = true;
        spin_ms(5);
        in_section = false;
        spin_unlock_irqrestore(&section_lock, flags);
    }
    HalStopProfileInterrupt(ProfileTime, &reason);
    kprintf("# timer as NMI: %s; samples with IF=0 %lu, %lu of them in the section\n",
            timer_nmi ? "yes" : "no", irqoff_samples, irqoff_in_section);
    if (timer_nmi)
        check(NT_SUCCESS(s) && irqoff_in_section >= 10,
              "ProfileTime as NMI samples inside a spin_lock_irqsave section");
    else
        check(NT_SUCCESS(s) && irqoff_samples == 0,
              "the maskable ProfileTime never samples with interrupts off");
}

// With a PMU: start each supported PMC source alone, then all that fit together.
static void pmc_sources_sample(void)
{
    struct hal_profile_source_details d;
    unsigned started = 0, sampled = 0, together = 0;
    KPROFILE_SOURCE on[ProfileSourceCount];
    for (unsigned src = 1; src < ProfileSourceCount; src++) {
        if (!NT_SUCCESS(HalQueryProfileSource((KPROFILE_SOURCE)src, &d)) || !d.supported)
            continue;
        per_source[src] = 0;
        const char *reason = "";
        if (!NT_SUCCESS(HalStartProfileInterrupt((KPROFILE_SOURCE)src, &reason))) {
            kprintf("# %s: start failed: %s\n", d.name, reason);
            continue;
        }
        started++;
        spin_ms(50);
        HalStopProfileInterrupt((KPROFILE_SOURCE)src, &reason);
        kprintf("# %s: %lu samples in 50 ms\n", d.name, per_source[src]);
        sampled += per_source[src] > 0;
    }
    check(started > 0 && sampled == started && bad_ips == 0,
          "every supported PMC source starts, samples at kernel IPs, and stops");
    for (unsigned src = 1; src < ProfileSourceCount; src++) {
        const char *reason = "";
        if (NT_SUCCESS(HalQueryProfileSource((KPROFILE_SOURCE)src, &d)) && d.supported &&
            NT_SUCCESS(HalStartProfileInterrupt((KPROFILE_SOURCE)src, &reason)))
            on[together++] = (KPROFILE_SOURCE)src;
    }
    spin_ms(50);
    unsigned all = 0;
    for (unsigned i = 0; i < together; i++) {
        const char *reason = "";
        HalStopProfileInterrupt(on[i], &reason);
        all += per_source[on[i]] > 0;
    }
    kprintf("# %u sources ran at once\n", together);
    check(together >= 2 && all == together, "several PMC sources run at once");
}

// Each CPU's ProfileTime runs from a moment inside the start call to a moment
// inside the stop call: its expiries must lie between the time outside both
// calls and the time including them, divided by the period (exactly, with
// icount; within 2% more either way without, where the calls are the only
// slack), and each expiry is either a delivered tick or counted as missed (a
// vCPU the host stopped for a period or more gets one tick, not a burst).
static bool profile_time_at(uint64_t interval, uint64_t ms, bool strict)
{
    char name[96];
    uint64_t actual = HalSetProfileInterval(interval);
    for (unsigned i = 0; i < ncpus; i++)
        ticks[i] = 0;
    const char *reason = "";
    uint64_t t0 = clock_ns();
    NTSTATUS s = HalStartProfileInterrupt(ProfileTime, &reason);
    uint64_t t1 = clock_ns();
    sleep_ms(ms);
    uint64_t t2 = clock_ns();
    NTSTATUS s2 = HalStopProfileInterrupt(ProfileTime, &reason);
    uint64_t t3 = clock_ns(), period = actual * 100;
    uint64_t least = (t2 - t1) / period, most = (t3 - t0) / period + 1;
    uint64_t tol = strict ? 0 : least / 50;
    bool ok = NT_SUCCESS(s) && NT_SUCCESS(s2) && actual == interval;
    for (unsigned i = 0; i < ncpus; i++) {
        uint64_t got, missed;
        timer_periodic_stats(i, TIMER_SLOT_PROFILE, &got, &missed);
        kprintf("# ProfileTime %lu: CPU %u %lu expiries (%lu delivered, %lu missed), expected "
                "%lu..%lu\n",
                interval, i, got, ticks[i], missed, least, most);
        ok &= got + tol >= least && got <= most + tol && ticks[i] + missed == got;
    }
    snprintf(name, sizeof name, "ProfileTime at %lu delivers %s ticks on every CPU", interval,
             strict ? "exactly the expected" : "within 2% of the expected");
    check(ok, name);
    return ok;
}

void selftest_pmc(void)
{
    bool strict = cmdline_has("icount");
    kprintf("KTAP version 1\n1..10\n");

    HAL_PROFILE_INTERRUPT_HANDLER h = count_sample;
    check(NT_SUCCESS(HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof h, &h)),
          "HalSetSystemInformation registers the profile interrupt handler");

    struct hal_profile_source_details d;
    bool time_ok = NT_SUCCESS(HalQueryProfileSource(ProfileTime, &d)) && d.supported &&
                   d.default_interval == 78125 && d.min_interval == 1221 &&
                   d.max_interval == 10000000;
    check(time_ok, "ProfileTime is supported: default 78,125, range [1,221, 10,000,000]");

    unsigned supported = 0, with_reason = 0;
    for (unsigned src = 1; src < ProfileSourceCount; src++)
        if (NT_SUCCESS(HalQueryProfileSource((KPROFILE_SOURCE)src, &d))) {
            supported += d.supported;
            with_reason += !d.supported && d.reason && d.reason[0];
            if (!d.supported && src == ProfileTotalIssues)
                kprintf("# %s: %s\n", d.name, d.reason);
        }
    kprintf("# %u PMC sources supported\n", supported);
    if (supported == 0) { // no PMU (QEMU TCG)
        check(with_reason == ProfileSourceCount - 1,
              "without a PMU only ProfileTime is supported; every other source says why");
        const char *reason = "";
        NTSTATUS s = HalStartProfileInterrupt(ProfileInstructionRetired, &reason);
        check(s == STATUS_NOT_SUPPORTED && reason[0], "starting a PMC source fails with a reason");
    } else { // a PMU (KVM -cpu host)
        pmc_sources_sample();
    }

    struct pmc_pmi_stats before, after;
    pmc_pmi_stats(0, &before);
    lapic_send_ipi_shorthand(IPI_SELF, VEC_PMI);
    sleep_ms(5);
    pmc_pmi_stats(0, &after);
    check(after.spurious == before.spurious + 1 && after.samples == before.samples,
          "a PMI injected by self-IPI is counted as spurious and ignored");

    profile_time_at(1221, 100, strict);
    profile_time_at(10000, 200, strict);
    profile_time_at(78125, strict ? 800 : 1600, strict);
    kprintf("# kernel-text samples %lu, kernel samples outside the text %lu\n", kernel_ips,
            bad_ips);
    check(bad_ips == 0, "every kernel-mode sample IP lies in the kernel's text");
    irqoff_section();
}

// test=nmipanic (booted with profile_nmi=1): a panic while every CPU samples
// by NMI must still stop the others (their next NMI is a stop) and print its
// backtrace; the panicking CPU ignores its own sampling NMIs.
void selftest_panic_sampling(void)
{
    const char *reason = "";
    HalSetProfileInterval(1221);
    NTSTATUS s = HalStartProfileInterrupt(ProfileTime, &reason);
    spin_ms(20);
    panic("selftest: deliberate panic while sampling (timer as NMI: %s, start 0x%x)",
          timer_nmi ? "yes" : "no", (unsigned)s);
}
