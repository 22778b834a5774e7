// Physical memory: which frames are free, from the multiboot2 memory map.
#include "core/pmm.h"

#include "lib/bootinfo.h"
#include "lib/elf.h"
#include "lib/memlayout.h"
#include "lib/panic.h"
#include "lib/string.h"

static bool test_bit(const struct pmm *p, size_t pfn)
{
    return p->bitmap[pfn / 64] & (1ull << (pfn % 64));
}

void pmm_core_init(struct pmm *p, uint64_t *bitmap, size_t npages)
{
    p->bitmap = bitmap;
    p->npages = npages;
    p->nfree = 0;
    p->hint = 0;
    p->lock = (struct spinlock)SPINLOCK_INIT("pmm");
    memset(bitmap, 0xFF, ALIGN_UP(npages, 64) / 8);
}

void pmm_core_set(struct pmm *p, size_t pfn, size_t count, bool used)
{
    for (size_t i = pfn; i < pfn + count && i < p->npages; i++) {
        if (test_bit(p, i) == used)
            continue;
        p->bitmap[i / 64] ^= 1ull << (i % 64);
        p->nfree += used ? -1 : 1;
    }
}

// First-fit from the hint, wrapping once. Whole in-use words are skipped.
int64_t pmm_core_alloc(struct pmm *p, size_t count)
{
    if (count == 0 || count > p->nfree)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        size_t start = pass == 0 ? p->hint : 0, end = pass == 0 ? p->npages : p->hint;
        size_t run = 0;
        for (size_t i = start; i < end; i++) {
            if (run == 0 && i % 64 == 0 && p->bitmap[i / 64] == ~0ull && i + 64 <= end) {
                i += 63;
                continue;
            }
            if (test_bit(p, i)) {
                run = 0;
                continue;
            }
            if (++run == count) {
                size_t first = i + 1 - count;
                pmm_core_set(p, first, count, true);
                p->hint = i + 1 < p->npages ? i + 1 : 0;
                return (int64_t)first;
            }
        }
    }
    return -1;
}

void pmm_core_free(struct pmm *p, size_t pfn, size_t count)
{
    for (size_t i = pfn; i < pfn + count; i++)
        if (i >= p->npages || !test_bit(p, i))
            panic("pmm: freeing frame %#zx that is not allocated", i);
    pmm_core_set(p, pfn, count, false);
}

#ifndef KERNEL_HOSTED
static struct pmm pmm;
static size_t usable;

// Ranges the allocator must never hand out.
struct range {
    uint64_t start, end;
};
static struct range reserved[BOOT_MAX_MODULES + 16];
static unsigned nreserved;

static void reserve(uint64_t start, uint64_t end)
{
    if (end > start && nreserved < ARRAY_SIZE(reserved))
        reserved[nreserved++] =
            (struct range){ALIGN_DOWN(start, PAGE_SIZE), ALIGN_UP(end, PAGE_SIZE)};
}

// The lowest page-aligned address >= 1 MiB in available memory below 4 GiB
// with size bytes that overlap no reservation.
static uint64_t find_free(const struct boot_info *bi, uint64_t size)
{
    for (unsigned i = 0; i < bi->nmmap; i++) {
        const struct mem_region *r = &bi->mmap[i];
        if (r->type != MEM_AVAILABLE)
            continue;
        uint64_t s = ALIGN_UP(MAX(r->base, 0x100000ull), PAGE_SIZE), e = r->base + r->length;
        for (bool moved = true; moved;) {
            moved = false;
            for (unsigned j = 0; j < nreserved; j++) {
                if (s < reserved[j].end && reserved[j].start < s + size) {
                    s = reserved[j].end;
                    moved = true;
                }
            }
        }
        if (s + size <= e && s + size <= (4ull << 30))
            return s;
    }
    return 0;
}

void pmm_init(const struct boot_info *bi)
{
    reserve(0, 0x100000); // real-mode area, BIOS data, the AP trampoline page
    reserve(virt_to_phys(__kernel_start), virt_to_phys(__kernel_end));
    reserve(bi->mbi_start, bi->mbi_end);
    for (unsigned i = 0; i < bi->nmodules; i++)
        reserve(bi->modules[i].start, bi->modules[i].end);
    if (bi->elf.sections && bi->elf.entsize == sizeof(Elf64_Shdr)) {
        const Elf64_Shdr *sh = phys_to_virt(bi->elf.sections);
        for (uint32_t i = 0; i < bi->elf.num; i++) // symbols GRUB loaded outside the image
            if (sh[i].sh_addr && sh[i].sh_addr < KERNEL_VMA)
                reserve(sh[i].sh_addr, sh[i].sh_addr + sh[i].sh_size);
    }

    uint64_t top = 0;
    for (unsigned i = 0; i < bi->nmmap; i++)
        if (bi->mmap[i].type == MEM_AVAILABLE)
            top = MAX(top, bi->mmap[i].base + bi->mmap[i].length);
    size_t npages = top / PAGE_SIZE;
    uint64_t bitmap_bytes = ALIGN_UP(ALIGN_UP(npages, 64) / 8, PAGE_SIZE);
    uint64_t bitmap_pa = find_free(bi, bitmap_bytes);
    if (!bitmap_pa)
        panic("pmm: no room for a %lu-byte frame bitmap", bitmap_bytes);
    reserve(bitmap_pa, bitmap_pa + bitmap_bytes);

    pmm_core_init(&pmm, phys_to_virt(bitmap_pa), npages);
    for (unsigned i = 0; i < bi->nmmap; i++) {
        const struct mem_region *r = &bi->mmap[i];
        if (r->type != MEM_AVAILABLE)
            continue;
        uint64_t s = ALIGN_UP(r->base, PAGE_SIZE), e = ALIGN_DOWN(r->base + r->length, PAGE_SIZE);
        if (e > s)
            pmm_core_set(&pmm, s / PAGE_SIZE, (e - s) / PAGE_SIZE, false);
    }
    for (unsigned i = 0; i < nreserved; i++)
        pmm_core_set(&pmm, reserved[i].start / PAGE_SIZE,
                     (reserved[i].end - reserved[i].start) / PAGE_SIZE, true);
    pmm.hint = 0x100000 / PAGE_SIZE;
    usable = pmm.nfree;
}

uint64_t pmm_alloc_pages(size_t n)
{
    uint64_t flags = spin_lock_irqsave(&pmm.lock);
    int64_t pfn = pmm_core_alloc(&pmm, n);
    spin_unlock_irqrestore(&pmm.lock, flags);
    return pfn < 0 ? 0 : (uint64_t)pfn * PAGE_SIZE;
}

uint64_t pmm_alloc_page(void)
{
    return pmm_alloc_pages(1);
}

void pmm_free_pages(uint64_t pa, size_t n)
{
    uint64_t flags = spin_lock_irqsave(&pmm.lock);
    pmm_core_free(&pmm, pa / PAGE_SIZE, n);
    spin_unlock_irqrestore(&pmm.lock, flags);
}

void pmm_free_page(uint64_t pa)
{
    pmm_free_pages(pa, 1);
}

size_t pmm_free_count(void)
{
    return READ_ONCE(pmm.nfree);
}

size_t pmm_usable_count(void)
{
    return usable;
}
#endif
