// kernel/arch/x86/lapic.c's IPIs in x2APIC mode: every write of the ICR MSR
// comes after MFENCE;LFENCE. A WRMSR to an x2APIC register is not
// serializing, so without the fence the stores before it (smp.c's call_fn and
// call_arg) may not be visible to the target CPU when the IPI arrives (Intel
// SDM vol. 3A, "x2APIC Register Behavior"; Linux's weak_wrmsr_fence,
// arch/x86/include/asm/barrier.h).
#include <stdint.h>
#include <string.h>
#include "arch/x86/cpuid.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "harness.h"

// What the CPU was asked to do, in order: 'F' a fence, 'W' a wrmsr of the ICR,
// 'w' any other wrmsr.
static char ops[64];
static unsigned nops;

void wrmsr_fence(void)
{
    if (nops < sizeof ops - 1)
        ops[nops++] = 'F';
}

void wrmsr(uint32_t msr, uint64_t value)
{
    (void)value;
    if (nops < sizeof ops - 1)
        ops[nops++] = msr == MSR_X2APIC_BASE + (LAPIC_ICR >> 4) ? 'W' : 'w';
}

uint64_t rdmsr(uint32_t msr)
{
    (void)msr;
    return 0;
}

struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
    (void)leaf;
    (void)subleaf;
    return (struct cpuid_regs){0, 0, 0, 0};
}

uint32_t lapic_read(uint32_t reg)
{
    (void)reg;
    return 0;
}

void lapic_write(uint32_t reg, uint32_t value)
{
    wrmsr(MSR_X2APIC_BASE + (reg >> 4), value);
}

void lapic_eoi(void)
{
    lapic_write(LAPIC_EOI, 0);
}

// True when every ICR write in ops is right after a fence.
static bool fenced(void)
{
    for (unsigned i = 0; i < nops; i++)
        if (ops[i] == 'W' && (i == 0 || ops[i - 1] != 'F'))
            return false;
    return strchr(ops, 'W') != NULL;
}

void test_lapic(void)
{
    lapic_x2 = true;
    static const char *const what[] = {"lapic_send_ipi", "lapic_send_ipi_shorthand",
                                       "lapic_send_nmi_all_but_self", "lapic_send_init",
                                       "lapic_send_sipi"};
    for (unsigned k = 0; k < 5; k++) {
        memset(ops, 0, sizeof ops);
        nops = 0;
        switch (k) {
        case 0: lapic_send_ipi(3, 0x40); break;
        case 1: lapic_send_ipi_shorthand(IPI_ALL_BUT_SELF, 0x41); break;
        case 2: lapic_send_nmi_all_but_self(); break;
        case 3: lapic_send_init(3); break;
        default: lapic_send_sipi(3, 8); break;
        }
        CHECK(fenced(), "lapic (x2APIC): %s: MFENCE;LFENCE before the ICR wrmsr (%s)", what[k],
              ops);
    }
    lapic_x2 = false;
}
