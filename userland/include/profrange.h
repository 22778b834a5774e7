// One profile object's histogram over one module's text: what `profile run`
// and `profile kernel` fill (NtCreateProfile's buckets), what their reports
// and gmon.out (gmon.h) are made from.
#pragma once
#include <stdint.h>
#include <nt.h>
#include <elfsym.h>
#include "lib/abi/profile.h"

struct prof_range {
    const char *module;            // "primes", "kernel"
    const struct elf_image *image; // for symbols
    uint64_t base, size;           // RangeBase, RangeSize
    uint32_t shift;                // BucketSize: log2 of the bucket size in bytes
    ULONG *buckets;
    uint64_t nbuckets;
    struct sys_profile_stats stats; // SysProfileStats after the stop
};
