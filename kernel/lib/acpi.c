// ACPI: just enough to find the processors and interrupt controllers.
#include "lib/acpi.h"

#include "lib/kprintf.h"
#include "lib/memlayout.h"
#include "lib/string.h"

struct madt_info madt;
struct fadt_info fadt;
bool acpi_present;

struct sdt_header {
    char signature[4];
    uint32_t length;
    uint8_t revision, checksum;
    char oem_id[6], oem_table_id[8];
    uint32_t oem_revision, creator_id, creator_revision;
} PACKED;
_Static_assert(sizeof(struct sdt_header) == 36, "ACPI SDT header");

bool acpi_checksum_ok(const void *p, size_t n)
{
    uint8_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ((const uint8_t *)p)[i];
    return sum == 0;
}

// Past MAX_CPUS a processor is only counted (ncpus_listed), except the boot
// CPU, which is running this code: it takes index 0 and the last kept one
// stays out instead. (A processor listed twice past the limit counts twice.)
static void add_cpu(struct madt_info *out, uint32_t apic_id, uint32_t boot_apic_id)
{
    for (unsigned i = 0; i < out->ncpus; i++)
        if (out->apic_ids[i] == apic_id)
            return; // listed twice (LAPIC and x2APIC entries)
    out->ncpus_listed++;
    if (out->ncpus == MAX_CPUS) {
        if (apic_id == boot_apic_id) {
            out->apic_ids[MAX_CPUS - 1] = out->apic_ids[0];
            out->apic_ids[0] = apic_id;
        }
        return;
    }
    if (apic_id == boot_apic_id && out->ncpus > 0) { // keep the boot CPU at index 0
        out->apic_ids[out->ncpus++] = out->apic_ids[0];
        out->apic_ids[0] = apic_id;
    } else {
        out->apic_ids[out->ncpus++] = apic_id;
    }
}

// Processor local APIC (type 0): ACPI id, APIC id, flags (bit 0: enabled).
// Whether it is the boot CPU, enabled.
static bool madt_lapic(const uint8_t *e, uint8_t len, uint32_t boot_apic_id, struct madt_info *out)
{
    uint32_t f;
    if (len < 8)
        return false;
    memcpy(&f, e + 4, 4);
    if (!(f & 1))
        return false;
    add_cpu(out, e[3], boot_apic_id);
    return e[3] == boot_apic_id;
}

// Processor local x2APIC (type 9): reserved u16, x2APIC id, flags, uid.
static bool madt_x2apic(const uint8_t *e, uint8_t len, uint32_t boot_apic_id, struct madt_info *out)
{
    uint32_t id, f;
    if (len < 16)
        return false;
    memcpy(&id, e + 4, 4);
    memcpy(&f, e + 8, 4);
    if (!(f & 1))
        return false;
    add_cpu(out, id, boot_apic_id);
    return id == boot_apic_id;
}

// I/O APIC (type 1): id, reserved, u32 address, u32 GSI base.
static void madt_ioapic(const uint8_t *e, uint8_t len, struct madt_info *out)
{
    uint32_t addr, gsi;
    if (len < 12 || out->nioapics >= MAX_IOAPICS)
        return;
    memcpy(&addr, e + 4, 4);
    memcpy(&gsi, e + 8, 4);
    out->ioapics[out->nioapics].id = e[2];
    out->ioapics[out->nioapics].phys = addr;
    out->ioapics[out->nioapics].gsi_base = gsi;
    out->nioapics++;
}

// Interrupt source override (type 2): bus, source, u32 GSI, u16 flags.
static void madt_override(const uint8_t *e, uint8_t len, struct madt_info *out)
{
    uint32_t gsi;
    uint16_t fl;
    if (len < 10 || out->noverrides >= MAX_OVERRIDES)
        return;
    memcpy(&gsi, e + 4, 4);
    memcpy(&fl, e + 8, 2);
    out->overrides[out->noverrides].isa_irq = e[3];
    out->overrides[out->noverrides].gsi = gsi;
    out->overrides[out->noverrides].flags = fl;
    out->noverrides++;
}

// One entry {type, length, ...}; whether it lists the boot CPU as enabled.
static bool madt_entry(const uint8_t *e, uint8_t len, uint32_t boot_apic_id, struct madt_info *out)
{
    switch (e[0]) {
    case 0: return madt_lapic(e, len, boot_apic_id, out);
    case 1: madt_ioapic(e, len, out); break;
    case 2: madt_override(e, len, out); break;
    case 5: // 64-bit LAPIC address override
        if (len >= 12)
            memcpy(&out->lapic_phys, e + 4, 8);
        break;
    case 9: return madt_x2apic(e, len, boot_apic_id, out);
    default: break;
    }
    return false;
}

