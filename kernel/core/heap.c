// kmalloc: power-of-two size classes from 16 to 2048 bytes carved out of whole
// pages ("slabs"), and runs of pages for anything larger.
//
// Every slab page and every large run starts with a 64-byte header, so kfree
// finds the header by rounding the pointer down to its page. A slab keeps its
// own free list; slabs with room sit on their class's partial list, and a slab
// that becomes empty goes back to the page allocator unless it is the class's
// last one (so a kmalloc/kfree pair does not thrash the page allocator).
#include "core/heap.h"

#include "lib/memlayout.h"
#include "lib/panic.h"
#include "lib/string.h"

#include "core/pmm.h"
#include "core/spinlock.h"

#define MIN_SHIFT   4  // 16 bytes
#define MAX_SHIFT   11 // 2048 bytes
#define NCLASSES    (MAX_SHIFT - MIN_SHIFT + 1)
#define HEADER      64 // keeps objects 16-byte aligned after the header
#define SLAB_MAGIC  0x51AB51AB
#define LARGE_MAGIC 0x1A26E000

struct free_obj {
    struct free_obj *next;
};

struct page_header {
    uint32_t magic;
    uint32_t cls;   // size class (slab) or page count (large)
    uint32_t inuse; // objects handed out (slab)
    uint32_t capacity;
    struct free_obj *free;
    struct page_header *prev, *next; // partial list links
};
_Static_assert(sizeof(struct page_header) <= HEADER, "slab header");

static struct spinlock heap_lock = SPINLOCK_INIT("heap");
static struct page_header *partial[NCLASSES];
static size_t bytes_in_use;
static size_t empty_slabs; // slab pages kept with no object in use

static unsigned size_class(size_t size)
{
    unsigned c = 0;
    while ((1ul << (c + MIN_SHIFT)) < size)
        c++;
    return c;
}

static void list_remove(struct page_header *h)
{
    if (h->prev)
        h->prev->next = h->next;
    else
        partial[h->cls] = h->next;
    if (h->next)
        h->next->prev = h->prev;
    h->prev = h->next = NULL;
}

static void list_push(struct page_header *h)
{
    h->prev = NULL;
    h->next = partial[h->cls];
    if (h->next)
        h->next->prev = h;
    partial[h->cls] = h;
}

static struct page_header *new_slab(unsigned cls)
{
    uint64_t pa = pmm_alloc_page();
    if (!pa)
        return NULL;
    struct page_header *h = phys_to_virt(pa);
    size_t size = 1ul << (cls + MIN_SHIFT);
    *h = (struct page_header){.magic = SLAB_MAGIC, .cls = cls};
    h->capacity = (uint32_t)((PAGE_SIZE - HEADER) / size);
    for (uint32_t i = h->capacity; i-- > 0;) {
        struct free_obj *o = (struct free_obj *)((uint8_t *)h + HEADER + i * size);
        o->next = h->free;
        h->free = o;
    }
    return h;
}

static void *large_alloc(size_t size)
{
    size_t pages = (size + HEADER + PAGE_SIZE - 1) / PAGE_SIZE;
    uint64_t pa = pmm_alloc_pages(pages);
    if (!pa)
        return NULL;
    struct page_header *h = phys_to_virt(pa);
    *h = (struct page_header){.magic = LARGE_MAGIC, .cls = (uint32_t)pages};
    return (uint8_t *)h + HEADER;
}

void *kmalloc(size_t size)
{
    if (size == 0)
        size = 1;
    if (size > (1ul << MAX_SHIFT)) {
        void *p = large_alloc(size);
        if (p) {
            uint64_t flags = spin_lock_irqsave(&heap_lock);
            bytes_in_use += ((struct page_header *)((uintptr_t)p - HEADER))->cls * PAGE_SIZE;
            spin_unlock_irqrestore(&heap_lock, flags);
        }
        return p;
    }
    unsigned cls = size_class(size);
    uint64_t flags = spin_lock_irqsave(&heap_lock);
    struct page_header *h = partial[cls];
    if (!h) {
        h = new_slab(cls);
        if (!h) {
            spin_unlock_irqrestore(&heap_lock, flags);
            return NULL;
        }
        list_push(h);
        empty_slabs++;
    }
    if (h->inuse == 0)
        empty_slabs--;
    struct free_obj *o = h->free;
    h->free = o->next;
    if (++h->inuse == h->capacity)
        list_remove(h);
    bytes_in_use += 1ul << (cls + MIN_SHIFT);
    spin_unlock_irqrestore(&heap_lock, flags);
    return o;
}

void kfree(void *p)
{
    if (!p)
        return;
    struct page_header *h = (struct page_header *)ALIGN_DOWN((uintptr_t)p, PAGE_SIZE);
    uint64_t flags = spin_lock_irqsave(&heap_lock);
    if (h->magic == LARGE_MAGIC && (uintptr_t)p == (uintptr_t)h + HEADER) {
        bytes_in_use -= h->cls * PAGE_SIZE;
        size_t pages = h->cls;
        h->magic = 0;
        spin_unlock_irqrestore(&heap_lock, flags);
        pmm_free_pages(virt_to_phys(h), pages);
        return;
    }
    size_t size = 1ul << (h->cls + MIN_SHIFT);
    if (h->magic != SLAB_MAGIC || ((uintptr_t)p - (uintptr_t)h - HEADER) % size)
        panic("kfree: %p is not a heap pointer", p);
    struct free_obj *o = p;
    o->next = h->free;
    h->free = o;
    if (h->inuse-- == h->capacity)
        list_push(h);
    bytes_in_use -= size;
    bool release = h->inuse == 0 && (h->prev || h->next); // keep the class's last slab
    if (release) {
        list_remove(h);
        h->magic = 0;
    } else if (h->inuse == 0) {
        empty_slabs++;
    }
    spin_unlock_irqrestore(&heap_lock, flags);
    if (release)
        pmm_free_page(virt_to_phys(h));
}

size_t heap_bytes_in_use(void)
{
    return READ_ONCE(bytes_in_use);
}

size_t heap_empty_pages(void)
{
    return READ_ONCE(empty_slabs);
}
