// Page tables. The kernel half (direct map and kernel image) is shared by every
// address space; vm_init builds it once.
#pragma once
#include "lib/types.h"

#define PTE_P    (1ull << 0)
#define PTE_W    (1ull << 1)
#define PTE_U    (1ull << 2)
#define PTE_PWT  (1ull << 3)
#define PTE_PCD  (1ull << 4)
#define PTE_A    (1ull << 5)
#define PTE_D    (1ull << 6)
#define PTE_PS   (1ull << 7)
#define PTE_G    (1ull << 8)
#define PTE_NX   (1ull << 63)
#define PTE_ADDR 0x000FFFFFFFFFF000ull

typedef uint64_t pte_t;

extern uint64_t kernel_cr3;        // physical address of the kernel's PML4
extern uint64_t vm_direct_map_top; // end of the physical range the direct map covers

void vm_init(void);        // build the kernel page tables and switch to them
void vm_load_kernel(void); // load kernel_cr3 on this CPU (APs)

// The 4 KiB page-table entry for va in the tables rooted at pml4 (physical),
// creating intermediate tables when alloc; NULL if absent or out of memory.
pte_t *vm_walk(uint64_t pml4, uint64_t va, bool alloc);
// The same at a given level (0 = the page table's entry ... 3 = the PML4's).
pte_t *vm_walk_level(uint64_t pml4, uint64_t va, int level, bool alloc);
bool vm_map_page(uint64_t pml4, uint64_t va, uint64_t pa, uint64_t flags);
bool vm_nx_supported(void);
