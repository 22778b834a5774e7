// Kernel page tables:
//   - the direct map: every physical byte below max(4 GiB, top of RAM) at
//     DIRECT_MAP_BASE, read/write, never executable, 2 MiB pages; the top 32 MiB
//     below 4 GiB (IOAPIC, LAPIC, firmware) uncached;
//   - the kernel image at KERNEL_VMA with 4 KiB pages: text read-only and
//     executable, rodata read-only, data and bss writable, nothing both.
#include "core/vm.h"

#include "lib/bootinfo.h"
#include "lib/memlayout.h"
#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"

#include "core/pmm.h"

uint64_t kernel_cr3;
uint64_t vm_direct_map_top; // physical addresses below it are mapped at DIRECT_MAP_BASE
static bool nx;

bool vm_nx_supported(void)
{
    return nx;
}

static pte_t *table(uint64_t pa)
{
    return phys_to_virt(pa & PTE_ADDR);
}

static uint64_t new_table(void)
{
    uint64_t pa = pmm_alloc_page();
    if (pa)
        memset(phys_to_virt(pa), 0, PAGE_SIZE);
    return pa;
}

// Entry for va at the given level (3 = PML4 ... 0 = PT), allocating tables above it.
static pte_t *walk_level(uint64_t pml4, uint64_t va, int level, bool alloc)
{
    pte_t *t = table(pml4);
    for (int l = 3; l > level; l--) {
        pte_t *e = &t[(va >> (12 + 9 * l)) & 511];
        if (!(*e & PTE_P)) {
            if (!alloc)
                return NULL;
            uint64_t pa = new_table();
            if (!pa)
                return NULL;
            // Intermediate entries are permissive; the leaf decides.
            *e = pa | PTE_P | PTE_W | (va < DIRECT_MAP_BASE ? PTE_U : 0);
        } else if (*e & PTE_PS) {
            return NULL; // a large page covers va
        }
        t = table(*e);
    }
    return &t[(va >> (12 + 9 * level)) & 511];
}

pte_t *vm_walk(uint64_t pml4, uint64_t va, bool alloc)
{
    return walk_level(pml4, va, 0, alloc);
}

pte_t *vm_walk_level(uint64_t pml4, uint64_t va, int level, bool alloc)
{
    return walk_level(pml4, va, level, alloc);
}

bool vm_map_page(uint64_t pml4, uint64_t va, uint64_t pa, uint64_t flags)
{
    pte_t *e = vm_walk(pml4, va, true);
    if (!e)
        return false;
    *e = (pa & PTE_ADDR) | flags | PTE_P;
    return true;
}

static void map_direct(uint64_t pml4, uint64_t top)
{
    uint64_t xd = nx ? PTE_NX : 0;
    for (uint64_t pa = 0; pa < top; pa += 2ull << 20) {
        pte_t *e = walk_level(pml4, DIRECT_MAP_BASE + pa, 1, true);
        if (!e)
            panic("vm: out of memory for the direct map");
        uint64_t cache = pa >= 0xFE000000ull && pa < (4ull << 30) ? PTE_PCD | PTE_PWT : 0;
        *e = pa | PTE_P | PTE_W | PTE_PS | PTE_G | xd | cache;
    }
}

static void map_image(uint64_t pml4)
{
    extern char __text_end[], __data_start_marker[];
    uint64_t xd = nx ? PTE_NX : 0;
    for (uint64_t va = (uint64_t)__kernel_start; va < (uint64_t)__kernel_end; va += PAGE_SIZE) {
        uint64_t flags = PTE_G;
        if (va < (uint64_t)__text_end)
            flags |= 0; // text: read-only, executable
        else if (va < (uint64_t)__data_start_marker)
            flags |= xd; // rodata
        else
            flags |= PTE_W | xd; // data, bss
        if (!vm_map_page(pml4, va, va - KERNEL_VMA, flags))
            panic("vm: out of memory mapping the kernel");
    }
}

void vm_init(void)
{
    nx = cpuid(0x80000001, 0).edx & CPUIDX1_EDX_NX;
    uint64_t top = 4ull << 30;
    for (unsigned i = 0; i < boot_info.nmmap; i++)
        if (boot_info.mmap[i].type == MEM_AVAILABLE)
            top = MAX(top, boot_info.mmap[i].base + boot_info.mmap[i].length);
    top = ALIGN_UP(top, 2ull << 20);

    kernel_cr3 = new_table();
    if (!kernel_cr3 || kernel_cr3 >= (4ull << 30))
        panic("vm: cannot allocate the kernel PML4 below 4 GiB");
    map_direct(kernel_cr3, top);
    vm_direct_map_top = top;
    map_image(kernel_cr3);
    // Pre-create every kernel-half PML4 entry so address spaces can share them
    // by copying entries 256-511 once.
    pte_t *pml4 = table(kernel_cr3);
    for (int i = 256; i < 512; i++)
        if (!(pml4[i] & PTE_P)) {
            uint64_t pa = new_table();
            if (!pa)
                panic("vm: out of memory");
            pml4[i] = pa | PTE_P | PTE_W;
        }
    write_cr4(read_cr4() | (1u << 7)); // CR4.PGE: global kernel pages survive CR3 loads
    vm_load_kernel();
}

void vm_load_kernel(void)
{
    write_cr3(kernel_cr3);
}
