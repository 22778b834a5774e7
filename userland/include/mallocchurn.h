// Random allocations, reallocations and frees over a table of blocks, each
// block filled with a pattern of its own and checked before it changes: the
// allocator's stress test in ring 3 (usertests) and on the host (test_libc).
#pragma once
#include <stddef.h>
#include <stdint.h>

struct malloc_churn {
    // Set by the test:
    void *(*alloc)(size_t n);
    void *(*resize)(void *p, size_t n);
    void (*release)(void *p);
    unsigned char **slot; // slots blocks, NULL when free
    size_t *size;         // their sizes
    unsigned slots, rounds;
    uint64_t seed;                // of the xorshift that picks slots, actions and sizes
    size_t small;                 // sizes 1..small, but one in large_every
    unsigned large_every;         // is large_min plus up to large_span
    size_t large_min, large_span; // (large_span > 0)
    // Counted by malloc_churn_run:
    size_t overwritten; // bytes of a block found changed before it was next touched
    size_t misaligned;  // blocks not 16-byte aligned
    size_t lost;        // bytes realloc did not keep
    size_t failed;      // the size whose allocation failed (the run stopped there), or 0
};

// How many of the n bytes of slot i's block differ from its pattern.
static inline size_t malloc_churn_bad(const unsigned char *p, size_t n, unsigned i)
{
    size_t bad = 0;
    for (size_t k = 0; k < n; k++)
        bad += p[k] != (unsigned char)(i ^ k);
    return bad;
}

static inline void malloc_churn_run(struct malloc_churn *c)
{
    uint64_t seed = c->seed;
    for (unsigned round = 0; round < c->rounds; round++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        unsigned i = (unsigned)(seed % c->slots);
        unsigned char *old = c->slot[i];
        if (old) { // check its contents, then free or resize it
            c->overwritten += malloc_churn_bad(old, c->size[i], i);
            if (seed & 0x100) {
                c->release(old);
                c->slot[i] = NULL;
                continue;
            }
        }
        size_t n = (seed >> 20) % c->small + 1;
        if ((seed >> 40) % c->large_every == 0)
            n = c->large_min + (seed >> 8) % c->large_span; // now and then a large one
        unsigned char *p = old ? c->resize(old, n) : c->alloc(n);
        if (!p) {
            c->failed = n;
            return;
        }
        c->misaligned += (uintptr_t)p % 16 != 0;
        c->lost += malloc_churn_bad(p, !old ? 0 : c->size[i] < n ? c->size[i] : n, i);
        for (size_t k = 0; k < n; k++)
            p[k] = (unsigned char)(i ^ k);
        c->slot[i] = p;
        c->size[i] = n;
    }
}

// Frees every block left.
static inline void malloc_churn_free(struct malloc_churn *c)
{
    for (unsigned i = 0; i < c->slots; i++)
        c->release(c->slot[i]);
}
