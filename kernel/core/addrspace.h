// User address spaces: a PML4 whose upper half is the kernel's, and a list of
// mapped regions in the lower half.
//
// Pages are allocated and zeroed when a region is mapped (no demand paging):
// a fault on a user address is always a bug of the program, and the profiler
// can pin buffers simply. A process has one thread, so unmapping needs only a
// local TLB flush: any other CPU that ran this address space has since loaded
// another CR3, which drops its non-global entries.
#pragma once
#include "lib/abi/syscalls.h"
#include "lib/param.h"
#include "lib/types.h"

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
    uint64_t pages;            // user pages mapped
    uint64_t exec_lo, exec_hi; // [lo, hi): the image's executable segments (elf_load)
    struct spinlock lock;
};

bool as_create(struct addrspace *as);
void as_destroy(struct addrspace *as); // frees every user page and table
// Map [va, va+size) zeroed with prot; NTSTATUS (overlap, range, memory).
int32_t as_map(struct addrspace *as, uint64_t va, uint64_t size, uint32_t prot);
int32_t as_unmap(struct addrspace *as, uint64_t va, uint64_t size);
uint64_t as_find_free(struct addrspace *as, uint64_t size); // 0 if none
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

// Whether every page of [va, va+n) is mapped writable in as (n > 0).
bool as_range_writable(struct addrspace *as, uint64_t va, uint64_t n);
