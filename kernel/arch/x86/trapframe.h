// The register frame built by the interrupt stubs in vectors.asm.
// Field order is the push order reversed; vectors.asm relies on the offsets.
#pragma once
#include "lib/types.h"

struct trapframe {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector;                   // pushed by the stub
    uint64_t error;                    // pushed by the CPU, or 0 by the stub
    uint64_t rip, cs, rflags, rsp, ss; // pushed by the CPU
};

#define TF_VECTOR_OFFSET 120
#define TF_CS_OFFSET     144
#define TF_SIZE          176
_Static_assert(offsetof(struct trapframe, vector) == TF_VECTOR_OFFSET, "vectors.asm");
_Static_assert(offsetof(struct trapframe, cs) == TF_CS_OFFSET, "vectors.asm");
_Static_assert(sizeof(struct trapframe) == TF_SIZE, "vectors.asm");

// What the CPU itself pushes on an interrupt (Intel SDM vol. 3A §6.14.2,
// "64-Bit Mode Stack Frame"): the tail of struct trapframe, and all that the
// lean timer entry (vectors.asm, timer_entry) hands to its handler.
struct intr_frame {
    uint64_t rip, cs, rflags, rsp, ss;
};
#define IF_CS_OFFSET 8
_Static_assert(offsetof(struct intr_frame, cs) == IF_CS_OFFSET, "vectors.asm timer_entry");
_Static_assert(offsetof(struct trapframe, rip) + sizeof(struct intr_frame) == TF_SIZE,
               "struct intr_frame is the end of struct trapframe");

static inline bool intr_from_user(const struct intr_frame *f)
{
    return (f->cs & 3) == 3;
}

static inline const struct intr_frame *tf_intr_frame(const struct trapframe *tf)
{
    return (const struct intr_frame *)&tf->rip;
}

static inline bool tf_from_user(const struct trapframe *tf)
{
    return (tf->cs & 3) == 3;
}
