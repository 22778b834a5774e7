// Call chains for the sample log: the kernel's frames walked by frame pointer
// inside the interrupt, then the user's, read through the process's page
// tables so that no read can fault (see callchain.c and docs/pmc-log.md).
#pragma once
#include "arch/x86/trapframe.h"
#include "lib/types.h"

struct thread;

struct callchain_result {
    unsigned n;       // frames written, leaf first
    unsigned nkernel; // of those, kernel addresses (they come first)
    bool truncated;   // cut: depth reached, or a bad or unreadable frame
    bool unreadable;  // a user frame lay in an unmapped page or outside the user half
};

// The chain of a sample of the interrupted context f in thread t, at most
// max frames into frames[], leaf first. With want_chain false only the IP.
void callchain_capture(const struct thread *t, const struct intr_frame *f, bool want_chain,
                       uint64_t *frames, unsigned max, struct callchain_result *out);
