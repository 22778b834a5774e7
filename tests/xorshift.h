// The tests' deterministic generator: Marsaglia's xorshift64 with shifts 13,
// 7, 17 (G. Marsaglia, "Xorshift RNGs", Journal of Statistical Software
// 8(14), 2003). The same seed gives the same sequence on every host, so a
// failing case can be run again. *state must not be 0.
#pragma once
#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}
