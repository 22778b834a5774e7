// What the boot loader told us, copied out of the multiboot2 information so
// that nothing later depends on where GRUB left it.
#pragma once
#include "lib/types.h"

#define BOOT_MAX_MMAP    128
#define BOOT_MAX_MODULES 32

enum mem_type { MEM_AVAILABLE = 1, MEM_RESERVED = 2, MEM_ACPI = 3, MEM_NVS = 4, MEM_BAD = 5 };

struct mem_region {
    uint64_t base, length;
    uint32_t type;
};

struct boot_module {
    uint64_t start, end; // physical, end exclusive
    char name[64];
};

struct boot_info {
    char cmdline[256];
    struct mem_region mmap[BOOT_MAX_MMAP];
    unsigned nmmap;
    struct boot_module modules[BOOT_MAX_MODULES];
    unsigned nmodules;
    uint8_t rsdp[36];      // copy of the RSDP (v1 uses the first 20 bytes)
    unsigned rsdp_version; // 0 none, 1 ACPI 1.0 RSDP, 2 ACPI 2.0+ RSDP
    struct {
        uint64_t addr;
        uint32_t pitch, width, height;
        uint8_t bpp, type; // type 0 indexed, 1 RGB, 2 EGA text
        bool present;
    } fb;
    struct { // the kernel's ELF section headers (for symbols), physical
        uint64_t sections;
        uint32_t num, entsize, shndx;
    } elf;
    uint64_t mbi_start, mbi_end; // the multiboot2 information itself
    bool efi;                    // UEFI firmware (an EFI system table tag): no VGA text mode
};

extern struct boot_info boot_info;

// Parse the multiboot2 information at mbi (a pointer the caller can read).
// Returns false if it is malformed. Pure: host-tested.
bool multiboot2_parse(const void *mbi, uint64_t mbi_phys, struct boot_info *out);
