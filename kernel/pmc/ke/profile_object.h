// The profile object's fields (ke/profile.h has its operations): what the
// fan-out (ke/sample.c) and the address index (ke/profile_index.c) read of a
// profile, below both.
#pragma once
#include "lib/abi/profile.h"
#include "lib/param.h"
#include "lib/types.h"

#include "core/object.h"

struct process;

struct kprofile {
    struct object obj;
    struct process *process;         // NULL: system scope (we hold a reference otherwise)
    uint64_t range_base, range_size; // [base, base + size)
    uint32_t bucket_shift;           // log2 of the bucket size in bytes (2..31)
    uint64_t buffer;                 // user address, 4-byte aligned
    uint32_t buffer_size;            // bytes
    KPROFILE_SOURCE source;
    uint64_t affinity; // CPUs whose samples count
    // CPUs counting now. System scope: set and cleared by each CPU itself;
    // process scope: the affinity from start to stop.
    uint64_t active;
    bool started;
    // While started: the buffer's pages, pinned, and mapped in system space
    // (core/sysmap.h) at kbuf's page, where bucket i is ((uint32_t *)kbuf)[i].
    uint64_t *page_pa; // one per page of the buffer
    uint64_t npages;
    uint8_t *kbuf;
    // Statistics (see sys_profile_stats), over every start/stop cycle.
    uint64_t in_range;  // atomic
    uint64_t delivered; // finished cycles (system scope: and CPUs that ended counting)
    // Where the scope's sample counts stood when counting began: per CPU, the
    // slot's (system scope), or every retired set's (process scope).
    uint64_t start_samples[MAX_CPUS];
    uint64_t throttled, start_throttled;
    struct process *charged; // while started: the process that started it (we hold a reference)
};
