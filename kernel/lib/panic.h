// panic(): print what happened and stop the machine.
#pragma once
#include "lib/types.h"

struct trapframe;

// Print the CPU, the message, the registers and a symbolized backtrace, stop the
// other CPUs; in test mode exit QEMU with a failure code, otherwise halt.
void panic(const char *fmt, ...) NORETURN __attribute__((format(printf, 1, 2)));
// The same for an unexpected exception, with the registers of its trap frame.
void panic_trap(struct trapframe *tf, const char *what) NORETURN;
extern volatile bool panicked;

#define assert(cond) \
    do { \
        if (!(cond)) \
            panic("assertion failed: %s (%s:%d)", #cond, __FILE__, __LINE__); \
    } while (0)
