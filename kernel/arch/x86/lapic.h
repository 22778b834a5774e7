// Local APIC, in xAPIC (MMIO) or x2APIC (MSR) mode; callers use MMIO offsets.
#pragma once
#include "lib/types.h"

#define LAPIC_ID         0x020
#define LAPIC_VERSION    0x030
#define LAPIC_TPR        0x080
#define LAPIC_EOI        0x0B0
#define LAPIC_SVR        0x0F0
#define LAPIC_ESR        0x280
#define LAPIC_ICR        0x300 // x2APIC: one 64-bit MSR; xAPIC: low half, high at 0x310
#define LAPIC_ICR_HI     0x310
#define LAPIC_LVT_TIMER  0x320
#define LAPIC_LVT_PMC    0x340 // performance-monitoring counter overflow (LVTPC)
#define LAPIC_LVT_LINT0  0x350
#define LAPIC_LVT_LINT1  0x360
#define LAPIC_LVT_ERROR  0x370
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR  0x390
#define LAPIC_TIMER_DIV  0x3E0

#define LVT_MASKED             (1u << 16)
#define LVT_DELIVERY_NMI       (4u << 8)
#define LVT_TIMER_ONESHOT      (0u << 17)
#define LVT_TIMER_PERIODIC     (1u << 17)
#define LVT_TIMER_TSC_DEADLINE (2u << 17)

extern volatile uint32_t *lapic_mmio; // xAPIC registers (direct map)
extern bool lapic_x2;                 // x2APIC mode: registers are MSRs

#ifdef KERNEL_HOSTED
uint32_t lapic_read(uint32_t reg);
void lapic_write(uint32_t reg, uint32_t value);
void lapic_eoi(void);
#else
#include "arch/x86/msr.h"

// Inline: the timer and EOI writes are on every interrupt's path.

static inline uint32_t lapic_read(uint32_t reg)
{
    return lapic_x2 ? (uint32_t)rdmsr(MSR_X2APIC_BASE + (reg >> 4)) : lapic_mmio[reg / 4];
}

static inline void lapic_write(uint32_t reg, uint32_t value)
{
    if (lapic_x2)
        wrmsr(MSR_X2APIC_BASE + (reg >> 4), value);
    else
        lapic_mmio[reg / 4] = value;
}

static inline void lapic_eoi(void)
{
    lapic_write(LAPIC_EOI, 0);
}
#endif

void lapic_init_bsp(void);    // choose xAPIC or x2APIC from CPUID, map the registers
void lapic_init_cpu(void);    // enable this CPU's LAPIC, mask LINTs, set spurious vector
uint32_t lapic_id(void);      // this CPU's APIC id
uint32_t lapic_boot_id(void); // the APIC id, read before the LAPIC is set up (CPUID)
bool lapic_x2apic(void);      // true when running in x2APIC mode

// Interprocessor interrupts.
enum ipi_dest { IPI_SELF, IPI_ALL, IPI_ALL_BUT_SELF };
void lapic_send_ipi(uint32_t apic_id, unsigned vector);
void lapic_send_ipi_shorthand(enum ipi_dest dest, unsigned vector);
void lapic_send_nmi_all_but_self(void);
void lapic_send_nmi_self(void);
void lapic_send_self_ipi_from_nmi(unsigned vector); // timer.c's NMI
void lapic_send_init(uint32_t apic_id);
void lapic_send_sipi(uint32_t apic_id, uint8_t page);
