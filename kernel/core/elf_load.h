// ELF64 executables into user address spaces.
#pragma once
#include "lib/abi/status.h"
#include "lib/elf.h"

#include "core/addrspace.h"

// Map and fill every PT_LOAD segment of the executable image data[size].
NTSTATUS elf_load(struct addrspace *as, const uint8_t *data, size_t size, uint64_t *entry);