// The MADT body after its 36-byte header: u32 LAPIC address, u32 flags, entries.
bool acpi_parse_madt(const void *table, size_t length, uint32_t boot_apic_id, struct madt_info *out)
{
    const uint8_t *p = table;
    memset(out, 0, sizeof *out);
    if (length < 44)
        return false;
    uint32_t lapic32, flags;
    memcpy(&lapic32, p + 36, 4);
    memcpy(&flags, p + 40, 4);
    out->lapic_phys = lapic32;
    out->has_8259 = flags & 1;
    bool boot_seen = false;
    for (size_t off = 44; off + 2 <= length; off += p[off + 1]) {
        uint8_t len = p[off + 1];
        if (len < 2 || off + len > length)
            return false;
        boot_seen |= madt_entry(p + off, len, boot_apic_id, out);
    }
    if (!boot_seen) // firmware that omits the boot CPU: it is running, count it
        add_cpu(out, boot_apic_id, boot_apic_id);
    return out->ncpus > 0;
}

static const struct sdt_header *map_table(uint64_t pa)
{
    const struct sdt_header *h = phys_to_virt(pa);
    if (h->length < sizeof *h || h->length > (1u << 20) || !acpi_checksum_ok(h, h->length))
        return NULL;
    return h;
}

// \_S5 in the DSDT's AML: "_S5_" NameOp, PackageOp, PkgLength, NumElements,
// then SLP_TYPa and SLP_TYPb as byte constants (BytePrefix 0x0A or a literal).
static void find_s5(const struct sdt_header *dsdt)
{
    const uint8_t *p = (const uint8_t *)dsdt + sizeof *dsdt;
    size_t n = dsdt->length - sizeof *dsdt;
    for (size_t i = 0; i + 12 < n; i++) {
        if (memcmp(p + i, "_S5_", 4) != 0 || p[i + 4] != 0x12)
            continue;
        const uint8_t *q = p + i + 5;
        q += ((*q >> 6) & 3) + 1; // PkgLength
        q++;                      // NumElements
        uint16_t v[2];
        for (int k = 0; k < 2; k++) {
            if (*q == 0x0A)
                q++;
            v[k] = *q++;
        }
        fadt.slp_typa = v[0];
        fadt.slp_typb = v[1];
        fadt.s5_found = true;
        return;
    }
}

static void parse_fadt(const struct sdt_header *h)
{
    const uint8_t *p = (const uint8_t *)h;
    if (h->length < 76)
        return;
    uint32_t dsdt32;
    memcpy(&fadt.smi_cmd, p + 48, 4);
    fadt.acpi_enable = p[52];
    memcpy(&fadt.pm1a_cnt, p + 64, 4);
    memcpy(&fadt.pm1b_cnt, p + 68, 4);
    memcpy(&dsdt32, p + 40, 4);
    uint64_t dsdt = dsdt32;
    if (h->length >= 148) {
        uint64_t x;
        memcpy(&x, p + 140, 8);
        if (x)
            dsdt = x;
    }
    const struct sdt_header *d = dsdt ? map_table(dsdt) : NULL;
    if (d && memcmp(d->signature, "DSDT", 4) == 0)
        find_s5(d);
}

static void one_cpu(uint32_t boot_apic_id)
{
    memset(&madt, 0, sizeof madt);
    madt.ncpus = madt.ncpus_listed = 1;
    madt.apic_ids[0] = boot_apic_id;
    madt.lapic_phys = 0xFEE00000;
    madt.has_8259 = true;
}

void acpi_init(const uint8_t *rsdp, unsigned version, uint32_t boot_id)
{
    one_cpu(boot_id);
    if (!version || memcmp(rsdp, "RSD PTR ", 8) != 0 || !acpi_checksum_ok(rsdp, 20)) {
        kprintf("acpi: no RSDP from the boot loader: running on one CPU\n");
        return;
    }
    uint32_t rsdt;
    uint64_t xsdt = 0;
    memcpy(&rsdt, rsdp + 16, 4);
    if (version >= 2 && rsdp[15] >= 2 && acpi_checksum_ok(rsdp, 36))
        memcpy(&xsdt, rsdp + 24, 8);
    const struct sdt_header *root = map_table(xsdt ? xsdt : rsdt);
    if (!root) {
        kprintf("acpi: bad %s: running on one CPU\n", xsdt ? "XSDT" : "RSDT");
        return;
    }
    size_t width = xsdt ? 8 : 4, n = (root->length - sizeof *root) / width;
    const uint8_t *entries = (const uint8_t *)root + sizeof *root;
    bool have_madt = false;
    for (size_t i = 0; i < n; i++) {
        uint64_t pa = 0;
        memcpy(&pa, entries + i * width, width);
        const struct sdt_header *h = map_table(pa);
        if (!h)
            continue;
        if (memcmp(h->signature, "APIC", 4) == 0)
            have_madt = acpi_parse_madt(h, h->length, boot_id, &madt);
        else if (memcmp(h->signature, "FACP", 4) == 0)
            parse_fadt(h);
    }
    if (!have_madt) {
        kprintf("acpi: no usable MADT: running on one CPU\n");
        one_cpu(boot_id);
        return;
    }
    acpi_present = true;
    kprintf("acpi: %s rev %u, %u CPUs, %u IOAPICs, %u overrides\n", xsdt ? "XSDT" : "RSDT",
            rsdp[15], madt.ncpus, madt.nioapics, madt.noverrides);
}
