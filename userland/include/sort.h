// Sorting arrays in place (the C library has no qsort).
#pragma once
#include <stddef.h>

// Shell sort: in place, no allocation, not stable. cmp as for qsort.
void sort_array(void *base, size_t count, size_t size, int (*cmp)(const void *, const void *));
