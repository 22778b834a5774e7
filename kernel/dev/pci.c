// PCI configuration space, configuration mechanism #1 (PCI Local Bus
// Specification 3.0, 3.2.2.3.2 "Software Generation of Configuration
// Transactions"): the address of a 32-bit register goes to CONFIG_ADDRESS
// (port 0xCF8) as enable bit 31, bus in bits 23:16, device in 15:11, function
// in 10:8 and the register's offset in 7:2; the register is then read or
// written at CONFIG_DATA (port 0xCFC). QEMU's pc and q35 machines, and the
// PC chipsets they model, decode both ports.
//
// The search reads every bus, slot and function rather than walking the
// bridges: 256 x 32 reads of an absent function's vendor ID (0xFFFF, 6.2.1)
// are a few milliseconds once at boot, and need no bridge code.
#include "dev/pci.h"

#include "arch/x86/cpu.h"
#include "core/spinlock.h"

#define CONFIG_ADDRESS 0xCF8
#define CONFIG_DATA    0xCFC

// Configuration header offsets (PCI 3.0, 6.1, figure 6-1).
#define PCI_ID          0x00 // vendor ID 15:0, device ID 31:16
#define PCI_COMMAND     0x04
#define PCI_HEADER_TYPE 0x0E // bit 7: a multi-function device
#define PCI_BAR0        0x10

// Command register bits (PCI 3.0, 6.2.2).
#define PCI_COMMAND_IO     0x1
#define PCI_COMMAND_MASTER 0x4

// The two ports are one address-then-data pair: a second CPU's address
// between them would redirect the first one's access.
static struct spinlock config_lock = SPINLOCK_INIT("pci config");

static uint32_t address(uint8_t bus, uint8_t slot, uint8_t func, uint8_t offset)
{
    return 1u << 31 | (uint32_t)bus << 16 | (uint32_t)slot << 11 | (uint32_t)func << 8 |
           (offset & 0xFCu);
}

static uint32_t read32_at(uint8_t bus, uint8_t slot, uint8_t func, uint8_t offset)
{
    uint64_t flags = spin_lock_irqsave(&config_lock);
    outl(CONFIG_ADDRESS, address(bus, slot, func, offset));
    uint32_t v = inl(CONFIG_DATA);
    spin_unlock_irqrestore(&config_lock, flags);
    return v;
}

uint32_t pci_read32(const struct pci_function *f, uint8_t offset)
{
    return read32_at(f->bus, f->slot, f->func, offset);
}

void pci_write16(const struct pci_function *f, uint8_t offset, uint16_t value)
{
    uint64_t flags = spin_lock_irqsave(&config_lock);
    outl(CONFIG_ADDRESS, address(f->bus, f->slot, f->func, offset));
    outw((uint16_t)(CONFIG_DATA + (offset & 2)), value);
    spin_unlock_irqrestore(&config_lock, flags);
}

// Fills *out when bus:slot.func is the device asked for.
static bool matches(uint8_t bus, uint8_t slot, uint8_t func, uint32_t id, struct pci_function *out)
{
    if (read32_at(bus, slot, func, PCI_ID) != id)
        return false;
    *out = (struct pci_function){bus, slot, func, (uint16_t)id, (uint16_t)(id >> 16), {0}};
    for (uint8_t i = 0; i < 6; i++)
        out->bar[i] = pci_read32(out, (uint8_t)(PCI_BAR0 + 4 * i));
    return true;
}

int pci_find(uint16_t vendor, uint16_t device, struct pci_function *out)
{
    uint32_t id = (uint32_t)device << 16 | vendor;
    for (unsigned bus = 0; bus < 256; bus++) {
        for (uint8_t slot = 0; slot < 32; slot++) {
            uint32_t first = read32_at((uint8_t)bus, slot, 0, PCI_ID);
            if ((first & 0xFFFF) == 0xFFFF)
                continue; // no device in this slot
            bool multi = read32_at((uint8_t)bus, slot, 0, PCI_HEADER_TYPE) >> 16 & 0x80;
            for (uint8_t func = 0; func < (multi ? 8 : 1); func++)
                if (matches((uint8_t)bus, slot, func, id, out))
                    return 0;
        }
    }
    return -1;
}

void pci_enable_io_and_dma(const struct pci_function *f)
{
    uint16_t cmd = (uint16_t)pci_read32(f, PCI_COMMAND);
    pci_write16(f, PCI_COMMAND, cmd | PCI_COMMAND_IO | PCI_COMMAND_MASTER);
}
