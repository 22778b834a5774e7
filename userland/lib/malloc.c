// malloc, free, calloc, realloc over SysMap.
//
// Small requests come from arenas of ARENA_SIZE bytes carved into blocks.
// Every block starts with a 16-byte header holding its own size and the size
// of the block physically before it, so free() can merge a block with both
// neighbours in constant time (boundary tags). Free blocks sit on segregated
// lists, one per power of two of their size, searched first fit from the
// request's class upwards. An arena that becomes entirely free is returned to
// the kernel unless it is the last one (keeping one avoids map/unmap churn).
//
// Requests of BIG_SIZE and more get a mapping of their own, unmapped by free.
//
// Arena layout:  [arena header][block][block]...[end marker: size 0, in use]
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define PAGE_SIZE  4096
#define ARENA_SIZE (256 * 1024)
#define BIG_SIZE   (64 * 1024) // payloads this large are mapped on their own
#define ALIGNMENT  16

#define IN_USE 0x1
#define BIG    0x2
#define FLAGS  0xF // sizes are multiples of 16: the low bits are free

struct block {
    size_t prev_size;          // the block before this one in its arena; 0 for the first
                               // (for a big block: the length of its mapping)
    size_t info;               // this block's size, header included, | flags
    struct block *next, *prev; // free-list links: only while free (they overlay the payload)
};

#define HEADER    offsetof(struct block, next)
#define MIN_BLOCK sizeof(struct block)
_Static_assert(HEADER % ALIGNMENT == 0, "payloads stay 16-byte aligned");

struct arena {
    uint64_t magic; // ARENA_MAGIC, checked when the arena is released
    uint64_t pad;
};
#define ARENA_MAGIC 0x6172656e61303031ull
_Static_assert(sizeof(struct arena) % ALIGNMENT == 0, "first block stays aligned");

#define NBINS 20 // classes 2^4 .. 2^23: beyond any arena
static struct block *bins[NBINS];
static size_t arena_count;
static struct malloc_stats stats;

static size_t block_size(const struct block *b)
{
    return b->info & ~(size_t)FLAGS;
}
static struct block *next_block(struct block *b)
{
    return (struct block *)((char *)b + block_size(b));
}
static struct block *prev_block(struct block *b)
{
    return (struct block *)((char *)b - b->prev_size);
}
static void *payload(struct block *b)
{
    return (char *)b + HEADER;
}
static struct block *header_of(void *p)
{
    return (struct block *)((char *)p - HEADER);
}

// Corruption or a bad free: stop at once, before the damage spreads.
static _Noreturn void malloc_fail(const char *why)
{
    static const char prefix[] = "malloc: ";
    SysWrite(2, prefix, sizeof prefix - 1);
    SysWrite(2, why, strlen(why));
    SysWrite(2, "\n", 1);
    __builtin_trap();
}

static unsigned bin_of(size_t size)
{
    unsigned b = 0;
    for (size /= 16; size > 1 && b < NBINS - 1; size >>= 1)
        b++;
    return b;
}

static void bin_insert(struct block *b)
{
    struct block **head = &bins[bin_of(block_size(b))];
    b->prev = NULL;
    b->next = *head;
    if (*head)
        (*head)->prev = b;
    *head = b;
}

static void bin_remove(struct block *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        bins[bin_of(block_size(b))] = b->next;
    if (b->next)
        b->next->prev = b->prev;
}

// Sets b's size and tells the block after it.
static void set_size(struct block *b, size_t size, size_t flags)
{
    b->info = size | flags;
    next_block(b)->prev_size = size;
}

static void *map(size_t len)
{
    void *addr = NULL;
    if (!NT_SUCCESS(SysMap(&addr, len, PROT_READ | PROT_WRITE)))
        return NULL;
    stats.bytes_mapped += len;
    return addr;
}

static void unmap(void *addr, size_t len)
{
    if (!NT_SUCCESS(SysUnmap(addr, len)))
        malloc_fail("SysUnmap refused a mapping of ours");
    stats.bytes_mapped -= len;
}

// A new arena holding one free block that spans it.
static int add_arena(void)
{
    struct arena *a = map(ARENA_SIZE);
    if (!a)
        return 0;
    a->magic = ARENA_MAGIC;
    struct block *first = (struct block *)(a + 1);
    struct block *end = (struct block *)((char *)a + ARENA_SIZE - HEADER);
    size_t size = (size_t)((char *)end - (char *)first);
    first->prev_size = 0;
    end->info = 0 | IN_USE;
    set_size(first, size, 0);
    bin_insert(first);
    arena_count++;
    return 1;
}

static struct block *find_fit(size_t need)
{
    for (unsigned i = bin_of(need); i < NBINS; i++)
        for (struct block *b = bins[i]; b; b = b->next)
            if (block_size(b) >= need)
                return b;
    return NULL;
}

