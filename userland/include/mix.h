// Seeds for the random streams of the fuzzers: one mixing function, so that
// every child process of a run draws a stream of its own.
#pragma once
#include <stdint.h>

// splitmix64's finalizer (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014): a bijection of 64-bit
// values in which every input bit changes about half of the output bits.
static inline uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The seed of stream `index` of a run seeded with `seed`: distinct indices
// give unrelated, non-zero seeds (a xorshift generator must not start at 0).
static inline uint64_t stream_seed(uint64_t seed, uint64_t index)
{
    uint64_t s = mix64(mix64(seed) ^ mix64(~index));
    return s ? s : 0x9E3779B97F4A7C15ull;
}
