// System-space mappings of locked pages, as NT's MmMapLockedPages gives a
// driver (Windows Driver Kit, "MmMapLockedPagesSpecifyCache"): pages already
// pinned, wherever they sit in physical memory, seen by the kernel as one
// contiguous range of kernel virtual addresses, the same in every address
// space. A profile's buffer is mapped so, as NT's KeStartProfile maps it, so
// that the sample path finds a bucket with one shift and one add.
#pragma once
#include "lib/types.h"

void sysmap_init(void); // at boot, after vm_init: the window's page directory

// Map the npages pages pa[0..npages) at consecutive kernel addresses,
// read/write and never executable. NULL when the window has no room for them
// or page tables cannot be allocated. May sleep.
void *sysmap_map(const uint64_t *pa, uint64_t npages);

// Undo sysmap_map, interrupting no CPU. The caller guarantees that nothing
// reads or writes through va any more; a CPU may keep a stale translation
// until the next purge, before which the addresses are not handed out again.
// The pages stay pinned (they may be unpinned at once).
void sysmap_unmap(void *va, uint64_t npages);
// System-space memory of npages whole pages, each allocated alone and mapped
// here at consecutive addresses (not zeroed): a big buffer (a PMC log's
// rings, a /tmp file) found on a machine whose free memory is in pieces,
// where kmalloc's physically contiguous runs are not, as NT's big pool
// allocations are virtually contiguous only. NULL when out of pages, page
// tables or room in the window. May sleep.
void *sysmap_alloc(uint64_t npages);
// Unmap and free what sysmap_alloc gave (npages as asked), interrupting no
// CPU, as sysmap_unmap; the caller guarantees that nothing uses it any more.
void sysmap_free(void *va, uint64_t npages);
// Flush every CPU's stale translations and free the page tables unmapping
// took out: leak checks call it before they count free pages.
void sysmap_purge(void);
