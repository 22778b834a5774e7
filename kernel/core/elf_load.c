// Loading an ELF64 executable from the ramdisk into an address space.
#include "core/elf_load.h"

#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"
#include "lib/string.h"

static bool in_file(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

NTSTATUS elf_load(struct addrspace *as, const uint8_t *data, size_t size, uint64_t *entry)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;
    if (size < sizeof *eh ||
        memcmp(eh->e_ident,
               "\x7f"
               "ELF",
               4) != 0 ||
        eh->e_ident[4] != 2 || eh->e_ident[5] != 1 || eh->e_machine != 62 || eh->e_type != 2 ||
        eh->e_phentsize != sizeof(Elf64_Phdr) ||
        !in_file(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), size))
        return STATUS_INVALID_IMAGE_FORMAT;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(data + eh->e_phoff);
    bool loaded = false;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *p = &ph[i];
        if (p->p_type != PT_LOAD || p->p_memsz == 0)
            continue;
        uint64_t start = ALIGN_DOWN(p->p_vaddr, PAGE_SIZE);
        if (p->p_filesz > p->p_memsz || !in_file(p->p_offset, p->p_filesz, size) ||
            !user_range_ok(p->p_vaddr, p->p_memsz) || start < USER_MIN)
            return STATUS_INVALID_IMAGE_FORMAT;
        uint64_t end = ALIGN_UP(p->p_vaddr + p->p_memsz, PAGE_SIZE);
        uint32_t prot = (p->p_flags & PF_R ? PROT_READ : 0) | (p->p_flags & PF_W ? PROT_WRITE : 0) |
                        (p->p_flags & PF_X ? PROT_EXEC : 0);
        if (prot & PROT_EXEC) { // where a return address can point (pmc/hwpmc/callchain.c)
            as->exec_lo = as->exec_hi ? MIN(as->exec_lo, start) : start;
            as->exec_hi = MAX(as->exec_hi, end);
        }
        NTSTATUS s = as_map(as, start, end - start, prot);
        if (!NT_SUCCESS(s))
            return s == STATUS_INVALID_PARAMETER ? STATUS_INVALID_IMAGE_FORMAT
                                                 : s; // overlapping segments
        if (!as_write(as, p->p_vaddr, data + p->p_offset, p->p_filesz))
            return STATUS_INVALID_IMAGE_FORMAT;
        loaded = true;
    }
    if (!loaded || !user_range_ok(eh->e_entry, 1))
        return STATUS_INVALID_IMAGE_FORMAT;
    *entry = eh->e_entry;
    return STATUS_SUCCESS;
}
