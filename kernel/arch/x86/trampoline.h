// The AP trampoline's interface (boot/trampoline.asm): where core/smp.c copies
// it, and the parameter block it reads, filled before each SIPI. The assembly
// takes the address and the block's layout from $(BUILD)/asm-offsets.inc
// (asm_offsets.c), so this header is their one definition.
#pragma once
#include "lib/types.h"

// A page below 1 MiB: a SIPI's vector is the page number of the start address
// (Intel SDM vol. 3A, "Multiple-Processor (MP) Initialization").
#define TRAMPOLINE_ADDR          0x8000
// The block follows the trampoline's first instruction (a two-byte jmp short
// over it), 8-byte aligned.
#define TRAMPOLINE_PARAMS_OFFSET 8

struct trampoline_params {
    uint64_t cr3;   // physical address of the boot PML4 (< 4 GiB: read as 32 bits)
    uint64_t stack; // top of this CPU's kernel stack (virtual)
    uint64_t entry; // ap_entry (virtual)
    uint64_t cpu;   // struct cpu * (virtual), first argument of entry
    uint32_t efer;  // EFER bits to set (LME, NXE)
    uint32_t pad;
};
