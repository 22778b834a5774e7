// The MADT parser: processors (LAPIC and x2APIC), IOAPICs, overrides.
#include <string.h>
#include "lib/acpi.h"
#include "harness.h"

static uint8_t t[512];
static size_t n;

static void entry(const uint8_t *e, size_t len)
{
    memcpy(t + n, e, len);
    n += len;
}

void test_acpi(void)
{
    memset(t, 0, sizeof t);
    memcpy(t, "APIC", 4);
    n = 36;
    uint32_t lapic = 0xFEE00000, flags = 1;
    memcpy(t + n, &lapic, 4);
    memcpy(t + n + 4, &flags, 4);
    n += 8;
    entry((uint8_t[]){0, 8, 0, 3, 1, 0, 0, 0}, 8); // CPU, APIC id 3
    entry((uint8_t[]){0, 8, 1, 0, 1, 0, 0, 0}, 8); // CPU, APIC id 0 (the boot CPU)
    entry((uint8_t[]){0, 8, 2, 5, 0, 0, 0, 0}, 8); // disabled: not counted
    entry((uint8_t[]){1, 12, 9, 0, 0, 0, 0xC0, 0xFE, 0, 0, 0, 0}, 12);       // IOAPIC 9
    entry((uint8_t[]){2, 10, 0, 0, 2, 0, 0, 0, 0, 0}, 10);                   // IRQ0 -> GSI 2
    entry((uint8_t[]){9, 16, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0}, 16); // x2APIC id 256
    entry((uint8_t[]){9, 16, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0}, 16); // id 3 again
    struct madt_info m;
    bool ok = acpi_parse_madt(t, n, 0, &m);
    CHECK(ok, "acpi: MADT parses");
    CHECK(m.ncpus == 3, "acpi: enabled processors, duplicates merged (%u)", m.ncpus);
    CHECK(m.apic_ids[0] == 0, "acpi: the boot CPU comes first");
    CHECK((m.apic_ids[1] == 3 && m.apic_ids[2] == 256) ||
              (m.apic_ids[1] == 256 && m.apic_ids[2] == 3),
          "acpi: x2APIC entries count");
    CHECK(m.nioapics == 1 && m.ioapics[0].id == 9 && m.ioapics[0].phys == 0xFEC00000,
          "acpi: IOAPIC");
    CHECK(m.noverrides == 1 && m.overrides[0].isa_irq == 0 && m.overrides[0].gsi == 2,
          "acpi: interrupt source override");
    CHECK(m.lapic_phys == 0xFEE00000 && m.has_8259, "acpi: LAPIC address and PC-AT flag");

    CHECK(!acpi_parse_madt(t, 40, 0, &m), "acpi: a truncated MADT is rejected");
    t[44 + 1] = 0; // entry length 0 would loop forever
    CHECK(!acpi_parse_madt(t, n, 0, &m), "acpi: a zero-length entry is rejected");
    t[44 + 1] = 8;
    ok = acpi_parse_madt(t, n, 77, &m);
    CHECK(ok && m.apic_ids[0] == 77 && m.ncpus == 4,
          "acpi: a boot CPU missing from the MADT is added first");

    // More processors than MAX_CPUS: the first are kept, the rest counted,
    // and the boot CPU, listed last, is kept first.
    static uint8_t big[44 + 8 * (MAX_CPUS + 6)];
    memcpy(big, t, 44);
    for (unsigned i = 0; i < MAX_CPUS + 6; i++) {
        uint8_t e[8] = {0, 8, (uint8_t)i, (uint8_t)(i + 1), 1, 0, 0, 0}; // APIC ids 1..70
        memcpy(big + 44 + 8 * i, e, 8);
    }
    ok = acpi_parse_madt(big, sizeof big, MAX_CPUS + 6, &m);
    CHECK(ok && m.ncpus == MAX_CPUS && m.ncpus_listed == MAX_CPUS + 6,
          "acpi: %u processors listed, %u kept (MAX_CPUS)", m.ncpus_listed, m.ncpus);
    CHECK(m.apic_ids[0] == MAX_CPUS + 6 && m.apic_ids[MAX_CPUS - 1] == 1,
          "acpi: past the limit the boot CPU still comes first (%u)", m.apic_ids[0]);

    uint8_t sum[8] = {1, 2, 3, 4, 5, 6, 7, (uint8_t)(256 - 28)};
    CHECK(acpi_checksum_ok(sum, 8) && !acpi_checksum_ok(sum, 7), "acpi: checksum");
}
