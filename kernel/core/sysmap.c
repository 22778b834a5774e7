// System-space mappings (see sysmap.h): a 4 GiB window of kernel virtual
// addresses, handed out a page at a time by a next-fit bitmap. It holds
// every buffer of the most profiles NT's limit lets run (8,192 per CPU, each
// at least a page: 2 GiB at 64 CPUs), beside the big buffers sysmap_alloc
// gives (PMC log rings, /tmp files: bounded by memory). The window's four
// page directories are made at boot under a kernel-half PML4 entry that every
// address space shares (vm_init), so a mapping made here is seen in all of
// them at once.
// A page table is allocated when a mapping first needs it and freed by the
// first purge after the last mapping in it went.
//
// Unmapping interrupts no CPU. Another CPU may still hold a translation of an
// unmapped page in its TLB, but nothing reads through it any more (the caller
// saw to that), so it is harmless as long as the address is not mapped
// again: unmapped pages are "stale" and not handed out, and page tables left
// empty stay in place, until a purge flushes every CPU's TLB once for all of
// them (as Linux's lazy vunmap does: mm/vmalloc.c, purge_vmap_area_lazy). A
// purge comes when the window has no room, or when a leak check wants every
// page back.
#include "core/sysmap.h"

#include "lib/memlayout.h"
#include "lib/panic.h"
#include "lib/param.h"

#include "arch/x86/cpu.h"

#include "core/mutex.h"
#include "core/pmm.h"
#include "core/smp.h"
#include "core/vm.h"

#define SYSMAP_BASE  0xFFFFFF0000000000ull // PML4 entry 510: below the kernel image's
#define SYSMAP_PAGES (1ull << 20)          // 4 GiB: four page directories
#define PD_TABLES    512                   // page tables one page directory holds
#define PT_PAGES     512                   // pages one page table maps

static struct mutex sysmap_mutex = MUTEX_INIT("sysmap");
static uint64_t used[SYSMAP_PAGES / 64];                // bit i: page i of the window is mapped
static pte_t *pds[SYSMAP_PAGES / PT_PAGES / PD_TABLES]; // the window's page directories
static uint64_t freed[SYSMAP_PAGES / PT_PAGES];         // page tables take_out_tables took out
static uint64_t stale[SYSMAP_PAGES / 64];               // bit i: page i unmapped, not yet flushed

static bool page_used(uint64_t i)
{
    return (used[i / 64] | stale[i / 64]) & (1ull << (i % 64));
}

static void mark(uint64_t first, uint64_t n, bool on)
{
    for (uint64_t i = first; i < first + n; i++) {
        if (on)
            used[i / 64] |= 1ull << (i % 64);
        else
            used[i / 64] &= ~(1ull << (i % 64));
    }
}

// A run of n free pages in the window, searched from where the last one
// ended (next fit: the stale pages left behind are not scanned again until
// the search wraps); SYSMAP_PAGES when none. Whole words of busy pages are
// skipped at once.
static uint64_t cursor;

static uint64_t find_from(uint64_t start, uint64_t end, uint64_t n)
{
    uint64_t run = 0;
    for (uint64_t i = start; i < end; i++) {
        if (i % 64 == 0 && i + 64 <= end && (used[i / 64] | stale[i / 64]) == ~0ull) {
            run = 0;
            i += 63;
            continue;
        }
        run = page_used(i) ? 0 : run + 1;
        if (run == n)
            return i + 1 - n;
    }
    return SYSMAP_PAGES;
}

static uint64_t find_free(uint64_t n)
{
    uint64_t first = find_from(cursor, SYSMAP_PAGES, n);
    if (first == SYSMAP_PAGES)
        first = find_from(0, MIN(cursor + n, SYSMAP_PAGES), n);
    if (first != SYSMAP_PAGES)
        cursor = first + n;
    return first;
}

static uint64_t va_of(uint64_t page)
{
    return SYSMAP_BASE + page * PAGE_SIZE;
}

static void clear_entries(uint64_t first, uint64_t n)
{
    for (uint64_t i = first; i < first + n; i++) {
        pte_t *e = vm_walk(kernel_cr3, va_of(i), false);
        if (e)
            *e = 0;
    }
}

