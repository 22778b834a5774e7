// The register frame built by the interrupt stubs in vectors.asm.
// Field order is the push order reversed. The assembly takes the offsets it
// uses from asm-offsets.inc, generated from this struct (asm_offsets.c), and
// checks there the order its pushes depend on (frame.inc).
#pragma once
#include "lib/types.h"

struct trapframe {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector;                   // pushed by the stub
    uint64_t error;                    // pushed by the CPU, or 0 by the stub
    uint64_t rip, cs, rflags, rsp, ss; // pushed by the CPU
};

// The interrupted context a sample needs: what the CPU itself pushes on an
// interrupt (Intel SDM vol. 3A §6.14.2, "64-Bit Mode Stack Frame") and, below
// it, the interrupted rbp, where a frame-pointer walk of the call chain
// starts. The lean entries (vectors.asm: timer_entry, pmi_entry, nmi_entry)
// build it in place; the full trap path makes a copy (tf_intr_frame).
struct intr_frame {
    uint64_t rbp;
    uint64_t rip, cs, rflags, rsp, ss;
};
_Static_assert(offsetof(struct intr_frame, rip) == 8,
               "vectors.asm pushes rbp below the CPU's frame");
_Static_assert(offsetof(struct trapframe, rip) + sizeof(struct intr_frame) - 8 ==
                   sizeof(struct trapframe),
               "the CPU's frame is the end of struct trapframe");

// A lean entry's frame (vectors.asm): struct intr_frame, built in place,
// and below it the nine registers a called function may clobber (rax, rcx,
// rdx, rsi, rdi, r8-r11), LEAN_SAVED_BYTES bytes. From ring 3 the timer's
// and the PMI's entries may call the user-work hook (the scheduler) from there: the word below the
// saved registers is then that call's return address, lean_user_work_return.
#define LEAN_SAVED_BYTES (9 * 8)
extern const char lean_user_work_return[];

static inline bool intr_from_user(const struct intr_frame *f)
{
    return (f->cs & 3) == 3;
}

static inline struct intr_frame tf_intr_frame(const struct trapframe *tf)
{
    return (struct intr_frame){tf->rbp, tf->rip, tf->cs, tf->rflags, tf->rsp, tf->ss};
}

static inline bool tf_from_user(const struct trapframe *tf)
{
    return (tf->cs & 3) == 3;
}
