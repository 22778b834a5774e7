// matmul N: multiplies two pseudo-random N x N integer matrices (default 64)
// and prints a checksum of the product, which depends on every element.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t seed = 12345;

static uint32_t next_random(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 16;
}

__attribute__((noinline)) static void multiply(size_t n, const uint32_t *a, const uint32_t *b,
                                               uint32_t *c)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            uint32_t sum = 0;
            for (size_t k = 0; k < n; k++)
                sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
        }
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
    if (n == 0 || n > 4096) {
        fprintf(stderr, "usage: matmul N (1..4096)\n");
        return 2;
    }
    uint32_t *a = calloc(n * n, sizeof *a);
    uint32_t *b = calloc(n * n, sizeof *b);
    uint32_t *c = calloc(n * n, sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "matmul: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n * n; i++) {
        a[i] = next_random() % 100;
        b[i] = next_random() % 100;
    }
    multiply(n, a, b, c);
    uint64_t checksum = 0;
    for (size_t i = 0; i < n * n; i++)
        checksum = checksum * 31 + c[i];
    printf("matmul: %lux%lu checksum %016lx\n", n, n, checksum);
    free(a);
    free(b);
    free(c);
    return 0;
}
