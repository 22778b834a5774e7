// Local APIC access in xAPIC (MMIO) or x2APIC (MSR) mode.
//
// x2APIC is used when CPUID offers it (KVM -cpu host does; QEMU TCG does not):
// its registers are MSRs 0x800 + offset/16 and the ICR is a single 64-bit MSR.
#include "arch/x86/lapic.h"

#include "lib/acpi.h"
#include "lib/cmdline.h"
#include "lib/memlayout.h"

#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"

volatile uint32_t *lapic_mmio;
bool lapic_x2;
bool lapic_ready; // registers usable (panic checks it before sending NMIs)

bool lapic_x2apic(void)
{
    return lapic_x2;
}

uint32_t lapic_id(void)
{
    uint32_t id = lapic_read(LAPIC_ID);
    return lapic_x2 ? id : id >> 24;
}

// The boot CPU's APIC id before the LAPIC is set up, from CPUID.
uint32_t lapic_boot_id(void)
{
    if (cpuid(0, 0).eax >= 0xB && (cpuid(1, 0).ecx & CPUID1_ECX_X2APIC))
        return cpuid(0xB, 0).edx; // the x2APIC id, valid in both modes
    return cpuid(1, 0).ebx >> 24;
}

static void enable_mode(void)
{
    uint64_t base = rdmsr(MSR_IA32_APIC_BASE);
    base |= APIC_BASE_ENABLE;
    if (lapic_x2)
        base |= APIC_BASE_X2APIC;
    wrmsr(MSR_IA32_APIC_BASE, base);
}

void lapic_init_bsp(void)
{
    lapic_x2 = (cpuid(1, 0).ecx & CPUID1_ECX_X2APIC) && !cmdline_has("nox2apic");
    lapic_mmio = phys_to_virt(madt.lapic_phys ? madt.lapic_phys : 0xFEE00000);
}

void lapic_init_cpu(void)
{
    enable_mode();
    lapic_write(LAPIC_TPR, 0);
    lapic_write(LAPIC_LVT_LINT0, LVT_MASKED | VEC_LINT0);
    lapic_write(LAPIC_LVT_LINT1, LVT_MASKED | VEC_LINT1);
    lapic_write(LAPIC_LVT_PMC, LVT_MASKED | VEC_PMI);
    lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_TIMER);
    lapic_write(LAPIC_LVT_ERROR, VEC_ERROR);
    lapic_write(LAPIC_ESR, 0);
    lapic_write(LAPIC_SVR, 0x100 | VEC_SPURIOUS); // software enable
    lapic_eoi();
    lapic_ready = true;
}

// ICR fields: vector [7:0], delivery mode [10:8], level assert bit 14,
// shorthand [19:18]; the destination is in ICR_HI[31:24] (xAPIC) or ICR[63:32].
#define ICR_FIXED   (0u << 8)
#define ICR_NMI     (4u << 8)
#define ICR_INIT    (5u << 8)
#define ICR_STARTUP (6u << 8)
#define ICR_ASSERT  (1u << 14)
#define ICR_PENDING (1u << 12)
#define ICR_SELF    (1u << 18)
#define ICR_ALL     (2u << 18)
#define ICR_OTHERS  (3u << 18)

// x2APIC: a WRMSR to the ICR is not serializing and may send the IPI before
// earlier stores are globally visible (smp.c's call_fn and call_arg, read by
// the target's handler), so MFENCE;LFENCE goes first (Intel SDM vol. 3A,
// "x2APIC Register Behavior"; Linux's weak_wrmsr_fence before its x2APIC ICR
// writes). The xAPIC's ICR is uncached MMIO: its store is ordered after
// earlier stores already.
static void write_icr(uint32_t dest, uint32_t low)
{
    if (lapic_x2) {
        wrmsr_fence();
        wrmsr(MSR_X2APIC_BASE + (LAPIC_ICR >> 4), ((uint64_t)dest << 32) | low);
        return;
    }
    while (lapic_mmio[LAPIC_ICR / 4] & ICR_PENDING)
        cpu_relax();
    lapic_mmio[LAPIC_ICR_HI / 4] = dest << 24;
    lapic_mmio[LAPIC_ICR / 4] = low;
    while (lapic_mmio[LAPIC_ICR / 4] & ICR_PENDING)
        cpu_relax();
}

void lapic_send_ipi(uint32_t apic_id, unsigned vector)
{
    uint64_t f = irq_save();
    write_icr(apic_id, ICR_FIXED | ICR_ASSERT | vector);
    irq_restore(f);
}

void lapic_send_ipi_shorthand(enum ipi_dest dest, unsigned vector)
{
    uint32_t sh = dest == IPI_SELF ? ICR_SELF : dest == IPI_ALL ? ICR_ALL : ICR_OTHERS;
    uint64_t f = irq_save();
    write_icr(0, sh | ICR_FIXED | ICR_ASSERT | vector);
    irq_restore(f);
}

void lapic_send_nmi_all_but_self(void)
{
    write_icr(0, ICR_OTHERS | ICR_NMI | ICR_ASSERT);
}

// From an NMI, which may have interrupted write_icr between its two writes:
// only the low word (the self shorthand ignores the destination), or the
// x2APIC SELF IPI register.
void lapic_send_self_ipi_from_nmi(unsigned vector)
{
    if (lapic_x2) {
        wrmsr(MSR_X2APIC_BASE + 0x3F, vector); // SELF IPI (Intel SDM vol. 3A §10.12.11)
        return;
    }
    while (lapic_mmio[LAPIC_ICR / 4] & ICR_PENDING)
        cpu_relax();
    lapic_mmio[LAPIC_ICR / 4] = ICR_SELF | ICR_FIXED | ICR_ASSERT | vector;
}

void lapic_send_nmi_self(void)
{
    write_icr(0, ICR_SELF | ICR_NMI | ICR_ASSERT);
}

void lapic_send_init(uint32_t apic_id)
{
    write_icr(apic_id, ICR_INIT | ICR_ASSERT);
}

void lapic_send_sipi(uint32_t apic_id, uint8_t page)
{
    write_icr(apic_id, ICR_STARTUP | ICR_ASSERT | page);
}
