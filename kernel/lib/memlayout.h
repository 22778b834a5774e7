// The virtual address space of the kernel.
//
//   0x0000000000000000 - 0x00007FFFFFFFFFFF  user space (one per process)
//   0xFFFF800000000000 - ...                 direct map of all physical memory
//   0xFFFFFFFF80000000 - ...                 the kernel image (linker.ld)
#pragma once
#include "lib/param.h"
#include "lib/types.h"

static inline void *phys_to_virt(uint64_t pa)
{
    return (void *)(uintptr_t)(pa + DIRECT_MAP_BASE);
}
static inline uint64_t virt_to_phys(const void *va)
{
    uintptr_t v = (uintptr_t)va;
    return v >= KERNEL_VMA ? v - KERNEL_VMA : v - DIRECT_MAP_BASE;
}

extern char __kernel_start[], __kernel_end[], __text_end[];
