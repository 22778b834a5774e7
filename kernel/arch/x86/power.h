#pragma once
// Turn the machine off through ACPI (QEMU exits with status 0). Returns only
// when that is impossible.
void power_off(void);
