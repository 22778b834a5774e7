// Kernel symbols for backtraces, from the ELF symbol table GRUB loads for us
// (multiboot2 "ELF sections" tag). Without it, addresses print bare.
#pragma once
#include "lib/types.h"

struct elf_sections_info;
void ksym_init(uint32_t num, uint32_t entsize, uint32_t shndx, const void *sections);

// The function containing addr and addr's offset in it; NULL when unknown.
const char *ksym_lookup(uint64_t addr, uint64_t *offset);
