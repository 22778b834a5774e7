// The console: every line goes to COM1 and to the VGA text screen.
#pragma once
#include "lib/abi/status.h"
#include "lib/types.h"

struct process;

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
// Job control, after POSIX's controlling terminal: the console has an owner,
// the first process to set its foreground group while no owner lives (the
// shell, which does so at its start), or a member of the foreground group
// that sets it (a shell run from the shell) until it ends. Only the owner may
// set the foreground group (else STATUS_ACCESS_DENIED, as a background
// tcsetpgrp meets SIGTTOU); pgid must pass process_group_check.
NTSTATUS console_set_foreground(struct process *me, uint32_t pgid);
// Whether me may take input (else SysRead is refused, as a background read
// meets SIGTTIN): the foreground group's members while one is set, the owner
// while none is, anybody while no owner lives.
bool console_may_read(const struct process *me);
