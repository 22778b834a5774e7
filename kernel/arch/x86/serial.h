// COM1 (16550 UART at 0x3F8): polled output, interrupt-driven input.
#pragma once

void serial_init(void);
void serial_putc(char c);
// Route IRQ 4 and hand every received byte ('\r' as '\n') to input, in the
// interrupt (the console's input ring: core/console.c registers it).
void serial_enable_irq(void (*input)(char c));
