// The register frame built by the interrupt stubs in vectors.asm.
// Field order is the push order reversed; vectors.asm relies on the offsets.
#pragma once
#include "types.h"

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

static inline bool tf_from_user(const struct trapframe *tf)
{
    return (tf->cs & 3) == 3;
}
