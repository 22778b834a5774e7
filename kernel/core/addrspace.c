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

// The most pages one section under the lock frees (each a walk, a TLB entry
// and a frame back to the allocator), and the most entries it looks at: a
// few hundred ns each on hardware, some us under TCG, so a section stays far
// under IRQOFF_SPIN_MAX_US (memtests measures them).
#define AS_BATCH 64
#define AS_SCAN  512
#define PT_SPAN  (512 * PAGE_SIZE) // what one page table maps

// The limits of lib/abi/syscalls.h, for an unprivileged process. Half of
// memory: one runaway or hostile program (a leak, a fuzzer) can take no more,
// so the shell, a profiler and another program still have the other half,
// and no program here comes near it (the suites map a few MiB; memtests'
// unprivileged child, 384 MiB of a 1 GiB machine, is the largest). A
// sixteenth kept free: whatever the unprivileged processes take together
// (each may have half), the privileged ones (init, sudo) and the kernel's own
// allocations (page tables, heap, profile sets) still find memory, as ext4's
// reserved blocks keep root's room. A privileged process has no limit: it
// may need all of a machine (`sudo profile kernel` with big buffers), and it
// is the user the reserve is for.
bool as_create(struct addrspace *as, bool privileged)
{
    memset(as, 0, sizeof *as);
    as->lock = (struct spinlock)SPINLOCK_INIT("address space");
    as->map_mutex = (struct mutex)MUTEX_INIT("address space map");
    if (!privileged) {
        as->limit = pmm_usable_count() / MEM_COMMIT_DIVISOR;
        as->reserve = pmm_usable_count() / MEM_RESERVE_DIVISOR;
    }
    as->pml4 = pmm_alloc_page();
    if (!as->pml4)
        return false;
    pte_t *mine = phys_to_virt(as->pml4), *kernel = phys_to_virt(kernel_cr3);
    memset(mine, 0, PAGE_SIZE / 2);
    memcpy(mine + 256, kernel + 256, PAGE_SIZE / 2); // the shared kernel half
    return true;
}

bool as_reserve_admits(const struct addrspace *as, uint64_t pages)
{
    return !as->reserve || pages + as->reserve <= pmm_free_count();
}

uint64_t as_lookup(struct addrspace *as, uint64_t va)
{
    pte_t *e = vm_walk(as->pml4, va, false);
    return e && (*e & PTE_P) ? *e & PTE_ADDR : 0;
}

// Under the lock: the page at va goes, its entry first, so that nothing
// reaches the frame through this address space once it is freed; a frame a
// profile pins stays, charged to as until its last unpin (core/pin.h).
// Whether a page was there.
static bool unmap_page(struct addrspace *as, uint64_t va)
{
    pte_t *e = vm_walk(as->pml4, va, false);
    if (!e || !(*e & PTE_P))
        return false;
    uint64_t pa = *e & PTE_ADDR;
    *e = 0;
    as->pages--;
    if (read_cr3() == as->pml4)
        invlpg(va);
    pin_free_or_orphan(pa, &as->orphans);
    return true;
}

// Unmap every page present in [start, end), which no region covers any more
// (so no demand fault maps one there meanwhile), in sections that each free
// at most AS_BATCH pages and look at most at AS_SCAN entries; a missing page
// table skips its 2 MiB at once.
static void unmap_range(struct addrspace *as, uint64_t start, uint64_t end)
{
    for (uint64_t p = start; p < end;) {
        uint64_t f = spin_lock_irqsave(&as->lock);
        for (unsigned freed = 0, seen = 0; p < end && freed < AS_BATCH && seen < AS_SCAN; seen++) {
            pte_t *pde = vm_walk_level(as->pml4, p, 1, false);
            if (!pde || !(*pde & PTE_P)) {
                p = ALIGN_DOWN(p, PT_SPAN) + PT_SPAN;
                continue;
            }
            freed += unmap_page(as, p);
            p += PAGE_SIZE;
        }
        spin_unlock_irqrestore(&as->lock, f);
    }
}

// Under the map mutex (the list is stable): whether [start, end) meets a region.
static bool overlaps(struct addrspace *as, uint64_t start, uint64_t end)
{
    for (struct region *r = as->regions; r; r = r->next)
        if (start < r->end && r->start < end)
            return true;
    return false;
}

static uint64_t pte_flags(uint32_t prot)
{
    return PTE_U | (prot & PROT_WRITE ? PTE_W : 0) |
           (!(prot & PROT_EXEC) && vm_nx_supported() ? PTE_NX : 0);
}

// Whether n more pages (present ones, when present) fit as's limits; under
// the map mutex, the only writer of committed and nregions.
static NTSTATUS may_commit(struct addrspace *as, uint64_t n, bool present)
{
    uint64_t charged = as->committed + __atomic_load_n(&as->orphans, __ATOMIC_RELAXED);
    if (as->nregions >= MAP_REGIONS_MAX)
        return STATUS_QUOTA_EXCEEDED;
    if (as->limit && charged + n > as->limit)
        return STATUS_COMMITMENT_LIMIT;
    if (present && !as_reserve_admits(as, n))
        return STATUS_COMMITMENT_LIMIT; // the privileged reserve
    if (present && n > pmm_free_count())
        return STATUS_NO_MEMORY; // fail at once rather than after taking every page
    return STATUS_SUCCESS;
}

