// NT names for the profile system calls: the few Windows integer types their
// prototypes use, GROUP_AFFINITY, and status codes as text.
#pragma once
#include <stdint.h>
#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"

typedef uint32_t ULONG;
typedef uint16_t USHORT;

// One processor group and the processors wanted in it (NtCreateProfileEx).
typedef struct _GROUP_AFFINITY {
    KAFFINITY Mask;
    USHORT Group;
    USHORT Reserved[3];
} GROUP_AFFINITY;

_Static_assert(sizeof(GROUP_AFFINITY) == 16, "GROUP_AFFINITY is 16 bytes, as in NT");

// "STATUS_BUFFER_TOO_SMALL" for every code in lib/abi/status.h; "STATUS_0x........" for
// any other value (in one of four buffers, reused in turn).
const char *nt_status_name(NTSTATUS status);
