// Physical page allocator: a bitmap over every page frame (1 = in use).
//
// Allocation scans from a rotating hint, lowest addresses first on a fresh
// machine; contiguous runs are available for stacks and DMA-less buffers.
#pragma once
#include "lib/types.h"

#include "core/spinlock.h"

struct boot_info;

struct pmm {
    uint64_t *bitmap;
    size_t npages; // frames covered by the bitmap
    size_t nfree;
    size_t hint; // where the next search starts
    struct spinlock lock;
};

// The pure core (host-tested): bitmap of npages frames, all marked in use.
void pmm_core_init(struct pmm *p, uint64_t *bitmap, size_t npages);
void pmm_core_set(struct pmm *p, size_t pfn, size_t count, bool used);
int64_t pmm_core_alloc(struct pmm *p, size_t count); // first pfn of a free run, or -1
void pmm_core_free(struct pmm *p, size_t pfn, size_t count);

// The kernel's allocator, built from the boot memory map.
void pmm_init(const struct boot_info *bi);
uint64_t pmm_alloc_pages(size_t n); // physical address of n contiguous pages, 0 if none
uint64_t pmm_alloc_page(void);
void pmm_free_pages(uint64_t pa, size_t n);
void pmm_free_page(uint64_t pa);
size_t pmm_free_count(void);   // free pages now (leak checks compare it)
size_t pmm_usable_count(void); // pages the memory map offered, minus reservations
