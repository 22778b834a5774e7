// PCI configuration space through configuration mechanism #1 (ports 0xCF8
// and 0xCFC), and a search of the buses for one device.
#pragma once
#include "lib/types.h"

// Where a function sits, and what the search read of it.
struct pci_function {
    uint8_t bus, slot, func;
    uint16_t vendor, device;
    uint32_t bar[6];
};

uint32_t pci_read32(const struct pci_function *f, uint8_t offset);
void pci_write16(const struct pci_function *f, uint8_t offset, uint16_t value);
// The first function with this vendor and device ID, in bus, slot and
// function order: 0 with *out filled, or -1 when no bus has one.
int pci_find(uint16_t vendor, uint16_t device, struct pci_function *out);
// The command register's I/O space and bus master bits set: the function
// answers its I/O BARs and may read and write memory (DMA).
void pci_enable_io_and_dma(const struct pci_function *f);
