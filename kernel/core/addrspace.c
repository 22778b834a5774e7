// User address spaces.
#include "core/addrspace.h"

#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"
#include "lib/memlayout.h"
#include "lib/string.h"

#include "arch/x86/cpu.h"

#include "core/heap.h"
#include "core/pin.h"
#include "core/pmm.h"
#include "core/vm.h"

bool as_create(struct addrspace *as)
{
    memset(as, 0, sizeof *as);
    as->lock = (struct spinlock)SPINLOCK_INIT("address space");
    as->pml4 = pmm_alloc_page();
    if (!as->pml4)
        return false;
    pte_t *mine = phys_to_virt(as->pml4), *kernel = phys_to_virt(kernel_cr3);
    memset(mine, 0, PAGE_SIZE / 2);
    memcpy(mine + 256, kernel + 256, PAGE_SIZE / 2); // the shared kernel half
    return true;
}

uint64_t as_lookup(struct addrspace *as, uint64_t va)
{
    pte_t *e = vm_walk(as->pml4, va, false);
    return e && (*e & PTE_P) ? *e & PTE_ADDR : 0;
}

static void unmap_page(struct addrspace *as, uint64_t va)
{
    pte_t *e = vm_walk(as->pml4, va, false);
    if (!e || !(*e & PTE_P))
        return;
    pin_free_or_orphan(*e & PTE_ADDR); // a pinned profile buffer outlives its mapping
    *e = 0;
    as->pages--;
    if (read_cr3() == as->pml4)
        invlpg(va);
}

static bool overlaps(struct addrspace *as, uint64_t start, uint64_t end)
{
    for (struct region *r = as->regions; r; r = r->next)
        if (start < r->end && r->start < end)
            return true;
    return false;
}

int32_t as_map(struct addrspace *as, uint64_t va, uint64_t size, uint32_t prot)
{
    if (size == 0 || (va & (PAGE_SIZE - 1)) || !user_range_ok(va, size) || va < USER_MIN)
        return STATUS_INVALID_PARAMETER;
    uint64_t end = va + ALIGN_UP(size, PAGE_SIZE);
    if (!(prot & PROT_DEMAND) && (end - va) / PAGE_SIZE > pmm_free_count())
        return STATUS_NO_MEMORY; // fail at once rather than after taking every page
    struct region *r = kmalloc(sizeof *r);
    if (!r)
        return STATUS_NO_MEMORY;
    uint64_t f = spin_lock_irqsave(&as->lock);
    if (overlaps(as, va, end)) {
        spin_unlock_irqrestore(&as->lock, f);
        kfree(r);
        return STATUS_INVALID_PARAMETER;
    }
    uint64_t flags = PTE_U | (prot & PROT_WRITE ? PTE_W : 0) |
                     (!(prot & PROT_EXEC) && vm_nx_supported() ? PTE_NX : 0);
    for (uint64_t p = va; p < end && !(prot & PROT_DEMAND); p += PAGE_SIZE) {
        uint64_t pa = pmm_alloc_page();
        if (!pa || !vm_map_page(as->pml4, p, pa, flags)) {
            if (pa)
                pmm_free_page(pa);
            for (uint64_t q = va; q < p; q += PAGE_SIZE)
                unmap_page(as, q);
            spin_unlock_irqrestore(&as->lock, f);
            kfree(r);
            return STATUS_NO_MEMORY;
        }
        memset(phys_to_virt(pa), 0, PAGE_SIZE);
        as->pages++;
    }
    *r = (struct region){va, end, prot, NULL};
    struct region **pp = &as->regions;
    while (*pp && (*pp)->start < va)
        pp = &(*pp)->next;
    r->next = *pp;
    *pp = r;
    spin_unlock_irqrestore(&as->lock, f);
    return STATUS_SUCCESS;
}

// Unmap [va, va+size) from whatever regions cover it, splitting one if needed.
int32_t as_unmap(struct addrspace *as, uint64_t va, uint64_t size)
{
    if (size == 0 || (va & (PAGE_SIZE - 1)) || !user_range_ok(va, size))
        return STATUS_INVALID_PARAMETER;
    uint64_t end = va + ALIGN_UP(size, PAGE_SIZE);
    struct region *spare = kmalloc(sizeof *spare); // for a split
    if (!spare)
        return STATUS_NO_MEMORY;
    uint64_t f = spin_lock_irqsave(&as->lock);
    if (!overlaps(as, va, end)) {
        spin_unlock_irqrestore(&as->lock, f);
        kfree(spare);
        return STATUS_INVALID_PARAMETER;
    }
    for (struct region **pp = &as->regions; *pp;) {
        struct region *r = *pp;
        if (r->end <= va || end <= r->start) {
            pp = &r->next;
            continue;
        }
        uint64_t s = MAX(r->start, va), e = MIN(r->end, end);
        for (uint64_t p = s; p < e; p += PAGE_SIZE)
            unmap_page(as, p);
        if (s == r->start && e == r->end) { // whole region
            *pp = r->next;
            kfree(r);
            continue;
        }
        if (s == r->start) {
            r->start = e;
        } else if (e == r->end) {
            r->end = s;
        } else { // a hole in the middle: split
            *spare = (struct region){e, r->end, r->prot, r->next};
            r->end = s;
            r->next = spare;
            spare = NULL;
        }
        pp = &r->next;
    }
    spin_unlock_irqrestore(&as->lock, f);
    kfree(spare);
    return STATUS_SUCCESS;
}

