// VGA text mode, 80x25 at physical 0xB8000.
#pragma once

void vga_init(void);
void vga_putc(char c);
