// Kernel heap: kmalloc/kfree over the page allocator.
#pragma once
#include "lib/types.h"

void *kmalloc(size_t size);     // NULL when out of memory; 16-byte aligned
void kfree(void *p);            // NULL is ignored
size_t heap_bytes_in_use(void); // for leak checks: bytes handed out and not freed
size_t heap_empty_pages(void);  // slab pages kept for reuse with nothing in them (as good as free)

// kmalloc, zeroed.
static inline void *kzalloc(size_t size)
{
    void *p = kmalloc(size);
    if (p)
        __builtin_memset(p, 0, size);
    return p;
}