// The lowest gap of size bytes above USER_MMAP_BASE. Freed ranges are reused
// first, which keeps the page tables of a long-running program from growing.
uint64_t as_find_free(struct addrspace *as, uint64_t size)
{
    size = ALIGN_UP(size, PAGE_SIZE);
    uint64_t f = spin_lock_irqsave(&as->lock);
    uint64_t va = USER_MMAP_BASE;
    for (struct region *r = as->regions; r; r = r->next) {
        if (r->end <= va)
            continue;
        if (r->start >= va + size)
            break;
        va = r->end;
    }
    spin_unlock_irqrestore(&as->lock, f);
    return va + size <= USER_STACK_TOP - USER_STACK_SIZE ? va : 0;
}

bool as_write(struct addrspace *as, uint64_t va, const void *src, uint64_t n)
{
    const uint8_t *s = src;
    while (n) {
        uint64_t pa = as_lookup(as, va);
        if (!pa)
            return false;
        uint64_t off = va & (PAGE_SIZE - 1), chunk = MIN(n, PAGE_SIZE - off);
        memcpy((uint8_t *)phys_to_virt(pa) + off, s, chunk);
        va += chunk;
        s += chunk;
        n -= chunk;
    }
    return true;
}

// Free the page tables below table (level 3 = PML4 ... 1 = PD), user half only.
static void free_tables(uint64_t table_pa, int level)
{
    pte_t *t = phys_to_virt(table_pa);
    int n = level == 3 ? 256 : 512;
    for (int i = 0; i < n; i++)
        if ((t[i] & PTE_P) && level > 1)
            free_tables(t[i] & PTE_ADDR, level - 1);
        else if ((t[i] & PTE_P) && level == 1)
            pmm_free_page(t[i] & PTE_ADDR); // a page table
    pmm_free_page(table_pa);
}

bool as_demand_fault(struct addrspace *as, uint64_t va)
{
    va = ALIGN_DOWN(va, PAGE_SIZE);
    uint64_t f = spin_lock_irqsave(&as->lock);
    struct region *r = as->regions;
    while (r && !(r->start <= va && va < r->end))
        r = r->next;
    bool ok = false;
    if (r && (r->prot & PROT_DEMAND) && !as_lookup(as, va)) {
        uint64_t flags = PTE_U | (r->prot & PROT_WRITE ? PTE_W : 0) |
                         (!(r->prot & PROT_EXEC) && vm_nx_supported() ? PTE_NX : 0);
        uint64_t pa = pmm_alloc_page();
        if (pa) {
            memset(phys_to_virt(pa), 0, PAGE_SIZE);
            ok = vm_map_page(as->pml4, va, pa, flags);
            if (ok)
                as->pages++;
            else
                pmm_free_page(pa);
        }
    }
    spin_unlock_irqrestore(&as->lock, f);
    return ok;
}

void as_destroy(struct addrspace *as)
{
    while (as->regions) {
        struct region *r = as->regions;
        for (uint64_t p = r->start; p < r->end; p += PAGE_SIZE)
            unmap_page(as, p);
        as->regions = r->next;
        kfree(r);
    }
    if (as->pml4)
        free_tables(as->pml4, 3);
    as->pml4 = 0;
}

bool as_range_writable(struct addrspace *as, uint64_t va, uint64_t n)
{
    if (!n || !user_range_ok(va, n))
        return false;
    uint64_t f = spin_lock_irqsave(&as->lock);
    bool ok = true;
    for (uint64_t p = ALIGN_DOWN(va, PAGE_SIZE); ok && p < va + n; p += PAGE_SIZE) {
        pte_t *e = vm_walk(as->pml4, p, false);
        ok = e && (*e & (PTE_P | PTE_U | PTE_W)) == (PTE_P | PTE_U | PTE_W);
    }
    spin_unlock_irqrestore(&as->lock, f);
    return ok;
}
