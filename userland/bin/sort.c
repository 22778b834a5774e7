// sort N: merge-sorts N pseudo-random numbers (default 100000), checks that
// the result is in order and prints a checksum; exit status 1 when unsorted.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t seed = 88172645463325252ull;

static uint32_t next_random(void) // xorshift64
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (uint32_t)seed;
}

// Sorts a[lo, hi) using tmp (as large as a) for the merges.
__attribute__((noinline)) static void merge_sort(uint32_t *a, uint32_t *tmp, size_t lo, size_t hi)
{
    if (hi - lo < 2)
        return;
    size_t mid = lo + (hi - lo) / 2;
    merge_sort(a, tmp, lo, mid);
    merge_sort(a, tmp, mid, hi);
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi)
        tmp[k++] = a[j] < a[i] ? a[j++] : a[i++];
    while (i < mid)
        tmp[k++] = a[i++];
    while (j < hi)
        tmp[k++] = a[j++];
    memcpy(a + lo, tmp + lo, (hi - lo) * sizeof *a);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;
    if (n > (1u << 26)) {
        fprintf(stderr, "usage: sort N (at most %u)\n", 1u << 26);
        return 2;
    }
    uint32_t *a = malloc(n * sizeof *a + 1);
    uint32_t *tmp = malloc(n * sizeof *tmp + 1);
    if (!a || !tmp) {
        fprintf(stderr, "sort: out of memory\n");
        return 1;
    }
    uint64_t before = 0;
    for (size_t i = 0; i < n; i++) {
        a[i] = next_random();
        before += a[i];
    }
    merge_sort(a, tmp, 0, n);
    uint64_t after = 0, checksum = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && a[i - 1] > a[i]) {
            printf("sort: NOT sorted at index %lu\n", i);
            return 1;
        }
        after += a[i];
        checksum = checksum * 31 + a[i];
    }
    if (after != before) {
        printf("sort: elements lost (sum %lx, expected %lx)\n", after, before);
        return 1;
    }
    printf("sort: %lu numbers sorted, checksum %016lx\n", n, checksum);
    free(a);
    free(tmp);
    return 0;
}
