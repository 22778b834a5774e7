// What the profiler's target programs (calib, calltree, faulty) are made of:
// functions that each run one loop, written once in assembly, so that every
// iteration is the same five instructions wherever it runs and a profiler
// sampling by time or by instructions retired must share its samples among
// them in proportion to their iterations.
#pragma once
#include <stdint.h>

// A function the profiler must find under its own name, starting on an
// align-byte boundary (buckets up to that size never straddle two of them).
// gcc could otherwise emit a specialised copy ("calib_a.constprop.0") whose
// name the profiler would report instead.
#if defined(__GNUC__) && !defined(__clang__)
#define WORKLOAD_FN(align) __attribute__((noinline, noclone, used, aligned(align)))
#else
#define WORKLOAD_FN(align) __attribute__((noinline, used, aligned(align)))
#endif

// cnt iterations (cnt > 0) of the loop, folding them into acc: five instructions
// an iteration, nothing the compiler can drop; the add-rol-xor chain costs
// three cycles an iteration on hardware.
#define WORKLOAD_LOOP(cnt, acc) \
    __asm__ volatile("1:\n\t" \
                     "add %[n], %[x]\n\t" \
                     "rol $7, %[x]\n\t" \
                     "xor $0x5a5a, %[x]\n\t" \
                     "dec %[n]\n\t" \
                     "jnz 1b" \
                     : [n] "+r"(cnt), [x] "+r"(acc) \
                     : \
                     : "cc")

// Defines uint64_t name(uint64_t n, uint64_t x): n iterations of the loop
// (none when n is 0) folded into x, returned.
#define WORKLOAD_LEAF(name, align) \
    WORKLOAD_FN(align) uint64_t name(uint64_t n, uint64_t x) \
    { \
        if (n) \
            WORKLOAD_LOOP(n, x); \
        return x; \
    }
