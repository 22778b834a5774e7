// Per-process handle tables. A handle is an opaque value naming one reference
// to a kernel object; values are multiples of 4 starting at 4 (as on NT), so
// 0, small odd numbers and kernel pointers are never valid. The table grows by
// doubling up to HANDLE_MAX entries (a profiler may hold thousands of
// profiles: NT allows 8,192 started per processor).
#pragma once
#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"

#include "core/object.h"
#include "core/spinlock.h"

#define HANDLE_MAX 65536

struct handle_table {
    struct spinlock lock;
    struct object **slot;
    uint32_t capacity;
};

void handle_table_init(struct handle_table *ht);
// Store a new reference to o (the caller's reference is taken over on success).
NTSTATUS handle_insert(struct handle_table *ht, struct object *o, HANDLE *out);
// A new reference to the object behind h, if it has the given type
// (STATUS_INVALID_HANDLE: no object; STATUS_OBJECT_TYPE_MISMATCH: another type).
// The pseudo-handles are understood: NtCurrentProcess() is the caller's process.
NTSTATUS handle_lookup(struct handle_table *ht, HANDLE h, enum object_type type,
                       struct object **out);
NTSTATUS handle_close(struct handle_table *ht, HANDLE h);
void handle_table_close_all(struct handle_table *ht); // and free the table
