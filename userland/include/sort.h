// Sorting arrays in place (the C library has no qsort).
#pragma once
#include <stddef.h>
#include <stdint.h>

// Pieces of a cmp: a's place against b's, smallest first (cmp_up) or largest
// first (cmp_down, counts in a report); 0 when they are equal.
static inline int cmp_up(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

static inline int cmp_down(uint64_t a, uint64_t b)
{
    return (a < b) - (a > b);
}

// A count and what it counts (an address, an id).
struct tally {
    uint64_t key, count;
};

// cmp for tallies, or structs that begin with one: most counted first, then by key.
int by_tally(const void *a, const void *b);

// Shell sort: in place, no allocation, not stable. cmp as for qsort.
void sort_array(void *base, size_t count, size_t size, int (*cmp)(const void *, const void *));
