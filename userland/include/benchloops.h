// The benchmark's workloads, shared by `bench` (userland/bin/bench.c) and its
// Linux twin (tests/bench/peers/peer.c), so that both time the very same
// instructions: a counted loop, and the same loop some frames deep.
#pragma once
#include <stdint.h>

#define WORK_ITERATIONS 40000000ull

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

// The fixed workload: a counted loop the compiler cannot remove.
__attribute__((noinline)) static void work(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, unused)) static uint64_t timed_work(void)
{
    uint64_t t0 = rdtsc();
    work(WORK_ITERATIONS);
    return rdtsc() - t0;
}

// The workload `depth` frames deep: deep(n) calls itself down to the loop.
__attribute__((noinline)) static uint64_t deep(unsigned n, uint64_t iterations)
{
    if (n == 0)
        return 0;
    if (n <= 1) {
        work(iterations);
        return 1;
    }
    uint64_t r = deep(n - 1, iterations);
    __asm__ volatile("" : "+r"(r)); // no tail call: every level keeps its frame
    return r + 1;
}

// The sampled chain: work's IP, deep x (frames - 4), timed_deep and its
// callers (bench.c: chain_run, callchain, main).
__attribute__((noinline, unused)) static uint64_t timed_deep(unsigned frames)
{
    uint64_t t0 = rdtsc();
    deep(frames - 4, WORK_ITERATIONS);
    uint64_t t = rdtsc() - t0;
    __asm__ volatile("" : "+r"(t)); // keeps this frame on the stack
    return t;
}
