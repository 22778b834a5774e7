// Reading an ELF64 file's text range and function symbols from the ramdisk.
// Only the pieces needed are read: the header, the program headers, the
// section headers, the symbol table and its string table.
#include <elfsym.h>
#include <process.h>
#include <sort.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "lib/elf.h"

#define STT_NOTYPE 0
#define SHN_UNDEF  0
#define MAX_TABLE  (16u << 20) // refuse absurd section sizes from a damaged file

// Reads exactly len bytes at offset into a new allocation (NULL on failure).
static void *read_part(const char *file, uint64_t offset, size_t len)
{
    if (len == 0 || len > MAX_TABLE)
        return NULL;
    char *buf = malloc(len);
    if (!buf)
        return NULL;
    size_t got = 0;
    NTSTATUS s = SysFileRead(file, offset, buf, len, &got);
    if (!NT_SUCCESS(s) || got != len) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int by_address(const void *a, const void *b)
{
    const struct elf_func *x = a, *y = b;
    int c = cmp_up(x->addr, y->addr);
    return c ? c : (y->size != 0) - (x->size != 0); // sized (C) functions before labels
}

static bool is_function(const Elf64_Sym *sym, const char *name, const struct elf_image *img)
{
    int type = ELF64_ST_TYPE(sym->st_info);
    if (sym->st_shndx == SHN_UNDEF || !name[0])
        return false;
    if (sym->st_value < img->text_base || sym->st_value >= img->text_end)
        return false;
    return type == STT_FUNC || (type == STT_NOTYPE && !strchr(name, '.'));
}

// The symbol table: keep functions, sort them, one per address.
static NTSTATUS load_symbols(const char *file, const Elf64_Ehdr *eh, struct elf_image *img)
{
    Elf64_Shdr *sh = read_part(file, eh->e_shoff, (size_t)eh->e_shnum * sizeof *sh);
    if (!sh || eh->e_shentsize != sizeof *sh) {
        free(sh);
        return STATUS_INVALID_IMAGE_FORMAT;
    }
    NTSTATUS s = STATUS_SUCCESS;
    Elf64_Sym *syms = NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        size_t nsyms = sh[i].sh_size / sizeof *syms;
        syms = read_part(file, sh[i].sh_offset, nsyms * sizeof *syms);
        img->strtab = read_part(file, str->sh_offset, str->sh_size);
        img->funcs = calloc(nsyms ? nsyms : 1, sizeof *img->funcs);
        if (!syms || !img->strtab || !img->funcs || !str->sh_size) {
            s = STATUS_NO_MEMORY;
            break;
        }
        img->strtab[str->sh_size - 1] = '\0';
        for (size_t k = 0; k < nsyms; k++) {
            if (syms[k].st_name >= str->sh_size)
                continue;
            const char *name = img->strtab + syms[k].st_name;
            if (is_function(&syms[k], name, img))
                img->funcs[img->nfuncs++] =
                    (struct elf_func){syms[k].st_value, syms[k].st_size, name};
        }
        break;
    }
    free(syms);
    free(sh);
    if (!NT_SUCCESS(s))
        return s;
    sort_array(img->funcs, img->nfuncs, sizeof *img->funcs, by_address);
    size_t n = 0; // one name per address: the first after sorting
    for (size_t k = 0; k < img->nfuncs; k++)
        if (n == 0 || img->funcs[n - 1].addr != img->funcs[k].addr)
            img->funcs[n++] = img->funcs[k];
    img->nfuncs = n;
    return STATUS_SUCCESS;
}

NTSTATUS elf_image_load(const char *file, struct elf_image *img)
{
    memset(img, 0, sizeof *img);
    strlcpy(img->name, file, sizeof img->name);
    Elf64_Ehdr *eh = read_part(file, 0, sizeof *eh);
    if (!eh)
        return program_exists(file) ? STATUS_INVALID_IMAGE_FORMAT : STATUS_OBJECT_NAME_NOT_FOUND;
    NTSTATUS s = STATUS_INVALID_IMAGE_FORMAT;
    Elf64_Phdr *ph = NULL;
    if (memcmp(eh->e_ident, "\177ELF", 4) != 0 || eh->e_ident[4] != 2 ||
        eh->e_phentsize != sizeof *ph)
        goto out;
    ph = read_part(file, eh->e_phoff, (size_t)eh->e_phnum * sizeof *ph);
    if (!ph)
        goto out;
    img->text_base = UINT64_MAX;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X) || ph[i].p_memsz == 0)
            continue;
        if (ph[i].p_vaddr < img->text_base)
            img->text_base = ph[i].p_vaddr;
        if (ph[i].p_vaddr + ph[i].p_memsz > img->text_end)
            img->text_end = ph[i].p_vaddr + ph[i].p_memsz;
    }
    if (img->text_end == 0)
        goto out;
    s = load_symbols(file, eh, img);
out:
    free(ph);
    free(eh);
    if (!NT_SUCCESS(s))
        elf_image_free(img);
    return s;
}

void elf_image_free(struct elf_image *img)
{
    free(img->funcs);
    free(img->strtab);
    img->funcs = NULL;
    img->strtab = NULL;
    img->nfuncs = 0;
}

const struct elf_func *elf_func_at(const struct elf_image *img, uint64_t addr)
{
    if (addr < img->text_base || addr >= img->text_end)
        return NULL;
    size_t lo = 0, hi = img->nfuncs; // find the first function above addr
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (img->funcs[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &img->funcs[lo - 1] : NULL;
}
