// An ELF64 program's executable range and function symbols, read from the
// ramdisk: what a profiler needs to choose a RangeBase/RangeSize and to turn
// a bucket back into a function name.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/abi/status.h"

struct elf_func {
    uint64_t addr;    // link-time address (= run-time: static, not relocated)
    uint64_t size;    // 0 for assembly labels
    const char *name; // points into the image's string table
};

struct elf_image {
    char name[32];                // the ramdisk file it came from
    uint64_t text_base, text_end; // covers every executable PT_LOAD: [base, end)
    struct elf_func *funcs;       // sorted by address, one per address
    size_t nfuncs;
    char *strtab;
};

// Reads file's program headers and symbol table. Functions are STT_FUNC
// symbols and assembly labels (STT_NOTYPE without a '.') inside the text.
// STATUS_INVALID_IMAGE_FORMAT when it is no ELF64 with executable code.
NTSTATUS elf_image_load(const char *file, struct elf_image *out);
void elf_image_free(struct elf_image *img);

// The function a code address belongs to when rounding down: the last one
// starting at or below addr. NULL below the first function or outside the text.
const struct elf_func *elf_func_at(const struct elf_image *img, uint64_t addr);
