// Multiboot2 boot information: a total size, then 8-byte-aligned tags
// {type, size, payload} ending with a type-0 tag.
#include "lib/bootinfo.h"
#include "lib/string.h"

struct boot_info boot_info;

enum {
    TAG_END = 0,
    TAG_CMDLINE = 1,
    TAG_MODULE = 3,
    TAG_MMAP = 6,
    TAG_FRAMEBUFFER = 8,
    TAG_ELF_SECTIONS = 9,
    TAG_EFI32 = 11, // the EFI system table: GRUB booted from UEFI firmware
    TAG_EFI64 = 12,
    TAG_ACPI_OLD = 14,
    TAG_ACPI_NEW = 15,
};

struct tag {
    uint32_t type, size;
};

static void copy_string(char *dst, size_t cap, const char *src, size_t max)
{
    size_t n = strnlen(src, max);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

// Module tag: u32 start, u32 end, then the module's command line.
static void parse_module(const uint8_t *body, uint32_t len, struct boot_info *out)
{
    if (len < 8 || out->nmodules >= BOOT_MAX_MODULES)
        return;
    struct boot_module *m = &out->modules[out->nmodules++];
    uint32_t se[2];
    memcpy(se, body, 8);
    m->start = se[0];
    m->end = se[1];
    copy_string(m->name, sizeof m->name, (const char *)body + 8, len - 8);
}

// Memory map tag: u32 entry size, u32 entry version, then {u64 base, u64
// length, u32 type, u32 reserved} entries. False when the entry size is too
// small for that layout.
static bool parse_mmap(const uint8_t *body, uint32_t len, struct boot_info *out)
{
    uint32_t esize;
    memcpy(&esize, body, 4);
    if (esize < 24)
        return false;
    for (uint32_t e = 8; e + esize <= len && out->nmmap < BOOT_MAX_MMAP; e += esize) {
        struct {
            uint64_t base, length;
            uint32_t type, reserved;
        } raw;
        memcpy(&raw, body + e, sizeof raw);
        out->mmap[out->nmmap++] = (struct mem_region){raw.base, raw.length, raw.type};
    }
    return true;
}

// Framebuffer tag: u64 address, u32 pitch, width, height, u8 bpp, u8 type.
static void parse_framebuffer(const uint8_t *body, uint32_t len, struct boot_info *out)
{
    if (len < 22)
        return;
    memcpy(&out->fb.addr, body, 8);
    memcpy(&out->fb.pitch, body + 8, 4);
    memcpy(&out->fb.width, body + 12, 4);
    memcpy(&out->fb.height, body + 16, 4);
    out->fb.bpp = body[20];
    out->fb.type = body[21];
    out->fb.present = true;
}

// One tag's payload (body, len bytes; the tag itself is at tag_phys).
// False when the information is malformed.
static bool parse_tag(const struct tag *t, const uint8_t *body, uint32_t len, uint64_t tag_phys,
                      struct boot_info *out)
{
    switch (t->type) {
    case TAG_CMDLINE:
        copy_string(out->cmdline, sizeof out->cmdline, (const char *)body, len);
        break;
    case TAG_MODULE: parse_module(body, len, out); break;
    case TAG_MMAP: return parse_mmap(body, len, out);
    case TAG_FRAMEBUFFER: parse_framebuffer(body, len, out); break;
    case TAG_ELF_SECTIONS: // GRUB's layout: u32 num, entsize, shndx, then headers
        if (len >= 12) {
            memcpy(&out->elf.num, body, 4);
            memcpy(&out->elf.entsize, body + 4, 4);
            memcpy(&out->elf.shndx, body + 8, 4);
            out->elf.sections = tag_phys + 8 + 12;
        }
        break;
    case TAG_EFI32:
    case TAG_EFI64: out->efi = true; break;
    case TAG_ACPI_OLD:
    case TAG_ACPI_NEW: {
        unsigned version = t->type == TAG_ACPI_NEW ? 2 : 1;
        if (version >= out->rsdp_version) { // prefer the 2.0 RSDP when both exist
            memcpy(out->rsdp, body, MIN(len, (uint32_t)sizeof out->rsdp));
            out->rsdp_version = version;
        }
        break;
    }
    default: break;
    }
    return true;
}

bool multiboot2_parse(const void *mbi, uint64_t mbi_phys, struct boot_info *out)
{
    const uint8_t *p = mbi;
    uint32_t total;
    memcpy(&total, p, 4);
    if (total < 16 || total > (1u << 24))
        return false;
    memset(out, 0, sizeof *out);
    out->mbi_start = mbi_phys;
    out->mbi_end = mbi_phys + total;
    for (uint32_t off = 8; off + sizeof(struct tag) <= total;) {
        struct tag t;
        memcpy(&t, p + off, sizeof t);
        if (t.type == TAG_END)
            return true;
        if (t.size < sizeof t || off + t.size > total)
            return false;
        if (!parse_tag(&t, p + off + 8, t.size - 8, mbi_phys + off, out))
            return false;
        off += ALIGN_UP(t.size, 8u);
    }
    return false; // no end tag
}
