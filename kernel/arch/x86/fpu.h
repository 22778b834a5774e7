// x87/SSE state for ring 3. The kernel itself never touches these registers
// (-mgeneral-regs-only), so a thread's state is saved and restored only when
// the scheduler switches threads: eagerly, with fxsave/fxrstor.
#pragma once
#include "lib/types.h"

#define FPU_STATE_SIZE 512

void fpu_init_cpu(void);             // CR0.MP, CR4.OSFXSR/OSXMMEXCPT; boot CPU: the template
void fpu_init_state(uint8_t *state); // a fresh thread's state (fninit + default MXCSR)

static inline void fpu_save(uint8_t *state)
{
    __asm__ volatile("fxsave64 (%0)" ::"r"(state) : "memory");
}
static inline void fpu_restore(const uint8_t *state)
{
    __asm__ volatile("fxrstor64 (%0)" ::"r"(state) : "memory");
}
