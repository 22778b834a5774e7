// spin [SECONDS]: keeps one CPU busy in user mode for SECONDS (default 1),
// checking the clock only between chunks of work so nearly all the time is
// spent in spin_chunk, not in the kernel.
#include <clock.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static uint64_t spin_chunk(uint64_t x)
{
    for (int i = 0; i < 100000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x)); // keep every iteration
    }
    return x;
}

int main(int argc, char **argv)
{
    unsigned long seconds = argc > 1 ? strtoul(argv[1], NULL, 0) : 1;
    uint64_t start = clock_ns();
    uint64_t end = start + seconds * 1000000000ull;
    uint64_t x = 1, chunks = 0;
    while (clock_ns() < end) {
        x = spin_chunk(x);
        chunks++;
    }
    uint64_t ms = (clock_ns() - start) / 1000000;
    printf("spin: %lu chunks in %lu ms (%lx)\n", chunks, ms, x);
    return 0;
}
