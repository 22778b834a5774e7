// Kernel tunables, one place, one comment each.
#pragma once

#define MAX_CPUS        64          // size of the per-CPU array; the MADT may list fewer
#define KSTACK_SIZE     (16 * 1024) // per-CPU boot/idle kernel stack
#define IST_STACK_SIZE  (8 * 1024)  // NMI, double fault and machine check stacks
#define TIMER_SLOTS     3           // periodic users multiplexed on one LAPIC timer
#define SCHED_TICK_HZ   100         // scheduler tick (the first periodic timer user)
#define CALIBRATE_MS    10          // PIT window used to calibrate the TSC and LAPIC timer
#define KERNEL_VMA      0xFFFFFFFF80000000ull // -2 GiB: where the kernel image is linked
#define DIRECT_MAP_BASE 0xFFFF800000000000ull // all physical memory is mapped here
#define PAGE_SIZE       4096ul
