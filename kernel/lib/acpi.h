// ACPI tables: RSDP -> RSDT/XSDT -> MADT (processors, IOAPICs, overrides) and
// the FADT (for power-off).
#pragma once
#include "lib/param.h"
#include "lib/types.h"

#define MAX_IOAPICS   8
#define MAX_OVERRIDES 16

struct madt_info {
    uint64_t lapic_phys;
    unsigned ncpus;
    unsigned ncpus_listed;       // enabled processors in the table, also past MAX_CPUS
    uint32_t apic_ids[MAX_CPUS]; // the first MAX_CPUS enabled processors, boot CPU first
    unsigned nioapics;
    struct {
        uint8_t id;
        uint64_t phys;
        uint32_t gsi_base;
    } ioapics[MAX_IOAPICS];
    unsigned noverrides;
    struct {
        uint8_t isa_irq;
        uint32_t gsi;
        uint16_t flags;
    } overrides[MAX_OVERRIDES];
    bool has_8259; // PC-AT compatible dual 8259s present (MADT flag bit 0)
};

extern struct madt_info madt;
extern bool acpi_present;

struct fadt_info {
    uint32_t pm1a_cnt, pm1b_cnt; // I/O ports of the PM1 control blocks
    uint16_t slp_typa, slp_typb; // SLP_TYP for S5, from \_S5 in the DSDT
    bool s5_found;
    uint32_t smi_cmd;
    uint8_t acpi_enable;
};
extern struct fadt_info fadt;

// Parse from the RSDP copied out of the boot information. On failure (or
// without ACPI) madt describes one CPU, the boot CPU (its APIC id given), and
// acpi_present is false.
void acpi_init(const uint8_t *rsdp, unsigned version, uint32_t boot_apic_id);

// Pure MADT parser (host-tested): fills out from the table body.
bool acpi_parse_madt(const void *madt_table, size_t length, uint32_t boot_apic_id,
                     struct madt_info *out);
bool acpi_checksum_ok(const void *p, size_t n);
