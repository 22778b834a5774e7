// sort_array: Shell sort with Ciura's gaps extended by x2.25; small tables
// (symbols, report rows) need nothing cleverer.
#include <sort.h>
#include <stdint.h>

static void swap_bytes(uint8_t *a, uint8_t *b, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        uint8_t t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

void sort_array(void *base, size_t count, size_t size, int (*cmp)(const void *, const void *))
{
    static const size_t small_gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    uint8_t *a = base;
    size_t gap = 701;
    while (gap * 9 / 4 < count)
        gap = gap * 9 / 4;
    for (size_t g = 0;;) {
        for (size_t i = gap; i < count; i++)
            for (size_t j = i; j >= gap && cmp(a + (j - gap) * size, a + j * size) > 0; j -= gap)
                swap_bytes(a + (j - gap) * size, a + j * size, size);
        if (gap == 1)
            break;
        if (gap > 701)
            gap = gap * 4 / 9 > 701 ? gap * 4 / 9 : 701;
        else
            gap = small_gaps[++g];
    }
}

int by_tally(const void *a, const void *b)
{
    const struct tally *x = a, *y = b;
    int c = cmp_down(x->count, y->count);
    return c ? c : cmp_up(x->key, y->key);
}
