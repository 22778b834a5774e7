// Pinned pages: physical frames that must outlive their user mapping.
//
// A started profile's buffer is written by the sampling interrupt through the
// direct map. If the program unmaps the buffer, or exits, the frames must not
// go back to the page allocator while the profile still counts into them:
// unmapping a pinned frame only marks it orphaned, and the last unpin frees it.
#pragma once
#include "lib/types.h"

bool pin_page(uint64_t pa);   // false when out of memory
void unpin_page(uint64_t pa); // frees the frame if it was orphaned meanwhile
// For address spaces: free pa now unless it is pinned; then the last unpin
// will, and until then the frame counts in *charge (atomically: one more
// now, one less at that unpin), so that its process stays charged for it
// (lib/abi/syscalls.h's memory limits). Only the process owning the address
// space pins its frames, and it unpins them all before its address space is
// released (exit closes its handles first), so charge outlives the orphan.
void pin_free_or_orphan(uint64_t pa, uint64_t *charge);
uint64_t pinned_page_count(void); // frames pinned now (leak checks)
