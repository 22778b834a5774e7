// ACPI soft-off (S5): write SLP_TYPa | SLP_EN to PM1a_CNT (and PM1b_CNT).
#include "arch/x86/power.h"

#include "lib/acpi.h"
#include "lib/kprintf.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"

#define SLP_EN (1u << 13)

void power_off(void)
{
    if (!fadt.pm1a_cnt || !fadt.s5_found) {
        kprintf("power: no ACPI S5 information: halting instead\n");
        return;
    }
    kprintf("power: off\n");
    if (fadt.smi_cmd && fadt.acpi_enable && !(inw((uint16_t)fadt.pm1a_cnt) & 1)) {
        outb((uint16_t)fadt.smi_cmd, fadt.acpi_enable); // hand ACPI to the OS first
        for (int i = 0; i < 1000000 && !(inw((uint16_t)fadt.pm1a_cnt) & 1); i++)
            cpu_relax();
    }
    outw((uint16_t)fadt.pm1a_cnt, (uint16_t)((fadt.slp_typa << 10) | SLP_EN));
    if (fadt.pm1b_cnt)
        outw((uint16_t)fadt.pm1b_cnt, (uint16_t)((fadt.slp_typb << 10) | SLP_EN));
    udelay(2000000); // the machine goes away some time after the write
    kprintf("power: still running after the ACPI soft-off request\n");
}
