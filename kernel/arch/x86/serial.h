// COM1 (16550 UART at 0x3F8): polled output, interrupt-driven input.
#pragma once

void serial_init(void);
void serial_putc(char c);
void serial_enable_irq(void); // route IRQ 4 and start feeding console_input
