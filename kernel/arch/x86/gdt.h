// Per-CPU GDT and TSS.
#pragma once
#include "lib/types.h"

#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA 0x1B // 0x18 | RPL 3: sysret loads SS = STAR[63:48] + 8
#define SEL_UCODE 0x23 // 0x20 | RPL 3: sysret loads CS = STAR[63:48] + 16
#define SEL_TSS   0x28

// IST slots in the TSS (1-based, as the IDT gate's IST field).
#define IST_NMI           1
#define IST_DOUBLE_FAULT  2
#define IST_MACHINE_CHECK 3

struct tss {
    uint32_t reserved0;
    uint64_t rsp[3];
    uint64_t reserved1;
    uint64_t ist[7];
    uint64_t reserved2;
    uint16_t reserved3;
    uint16_t iomap_base;
} __attribute__((packed));
_Static_assert(sizeof(struct tss) == 104, "TSS layout");

struct cpu;
// Build and load c's GDT and TSS; ist_stacks is 3 * IST_STACK_SIZE bytes for
// the NMI, double-fault and machine-check stacks.
void gdt_init_cpu(struct cpu *c, uint8_t *ist_stacks);
