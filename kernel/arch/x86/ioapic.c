// IOAPIC: routes legacy ISA interrupts (serial, keyboard) to the boot CPU,
// honouring the MADT's interrupt source overrides (ISA IRQ 0 is usually GSI 2).
#include "lib/acpi.h"
#include "lib/kprintf.h"
#include "lib/memlayout.h"

#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/percpu.h"
#include "arch/x86/vectors.h"

#define IOREGSEL         0x00
#define IOWIN            0x10
#define IOAPIC_VER       0x01
#define IOAPIC_REDTBL(n) (0x10 + 2 * (n))

static uint32_t ioapic_read(volatile uint32_t *base, uint32_t reg)
{
    base[IOREGSEL / 4] = reg;
    return base[IOWIN / 4];
}

static void ioapic_write(volatile uint32_t *base, uint32_t reg, uint32_t v)
{
    base[IOREGSEL / 4] = reg;
    base[IOWIN / 4] = v;
}

void ioapic_init(void)
{
    for (unsigned i = 0; i < madt.nioapics; i++) { // mask every input
        volatile uint32_t *b = phys_to_virt(madt.ioapics[i].phys);
        unsigned n = ((ioapic_read(b, IOAPIC_VER) >> 16) & 0xFF) + 1;
        for (unsigned pin = 0; pin < n; pin++) {
            ioapic_write(b, IOAPIC_REDTBL(pin), 1u << 16);
            ioapic_write(b, IOAPIC_REDTBL(pin) + 1, 0);
        }
    }
}

void irq_route_isa(unsigned isa_irq, irq_handler_t handler)
{
    uint32_t gsi = isa_irq;
    uint16_t flags = 0;
    for (unsigned i = 0; i < madt.noverrides; i++)
        if (madt.overrides[i].isa_irq == isa_irq) {
            gsi = madt.overrides[i].gsi;
            flags = madt.overrides[i].flags;
        }
    irq_register(VEC_IRQ_BASE + isa_irq, handler);
    for (unsigned i = 0; i < madt.nioapics; i++) {
        volatile uint32_t *b = phys_to_virt(madt.ioapics[i].phys);
        unsigned n = ((ioapic_read(b, IOAPIC_VER) >> 16) & 0xFF) + 1;
        uint32_t base = madt.ioapics[i].gsi_base;
        if (gsi < base || gsi >= base + n)
            continue;
        uint32_t low = VEC_IRQ_BASE + isa_irq; // fixed delivery, physical destination
        if ((flags & 3) == 3)
            low |= 1u << 13; // active low
        if (((flags >> 2) & 3) == 3)
            low |= 1u << 15; // level triggered
        ioapic_write(b, IOAPIC_REDTBL(gsi - base) + 1, cpus[0].apic_id << 24);
        ioapic_write(b, IOAPIC_REDTBL(gsi - base), low);
        return;
    }
    kprintf("ioapic: no IOAPIC serves ISA IRQ %u (GSI %u)\n", isa_irq, gsi);
}
