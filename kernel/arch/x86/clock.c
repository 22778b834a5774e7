// TSC and LAPIC-timer calibration, once, on the boot CPU.
//
// Preferred: frequencies published by CPUID (leaf 0x15 for the TSC; a KVM-style
// hypervisor's leaf 0x40000010 for both). Otherwise both are measured together
// against PIT channel 2 (1,193,182 Hz) over CALIBRATE_MS.
#include "arch/x86/clock.h"

#include "lib/kprintf.h"
#include "lib/panic.h"
#include "lib/param.h"

#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/lapic.h"
#include "arch/x86/vectors.h"

#define PIT_HZ 1193182ull

uint64_t tsc_hz, lapic_timer_hz, boot_tsc;
static uint64_t ns_mult; // ns = (tsc * ns_mult) >> 32

static void pit_measure(uint64_t *tsc_delta, uint64_t *lapic_delta, uint64_t *pit_ticks)
{
    uint16_t count = (uint16_t)(PIT_HZ * CALIBRATE_MS / 1000);
    outb(0x61, (inb(0x61) & ~0x03) | 0x00); // gate low, speaker off
    outb(0x43, 0xB0);                       // channel 2, lo/hi byte, mode 0
    outb(0x42, count & 0xFF);
    outb(0x42, count >> 8);
    lapic_write(LAPIC_TIMER_DIV, 0xB); // divide by 1
    lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_TIMER);
    lapic_write(LAPIC_TIMER_INIT, 0xFFFFFFFF);
    uint32_t l0 = lapic_read(LAPIC_TIMER_CUR);
    uint64_t t0 = rdtsc();
    outb(0x61, (inb(0x61) & ~0x02) | 0x01); // gate high: counting starts
    while (!(inb(0x61) & 0x20))             // OUT2 goes high at terminal count
        cpu_relax();
    uint64_t t1 = rdtsc();
    uint32_t l1 = lapic_read(LAPIC_TIMER_CUR);
    lapic_write(LAPIC_TIMER_INIT, 0);
    *tsc_delta = t1 - t0;
    *lapic_delta = l0 - l1;
    *pit_ticks = count;
}

void clock_calibrate(void)
{
    const char *how = "PIT";
    uint32_t max = cpuid(0, 0).eax;
    if (max >= 0x15) {
        struct cpuid_regs r = cpuid(0x15, 0);
        if (r.eax && r.ebx && r.ecx)
            tsc_hz = (uint64_t)r.ecx * r.ebx / r.eax;
    }
    if ((cpuid(1, 0).ecx & CPUID1_ECX_HYPERVISOR) && cpuid(0x40000000, 0).eax >= 0x40000010) {
        struct cpuid_regs r = cpuid(0x40000010, 0);
        if (r.eax && r.ebx) {
            tsc_hz = (uint64_t)r.eax * 1000;
            lapic_timer_hz = (uint64_t)r.ebx * 1000;
            how = "CPUID 0x40000010";
        }
    }
    // A vCPU the host stops during the window can come back after the LAPIC
    // counter ran out: such a measurement is implausible and made again.
    uint64_t published_tsc = tsc_hz;
    for (int tries = 0; tries < 5 && (!tsc_hz || !lapic_timer_hz || lapic_timer_hz >= (1ull << 32));
         tries++) {
        uint64_t dt, dl, ticks;
        pit_measure(&dt, &dl, &ticks);
        tsc_hz = published_tsc ? published_tsc : dt * PIT_HZ / ticks;
        lapic_timer_hz = dl * PIT_HZ / ticks;
    }
    if (tsc_hz < 1000000 || lapic_timer_hz < 1000 || lapic_timer_hz >= (1ull << 32))
        panic("clock: calibration failed (TSC %lu Hz, LAPIC %lu Hz)", tsc_hz, lapic_timer_hz);
    ns_mult = (1000000000ull << 32) / tsc_hz; // fits: 10^9 < 2^32
    kprintf("clock: TSC %lu.%03lu MHz, LAPIC timer %lu.%03lu MHz (%s)\n", tsc_hz / 1000000,
            tsc_hz / 1000 % 1000, lapic_timer_hz / 1000000, lapic_timer_hz / 1000 % 1000, how);
}

uint64_t tsc_to_ns(uint64_t tsc)
{
    return (uint64_t)(((unsigned __int128)tsc * ns_mult) >> 32);
}

uint64_t ns_to_tsc(uint64_t ns)
{
    // Split so no product exceeds 64 bits for TSCs up to 18 GHz.
    return ns / 1000000000ull * tsc_hz + ns % 1000000000ull * tsc_hz / 1000000000ull;
}

uint64_t clock_ns(void)
{
    return tsc_to_ns(rdtsc() - boot_tsc);
}

void udelay(uint64_t us)
{
    uint64_t end = rdtsc() + us * tsc_hz / 1000000;
    while (rdtsc() < end)
        cpu_relax();
}
