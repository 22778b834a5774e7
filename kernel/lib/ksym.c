// Symbol lookup over the kernel's ELF .symtab. The table is not sorted, so a
// lookup is a linear scan: it only runs when printing a backtrace.
#include "lib/ksym.h"

#include "lib/elf.h"
#include "lib/memlayout.h"
#include "lib/string.h"

static const Elf64_Sym *symtab;
static size_t nsyms;
static const char *strtab;

void ksym_init(uint32_t num, uint32_t entsize, uint32_t shndx, const void *sections)
{
    UNUSED(shndx);
    if (entsize != sizeof(Elf64_Shdr))
        return;
    const Elf64_Shdr *sh = sections;
    for (uint32_t i = 0; i < num; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= num)
            continue;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        // GRUB loads non-allocated sections and stores their physical address.
        uint64_t sa = sh[i].sh_addr, ta = str->sh_addr;
        if (!sa || !ta)
            return;
        symtab = sa >= KERNEL_VMA ? (void *)sa : phys_to_virt(sa);
        strtab = ta >= KERNEL_VMA ? (void *)ta : phys_to_virt(ta);
        nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
        return;
    }
}

const char *ksym_lookup(uint64_t addr, uint64_t *offset)
{
    const Elf64_Sym *best = NULL;
    for (size_t i = 0; i < nsyms; i++) {
        const Elf64_Sym *s = &symtab[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value > addr)
            continue;
        if (addr < s->st_value + (s->st_size ? s->st_size : 1) &&
            (!best || s->st_value > best->st_value))
            best = s;
    }
    if (!best)
        return NULL;
    *offset = addr - best->st_value;
    return strtab + best->st_name;
}
