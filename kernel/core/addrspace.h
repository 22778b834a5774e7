// User address spaces: a PML4 whose upper half is the kernel's, and a list of
// mapped regions in the lower half.
//
// Pages are allocated and zeroed when a region is mapped, unless it is
// PROT_DEMAND (then at the first touch): a fault on any other user address is
// a bug of the program, and the profiler can pin buffers simply. A process
// has one thread, so unmapping needs only a local TLB flush: any other CPU
// that ran this address space has since loaded another CR3, which drops its
// non-global entries.
//
// Interrupts-off time: the spinlock is held with interrupts off (a demand
// fault and a profile's pinning take it, and the sample path must never find
// the tables half changed), so nothing here holds it for more than a bounded
// batch of pages, whatever the size of a mapping: pages are allocated and
// zeroed with interrupts on, one at a time under the lock; unmapping, exit
// and range checks drop and retake it every AS_BATCH pages freed or AS_SCAN
// entries looked at (core/irqoff.h measures every such section;
// memtests checks them against IRQOFF_SPIN_MAX_US).
//
// Memory limits (lib/abi/syscalls.h): each address space has a commit limit
// and a reserve, set at its creation from its process's privilege.
#pragma once
#include "lib/abi/syscalls.h"
#include "lib/param.h"
#include "lib/types.h"

#include "core/mutex.h"
#include "core/spinlock.h"

#define USER_MIN        0x0000000000010000ull // nothing is mapped below: NULL-ish pointers fault
#define USER_BASE       0x0000000000400000ull // programs are linked here
#define USER_MMAP_BASE  0x0000100000000000ull // SysMap without a hint starts here
#define USER_STACK_TOP  0x00007FFFFFF00000ull
#define USER_STACK_SIZE (256 * 1024)
#define USER_TOP \
    USER_ADDRESS_LIMIT // first address user pointers may not reach (lib/abi/syscalls.h)

struct region {
    uint64_t start, end; // page aligned, end exclusive
    uint32_t prot;       // PROT_* of lib/abi/syscalls.h
    struct region *next; // sorted by start
};

struct addrspace {
    uint64_t pml4; // physical
    struct region *regions;
    uint32_t nregions;         // at most MAP_REGIONS_MAX
    uint64_t pages;            // user pages present
    uint64_t committed;        // pages of every region, present or not (the commit charge)
    uint64_t orphans;          // pages unmapped while pinned, still charged (atomic; core/pin.h)
    uint64_t limit;            // committed + orphans may not pass it; 0: no limit
    uint64_t reserve;          // free pages its allocations must leave; 0: none
    uint64_t exec_lo, exec_hi; // [lo, hi): the image's executable segments (elf_load)
    // The page tables, the region list and the counts. Held only for short
    // sections (above); a demand fault and pinning take only this.
    struct spinlock lock;
    // Map, unmap and release, one at a time: the region list changes only
    // under both, so the holder of this one reads it without the spinlock,
    // and a long unmap may drop the spinlock between its batches.
    struct mutex map_mutex;
};

// A new, empty address space with the memory limits of an unprivileged
// process (privileged: none). False when out of memory.
bool as_create(struct addrspace *as, bool privileged);
// Unmap every region and free every user page table, with interrupts on: the
// address space may be loaded (exit's, before it loads the kernel's tables).
void as_release(struct addrspace *as);
// as_release, then the PML4: the address space is loaded on no CPU.
void as_destroy(struct addrspace *as);
// Map [va, va+size) zeroed with prot; NTSTATUS (overlap, range, memory,
// limits). May sleep.
int32_t as_map(struct addrspace *as, uint64_t va, uint64_t size, uint32_t prot);
int32_t as_unmap(struct addrspace *as, uint64_t va, uint64_t size); // may sleep
uint64_t as_find_free(struct addrspace *as, uint64_t size);         // 0 if none; may sleep
// Copy into the address space through the direct map (it need not be loaded).
bool as_write(struct addrspace *as, uint64_t va, const void *src, uint64_t n);
// Physical address of the page containing va, 0 if unmapped.
uint64_t as_lookup(struct addrspace *as, uint64_t va);
// A ring-3 fault at va in an untouched PROT_DEMAND page: map a zeroed page.
// False when va is not such a page (or memory is out): the fault is the program's.
bool as_demand_fault(struct addrspace *as, uint64_t va);

static inline bool user_range_ok(uint64_t va, uint64_t n)
{
    return va < USER_TOP && n <= USER_TOP - va;
}

// Whether pages more pages may be taken for as's process now: an
// unprivileged process's own pages, and the kernel memory it asks for (a PMC
// log's rings, a /tmp file), must leave the privileged reserve free. Read
// without a lock: processes allocating at once may each pass, so the reserve
// can lose what one call takes, never more per caller.
bool as_reserve_admits(const struct addrspace *as, uint64_t pages);

// Whether every page of [va, va+n) is mapped writable in as (n > 0).
bool as_range_writable(struct addrspace *as, uint64_t va, uint64_t n);
