// Enabling SSE for user programs and the initial register state.
#include "arch/x86/fpu.h"

#include "lib/string.h"

#include "arch/x86/cpu.h"

#define CR0_MP         (1u << 1)
#define CR0_EM         (1u << 2)
#define CR0_TS         (1u << 3)
#define CR4_OSFXSR     (1u << 9)
#define CR4_OSXMMEXCPT (1u << 10)

static uint8_t initial_state[FPU_STATE_SIZE] __attribute__((aligned(16)));
static bool have_template;

void fpu_init_cpu(void)
{
    uint64_t cr0 = read_cr0();
    cr0 = (cr0 | CR0_MP) & ~(uint64_t)(CR0_EM | CR0_TS);
    __asm__ volatile("mov %0, %%cr0" ::"r"(cr0));
    write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
    if (!have_template) {        // what every new thread starts with
        uint32_t mxcsr = 0x1F80; // all SSE exceptions masked, round to nearest
        __asm__ volatile("fninit; ldmxcsr %0" ::"m"(mxcsr));
        fpu_save(initial_state);
        have_template = true;
    }
}

void fpu_init_state(uint8_t *state)
{
    memcpy(state, initial_state, FPU_STATE_SIZE);
}