// Allocate, zero and map [va, end) a page at a time: the allocation and the
// zeroing with interrupts on, only the entry under the lock. No region covers
// the range yet (a demand fault finds none) and the map mutex keeps other
// maps out, so nothing else maps there meanwhile. On failure, what it mapped
// is unmapped. An unprivileged process's pages must leave the reserve free,
// page by page: other processes allocate meanwhile.
static NTSTATUS populate(struct addrspace *as, uint64_t va, uint64_t end, uint64_t flags)
{
    for (uint64_t p = va; p < end; p += PAGE_SIZE) {
        NTSTATUS s = STATUS_SUCCESS;
        uint64_t pa = 0;
        if (!as_reserve_admits(as, 1))
            s = STATUS_COMMITMENT_LIMIT;
        else if (!(pa = pmm_alloc_page()))
            s = STATUS_NO_MEMORY;
        if (pa) {
            memset(phys_to_virt(pa), 0, PAGE_SIZE);
            uint64_t f = spin_lock_irqsave(&as->lock);
            bool ok = vm_map_page(as->pml4, p, pa, flags); // may add a page table
            as->pages += ok;
            spin_unlock_irqrestore(&as->lock, f);
            if (!ok) {
                pmm_free_page(pa);
                s = STATUS_NO_MEMORY;
            }
        }
        if (!NT_SUCCESS(s)) {
            unmap_range(as, va, p);
            return s;
        }
    }
    return STATUS_SUCCESS;
}

int32_t as_map(struct addrspace *as, uint64_t va, uint64_t size, uint32_t prot)
{
    if (size == 0 || (va & (PAGE_SIZE - 1)) || !user_range_ok(va, size) || va < USER_MIN)
        return STATUS_INVALID_PARAMETER;
    uint64_t end = va + ALIGN_UP(size, PAGE_SIZE), n = (end - va) / PAGE_SIZE;
    struct region *r = kmalloc(sizeof *r);
    if (!r)
        return STATUS_NO_MEMORY;
    mutex_lock(&as->map_mutex);
    bool present = !(prot & PROT_DEMAND);
    NTSTATUS s = overlaps(as, va, end) ? STATUS_INVALID_PARAMETER : may_commit(as, n, present);
    if (NT_SUCCESS(s) && present)
        s = populate(as, va, end, pte_flags(prot));
    if (NT_SUCCESS(s)) {
        struct region **pp = &as->regions; // the list is stable under the mutex
        while (*pp && (*pp)->start < va)
            pp = &(*pp)->next;
        *r = (struct region){va, end, prot, *pp};
        uint64_t f = spin_lock_irqsave(&as->lock);
        *pp = r; // the region appears whole: every page is there
        as->nregions++;
        as->committed += n;
        spin_unlock_irqrestore(&as->lock, f);
        r = NULL;
    }
    mutex_unlock(&as->map_mutex);
    kfree(r);
    return s;
}

// Under the lock, take [s, e) out of the region *pp, which covers it: the
// whole region (returned, to be freed), an end, or a hole in the middle
// (*spare becomes the part after it).
static struct region *cut(struct addrspace *as, struct region **pp, uint64_t s, uint64_t e,
                          struct region **spare)
{
    struct region *r = *pp, *whole = NULL;
    uint64_t f = spin_lock_irqsave(&as->lock);
    if (s == r->start && e == r->end) {
        *pp = r->next;
        whole = r;
        as->nregions--;
    } else if (s == r->start) {
        r->start = e;
    } else if (e == r->end) {
        r->end = s;
    } else {
        **spare = (struct region){e, r->end, r->prot, r->next};
        r->end = s;
        r->next = *spare;
        *spare = NULL;
        as->nregions++;
    }
    as->committed -= (e - s) / PAGE_SIZE;
    spin_unlock_irqrestore(&as->lock, f);
    return whole;
}

// Whether unmapping [va, end) would leave one region as two.
static bool splits(struct addrspace *as, uint64_t va, uint64_t end)
{
    for (struct region *r = as->regions; r; r = r->next)
        if (r->start < va && end < r->end)
            return true;
    return false;
}

