// ELF64 structures (System V ABI), for kernel symbols and loading programs.
#pragma once
#include "lib/types.h"

typedef struct {
    uint8_t e_ident[16];
    uint16_t e_type, e_machine;
    uint32_t e_version;
    uint64_t e_entry, e_phoff, e_shoff;
    uint32_t e_flags;
    uint16_t e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
} Elf64_Ehdr;

typedef struct {
    uint32_t p_type, p_flags;
    uint64_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align;
} Elf64_Phdr;

typedef struct {
    uint32_t sh_name, sh_type;
    uint64_t sh_flags, sh_addr, sh_offset, sh_size;
    uint32_t sh_link, sh_info;
    uint64_t sh_addralign, sh_entsize;
} Elf64_Shdr;

typedef struct {
    uint32_t st_name;
    uint8_t st_info, st_other;
    uint16_t st_shndx;
    uint64_t st_value, st_size;
} Elf64_Sym;

_Static_assert(sizeof(Elf64_Ehdr) == 64 && sizeof(Elf64_Phdr) == 56, "ELF64 layout");
_Static_assert(sizeof(Elf64_Shdr) == 64 && sizeof(Elf64_Sym) == 24, "ELF64 layout");

#define PT_LOAD          1
#define PF_X             1
#define PF_W             2
#define PF_R             4
#define SHT_SYMTAB       2
#define SHT_STRTAB       3
#define STT_FUNC         2
#define ELF64_ST_TYPE(i) ((i)&0xF)