// Take out of the page directory every page table of pages [first, first + n)
// with no page in use; their physical addresses go to freed[], to be freed
// once no CPU can be walking them. Returns how many. Under the mutex.
static unsigned take_out_tables(uint64_t first, uint64_t n)
{
    unsigned nfreed = 0;
    for (uint64_t t = first / PT_PAGES; n && t <= (first + n - 1) / PT_PAGES; t++) {
        uint64_t in_use = 0;
        for (uint64_t k = 0; k < PT_PAGES / 64; k++)
            in_use |= used[t * (PT_PAGES / 64) + k] | stale[t * (PT_PAGES / 64) + k];
        pte_t *pde = &pds[t / PD_TABLES][t % PD_TABLES];
        if (!in_use && (*pde & PTE_P)) {
            freed[nfreed++] = *pde & PTE_ADDR;
            *pde = 0;
        }
    }
    return nfreed;
}

static void flush_on_cpu(void *arg)
{
    UNUSED(arg);
    write_cr3(read_cr3()); // every non-global translation, and the paging-structure caches
}

// Take the page tables with no page in use out of the directory, flush every
// CPU's TLB (and paging-structure caches) once, then hand out the stale pages
// and free those tables. Under the mutex.
static void purge(void)
{
    for (uint64_t i = 0; i < SYSMAP_PAGES / 64; i++)
        stale[i] = 0;
    unsigned nfreed = take_out_tables(0, SYSMAP_PAGES);
    smp_call_all(flush_on_cpu, NULL);
    for (unsigned k = 0; k < nfreed; k++)
        pmm_free_page(freed[k]);
}

void sysmap_init(void)
{
    for (uint64_t i = 0; i < sizeof pds / sizeof pds[0]; i++) {
        pds[i] =
            vm_walk_level(kernel_cr3, SYSMAP_BASE + i * PD_TABLES * PT_PAGES * PAGE_SIZE, 1, true);
        if (!pds[i])
            panic("sysmap: out of memory");
    }
}

// Map npages pages at consecutive addresses: pa[0..npages), or, pa NULL,
// pages allocated here one at a time. NULL when out of room, page tables or
// (pa NULL) pages: then nothing stays mapped or allocated.
static void *map_pages(const uint64_t *pa, uint64_t npages)
{
    if (npages == 0 || npages > SYSMAP_PAGES)
        return NULL;
    mutex_lock(&sysmap_mutex);
    uint64_t first = find_free(npages);
    if (first == SYSMAP_PAGES) { // stale pages may make room
        purge();
        first = find_free(npages);
    }
    void *va = NULL;
    if (first < SYSMAP_PAGES) {
        uint64_t flags = PTE_W | (vm_nx_supported() ? PTE_NX : 0), i = 0;
        mark(first, npages, true);
        for (; i < npages; i++) {
            uint64_t page = pa ? pa[i] : pmm_alloc_page();
            if (!page)
                break;
            if (!vm_map_page(kernel_cr3, va_of(first + i), page, flags)) {
                if (!pa)
                    pmm_free_page(page);
                break;
            }
        }
        if (i == npages) {
            va = (void *)(uintptr_t)va_of(first);
        } else { // out of memory: never used, so nothing to flush
            for (uint64_t k = 0; !pa && k < i; k++)
                pmm_free_page(*vm_walk(kernel_cr3, va_of(first + k), false) & PTE_ADDR);
            mark(first, npages, false);
            clear_entries(first, npages);
            unsigned nfreed = take_out_tables(first, npages);
            for (unsigned k = 0; k < nfreed; k++)
                pmm_free_page(freed[k]);
        }
    }
    mutex_unlock(&sysmap_mutex);
    return va;
}

void *sysmap_map(const uint64_t *pa, uint64_t npages)
{
    return pa ? map_pages(pa, npages) : NULL;
}

void *sysmap_alloc(uint64_t npages)
{
    return map_pages(NULL, npages);
}

// The pages go (freed too when free), their addresses stale until a purge.
static void unmap_pages(void *va, uint64_t npages, bool free)
{
    uint64_t first = ((uint64_t)(uintptr_t)va - SYSMAP_BASE) / PAGE_SIZE;
    mutex_lock(&sysmap_mutex);
    for (uint64_t i = first; free && i < first + npages; i++)
        pmm_free_page(*vm_walk(kernel_cr3, va_of(i), false) & PTE_ADDR);
    mark(first, npages, false);
    for (uint64_t i = first; i < first + npages; i++)
        stale[i / 64] |= 1ull << (i % 64);
    clear_entries(first, npages);
    mutex_unlock(&sysmap_mutex);
}

void sysmap_unmap(void *va, uint64_t npages)
{
    unmap_pages(va, npages, false);
}

void sysmap_free(void *va, uint64_t npages)
{
    unmap_pages(va, npages, true);
}

void sysmap_purge(void)
{
    mutex_lock(&sysmap_mutex);
    purge();
    mutex_unlock(&sysmap_mutex);
}