// Unmap [va, va+size) from whatever regions cover it, splitting one if needed.
// Each region's part leaves the list first, then its pages go in batches.
int32_t as_unmap(struct addrspace *as, uint64_t va, uint64_t size)
{
    if (size == 0 || (va & (PAGE_SIZE - 1)) || !user_range_ok(va, size))
        return STATUS_INVALID_PARAMETER;
    uint64_t end = va + ALIGN_UP(size, PAGE_SIZE);
    struct region *spare = kmalloc(sizeof *spare); // for a split
    if (!spare)
        return STATUS_NO_MEMORY;
    mutex_lock(&as->map_mutex);
    NTSTATUS s = STATUS_SUCCESS;
    if (!overlaps(as, va, end))
        s = STATUS_INVALID_PARAMETER;
    else if (as->nregions >= MAP_REGIONS_MAX && splits(as, va, end))
        s = STATUS_QUOTA_EXCEEDED; // one region more than a process may hold
    for (struct region **pp = &as->regions; NT_SUCCESS(s) && *pp;) {
        struct region *r = *pp;
        if (r->end <= va || end <= r->start) {
            pp = &r->next;
            continue;
        }
        uint64_t from = MAX(r->start, va), to = MIN(r->end, end);
        struct region *whole = cut(as, pp, from, to, &spare);
        unmap_range(as, from, to);
        kfree(whole);
        if (!whole) // r stays (shrunk, or split with the rest after it)
            pp = &r->next;
    }
    mutex_unlock(&as->map_mutex);
    kfree(spare);
    return s;
}

// The lowest gap of size bytes above USER_MMAP_BASE. Freed ranges are reused
// first, which keeps the page tables of a long-running program from growing.
uint64_t as_find_free(struct addrspace *as, uint64_t size)
{
    size = ALIGN_UP(size, PAGE_SIZE);
    mutex_lock(&as->map_mutex); // a long list is walked with interrupts on
    uint64_t va = USER_MMAP_BASE;
    for (struct region *r = as->regions; r; r = r->next) {
        if (r->end <= va)
            continue;
        if (r->start >= va + size)
            break;
        va = r->end;
    }
    mutex_unlock(&as->map_mutex);
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

// Free the page tables below table (level 3 = PML4 ... 1 = PD), user half
// only, and table itself. Nothing may reach them any more.
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

// The page is allocated and zeroed before the lock is taken, and given back
// when the fault is not a demand page's. (The fault itself runs with
// interrupts off: the region walk is bounded by MAP_REGIONS_MAX.)
bool as_demand_fault(struct addrspace *as, uint64_t va)
{
    va = ALIGN_DOWN(va, PAGE_SIZE);
    if (!as_reserve_admits(as, 1))
        return false; // the privileged reserve: the fault kills, as out of memory
    uint64_t pa = pmm_alloc_page();
    if (!pa)
        return false;
    memset(phys_to_virt(pa), 0, PAGE_SIZE);
    uint64_t f = spin_lock_irqsave(&as->lock);
    struct region *r = as->regions;
    while (r && !(r->start <= va && va < r->end))
        r = r->next;
    bool ok = r && (r->prot & PROT_DEMAND) && !as_lookup(as, va) &&
              vm_map_page(as->pml4, va, pa, pte_flags(r->prot));
    as->pages += ok;
    spin_unlock_irqrestore(&as->lock, f);
    if (!ok)
        pmm_free_page(pa);
    return ok;
}

void as_release(struct addrspace *as)
{
    if (!as->pml4)
        return;
    mutex_lock(&as->map_mutex);
    while (as->regions) {
        struct region **head = &as->regions, *r = *head;
        struct region *whole = cut(as, head, r->start, r->end, NULL);
        unmap_range(as, whole->start, whole->end);
        kfree(whole);
    }
    // Each user PML4 entry is taken out under the lock and this CPU's
    // paging-structure caches flushed if the tables are loaded here; the
    // tree below it, reachable by no walk now, is freed with interrupts on.
    pte_t *pml4 = phys_to_virt(as->pml4);
    for (int i = 0; i < 256; i++) {
        if (!(READ_ONCE(pml4[i]) & PTE_P))
            continue;
        uint64_t f = spin_lock_irqsave(&as->lock);
        pte_t e = pml4[i];
        pml4[i] = 0;
        if (read_cr3() == as->pml4)
            write_cr3(as->pml4);
        spin_unlock_irqrestore(&as->lock, f);
        free_tables(e & PTE_ADDR, 2);
    }
    mutex_unlock(&as->map_mutex);
}

void as_destroy(struct addrspace *as)
{
    if (!as->pml4)
        return;
    as_release(as);
    pmm_free_page(as->pml4);
    as->pml4 = 0;
}

// In sections of AS_SCAN pages: a profile's buffer may be 4 GiB.
bool as_range_writable(struct addrspace *as, uint64_t va, uint64_t n)
{
    if (!n || !user_range_ok(va, n))
        return false;
    bool ok = true;
    for (uint64_t p = ALIGN_DOWN(va, PAGE_SIZE); ok && p < va + n;) {
        uint64_t f = spin_lock_irqsave(&as->lock);
        for (unsigned i = 0; ok && i < AS_SCAN && p < va + n; i++, p += PAGE_SIZE) {
            pte_t *e = vm_walk(as->pml4, p, false);
            ok = e && (*e & (PTE_P | PTE_U | PTE_W)) == (PTE_P | PTE_U | PTE_W);
        }
        spin_unlock_irqrestore(&as->lock, f);
    }
    return ok;
}
