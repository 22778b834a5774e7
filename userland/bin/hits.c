// hits [ITERATIONS]: a profiler of its own run on the NT profile calls alone
// (syscall.h: NtCreateProfile, NtStartProfile, NtStopProfile), the program
// of labs/hits. It runs calib's three leaves (userland/bin/calib.c: the same
// loop for 50%, 30% and 20% of ITERATIONS) under a ProfileTime profile of
// its own process over their code, then reads the buckets and prints each
// function's hits and share:
//
//   hits: calib_a 2051 50.01%
//
// NtCreateProfile's BucketSize is log2 of the bytes a bucket covers and the
// buffer holds one ULONG counter a bucket (the Windows ntddk.h/ntifs.h
// prototype; docs/profile.md). ProfileTime samples at its interval, which
// hits sets to its finest, 1221 (122.1 us), where it may (NtSetIntervalProfile
// needs the privilege, as sudo gives) and sets back afterwards: the shares
// approach 50/30/20 as the samples grow, and under QEMU's icount 100,000,000
// iterations give about 4,000.
#include <stdio.h>
#include <stdlib.h>
#include <syscall.h>
#include <workload.h>

#define DEFAULT_ITERATIONS 100000000ul
#define SHIFT              2      // 4-byte buckets
#define MAX_BUCKETS        4096   // a 16 KiB range at most
#define LEAF_BYTES         256ull // each leaf starts on a 256-byte boundary
#define FINEST_INTERVAL    1221   // ProfileTime's finest, in 100 ns units

WORKLOAD_LEAF(calib_a, 256)
WORKLOAD_LEAF(calib_b, 256)
WORKLOAD_LEAF(calib_c, 256)

static const struct leaf {
    const char *name;
    uint64_t (*fn)(uint64_t, uint64_t);
    unsigned tenths; // its share of the iterations
} leaves[] = {{"calib_a", calib_a, 5}, {"calib_b", calib_b, 3}, {"calib_c", calib_c, 2}};
#define NLEAVES (sizeof leaves / sizeof leaves[0])

static ULONG buckets[MAX_BUCKETS];

// The range the profile covers: from the lowest leaf to the end of the
// highest (each at most LEAF_BYTES long).
static void leaf_range(uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (unsigned i = 0; i < NLEAVES; i++) {
        uint64_t a = (uint64_t)(uintptr_t)leaves[i].fn;
        *lo = a < *lo ? a : *lo;
        *hi = a + LEAF_BYTES > *hi ? a + LEAF_BYTES : *hi;
    }
}

// Profile this process over [lo, hi) while the leaves run their shares of
// total: create the profile, start it, run, stop it, close it. The buckets
// hold the samples afterwards. Returns the first failure's status.
static NTSTATUS profile_run(uint64_t lo, uint64_t hi, uint64_t total)
{
    HANDLE h;
    NTSTATUS s = NtCreateProfile(&h, NtCurrentProcess(), (void *)(uintptr_t)lo, hi - lo, SHIFT,
                                 buckets, sizeof buckets, ProfileTime, (KAFFINITY)-1);
    if (!NT_SUCCESS(s))
        return s;
    s = NtStartProfile(h);
    if (NT_SUCCESS(s)) {
        uint64_t x = 1;
        for (unsigned i = 0; i < NLEAVES; i++)
            x = leaves[i].fn(total / 10 * leaves[i].tenths, x);
        printf("hits: ran %lu iterations (%lx)\n", total, x);
        s = NtStopProfile(h);
    }
    NtClose(h);
    return s;
}

// The hits of the leaf at addr: the buckets covering [addr, addr +
// LEAF_BYTES), bucket i covering [lo + i * 2^SHIFT, lo + (i + 1) * 2^SHIFT).
static uint64_t attribute(uint64_t lo, uint64_t addr)
{
    uint64_t first = (addr - lo) >> SHIFT, n = LEAF_BYTES >> SHIFT, sum = 0;
    for (uint64_t i = first; i < first + n && i < MAX_BUCKETS; i++)
        sum += buckets[i];
    return sum;
}

int main(int argc, char **argv)
{
    uint64_t total = argc > 1 ? strtoul(argv[1], NULL, 0) : DEFAULT_ITERATIONS;
    uint64_t lo, hi, hits[NLEAVES], all = 0;
    if (argc > 2 || total < 10) {
        printf("usage: hits [ITERATIONS], at least 10\n");
        return 2;
    }
    ULONG interval = 0;
    NtQueryIntervalProfile(ProfileTime, &interval);
    if (!NT_SUCCESS(NtSetIntervalProfile(FINEST_INTERVAL, ProfileTime)))
        printf("hits: ProfileTime stays at interval %u (setting it needs sudo)\n", interval);
    leaf_range(&lo, &hi);
    if (hi - lo > (uint64_t)MAX_BUCKETS << SHIFT) {
        printf("hits: the leaves span %lu bytes, more than the %u buckets cover\n", hi - lo,
               MAX_BUCKETS);
        return 1;
    }
    NTSTATUS s = profile_run(lo, hi, total);
    if (interval)
        NtSetIntervalProfile(interval, ProfileTime); // as it was
    if (!NT_SUCCESS(s)) {
        printf("hits: profiling failed: status %#x\n", (unsigned)s);
        return 1;
    }
    for (unsigned i = 0; i < NLEAVES; i++)
        all += hits[i] = attribute(lo, (uint64_t)(uintptr_t)leaves[i].fn);
    for (unsigned i = 0; i < NLEAVES; i++) {
        uint64_t hundredths = all ? hits[i] * 10000 / all : 0;
        printf("hits: %s %lu %lu.%02lu%%\n", leaves[i].name, hits[i], hundredths / 100,
               hundredths % 100);
    }
    printf("hits: %lu samples in the leaves\n", all);
    return all ? 0 : 1;
}
