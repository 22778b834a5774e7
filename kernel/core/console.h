// The console: every line goes to COM1 and to the VGA text screen.
#pragma once
#include "lib/types.h"

void console_init(void);
void console_write(const char *s, size_t n); // atomic with respect to other CPUs
void console_panic(void); // from now on write without the lock (a CPU may hold it forever)

// Input: bytes from the serial line and the PS/2 keyboard, in arrival order.
void console_input(char c);                 // called by the serial and keyboard interrupt handlers
size_t console_read(char *buf, size_t len); // what is waiting, up to len bytes; never blocks
extern volatile bool console_has_input;     // wakeup(&console_has_input) when it turns true
// The foreground process group (SysConsoleForeground, lib/abi/syscalls.h): while it is
// not 0, CONSOLE_INTR is no input but interrupts the group.
#define CONSOLE_INTR 0x03 // Ctrl-C, ASCII ETX
void console_set_foreground(uint32_t pgid);