// Marks b in use with at least need bytes; a tail big enough to be a block
// of its own goes back on a free list.
static void take(struct block *b, size_t need)
{
    size_t size = block_size(b);
    if (size - need >= MIN_BLOCK) {
        set_size(b, need, IN_USE);
        struct block *rest = next_block(b);
        set_size(rest, size - need, 0);
        bin_insert(rest);
    } else {
        b->info = size | IN_USE;
    }
}

// The block size for a payload of n bytes; 0 when n is absurdly large.
static size_t block_for(size_t n)
{
    if (n > SIZE_MAX / 2)
        return 0;
    size_t need = (n + HEADER + ALIGNMENT - 1) & ~(size_t)(ALIGNMENT - 1);
    return need < MIN_BLOCK ? MIN_BLOCK : need;
}

static void *big_alloc(size_t need)
{
    size_t len = (need + PAGE_SIZE - 1) & ~(size_t)(PAGE_SIZE - 1);
    struct block *b = map(len);
    if (!b)
        return NULL;
    b->prev_size = len;
    b->info = len | IN_USE | BIG;
    return payload(b);
}

void *malloc(size_t n)
{
    size_t need = block_for(n);
    if (need == 0)
        return NULL;
    void *p;
    if (need >= BIG_SIZE) {
        p = big_alloc(need);
    } else {
        struct block *b = find_fit(need);
        if (!b && add_arena())
            b = find_fit(need);
        if (!b)
            return NULL;
        bin_remove(b);
        take(b, need);
        p = payload(b);
    }
    if (p) {
        stats.bytes_in_use += block_size(header_of(p)) - HEADER;
        stats.allocations++;
    }
    return p;
}

// Merges the free block b with free neighbours (which leave their lists) and
// returns the merged block, not yet on any list.
static struct block *coalesce(struct block *b)
{
    struct block *next = next_block(b);
    if (!(next->info & IN_USE)) {
        bin_remove(next);
        set_size(b, block_size(b) + block_size(next), 0);
    }
    if (b->prev_size) {
        struct block *prev = prev_block(b);
        if (!(prev->info & IN_USE)) {
            bin_remove(prev);
            set_size(prev, block_size(prev) + block_size(b), 0);
            b = prev;
        }
    }
    return b;
}

void free(void *p)
{
    if (!p)
        return;
    if ((uintptr_t)p % ALIGNMENT)
        malloc_fail("free of a pointer malloc did not return");
    struct block *b = header_of(p);
    if (!(b->info & IN_USE))
        malloc_fail("double free (or free of a pointer malloc did not return)");
    stats.bytes_in_use -= block_size(b) - HEADER;
    stats.allocations--;
    if (b->info & BIG) {
        if (b->prev_size != block_size(b))
            malloc_fail("corrupted header of a big block");
        unmap(b, block_size(b));
        return;
    }
    b->info &= ~(size_t)IN_USE;
    b = coalesce(b);
    // Does the block now span its whole arena? Then the arena can go.
    if (b->prev_size == 0 && block_size(next_block(b)) == 0 && arena_count > 1) {
        struct arena *a = (struct arena *)b - 1;
        if (a->magic != ARENA_MAGIC)
            malloc_fail("corrupted arena header");
        arena_count--;
        unmap(a, ARENA_SIZE);
        return;
    }
    bin_insert(b);
}

void *calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (n == 0) {
        free(p);
        return NULL;
    }
    size_t need = block_for(n);
    if (need == 0)
        return NULL;
    struct block *b = header_of(p);
    if (!(b->info & IN_USE))
        malloc_fail("realloc of a free block");
    size_t size = block_size(b);
    if (!(b->info & BIG)) {
        // Shrink in place, or grow into a free successor when it is enough;
        // either way a large enough tail becomes a free block again.
        struct block *next = next_block(b);
        size_t room = size;
        if (need > size && !(next->info & IN_USE) && size + block_size(next) >= need) {
            bin_remove(next);
            room += block_size(next);
            set_size(b, room, IN_USE);
        }
        if (need <= room) {
            stats.bytes_in_use -= size - HEADER;
            b->info = room; // take() marks it in use again
            take(b, need);
            if (block_size(b) < room) {
                struct block *tail = next_block(b);
                bin_remove(tail);
                bin_insert(coalesce(tail));
            }
            stats.bytes_in_use += block_size(b) - HEADER;
            return p;
        }
    } else if (need <= size) {
        return p; // the mapping is large enough already
    }
    void *q = malloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, size - HEADER);
    free(p);
    return q;
}

void malloc_stats(struct malloc_stats *out)
{
    *out = stats;
}
