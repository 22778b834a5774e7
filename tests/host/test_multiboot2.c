// multiboot2_parse on synthetic boot information.
#include <string.h>
#include "lib/bootinfo.h"
#include "harness.h"

static uint8_t mbi[1024] __attribute__((aligned(8)));
static uint32_t len;

static void *tag(uint32_t type, uint32_t size)
{
    uint8_t *t = mbi + len;
    memcpy(t, &type, 4);
    memcpy(t + 4, &size, 4);
    len += (size + 7) & ~7u;
    return t + 8;
}

static void finish(void)
{
    tag(0, 8);
    memcpy(mbi, &len, 4);
}

void test_multiboot2(void)
{
    struct boot_info bi;
    memset(mbi, 0, sizeof mbi);
    len = 8;
    strcpy(tag(1, 8 + 12), "test=boot x");
    struct {
        uint32_t esize, ever;
        struct {
            uint64_t base, len;
            uint32_t type, res;
        } e[3];
    } mm = {24, 0, {{0, 0x9F000, 1, 0}, {0x100000, 0x7EE0000, 1, 0}, {0xFFFC0000, 0x40000, 2, 0}}};
    memcpy(tag(6, 8 + sizeof mm), &mm, sizeof mm);
    uint8_t *m = tag(3, 8 + 8 + 6);
    uint32_t se[2] = {0x200000, 0x201234};
    memcpy(m, se, 8);
    strcpy((char *)m + 8, "initrd");
    uint8_t *r1 = tag(14, 8 + 20);
    memcpy(r1, "RSD PTR ", 8);
    r1[15] = 0;
    uint8_t *r2 = tag(15, 8 + 36);
    memcpy(r2, "RSD PTR ", 8);
    r2[15] = 2;
    finish();

    CHECK(multiboot2_parse(mbi, 0x9000, &bi), "multiboot2: well-formed information parses");
    CHECK(strcmp(bi.cmdline, "test=boot x") == 0, "multiboot2: command line");
    CHECK(bi.nmmap == 3 && bi.mmap[1].base == 0x100000 && bi.mmap[1].length == 0x7EE0000 &&
              bi.mmap[2].type == MEM_RESERVED,
          "multiboot2: memory map entries");
    CHECK(bi.nmodules == 1 && bi.modules[0].start == 0x200000 && bi.modules[0].end == 0x201234 &&
              strcmp(bi.modules[0].name, "initrd") == 0,
          "multiboot2: module range and name");
    CHECK(bi.rsdp_version == 2 && bi.rsdp[15] == 2, "multiboot2: the ACPI 2.0 RSDP wins over 1.0");
    CHECK(bi.mbi_start == 0x9000 && bi.mbi_end == 0x9000 + len, "multiboot2: its own extent");

    // Corruptions: a tag running past the end, no end tag, absurd total size.
    uint32_t bad = 4096;
    memcpy(mbi + 8 + 4, &bad, 4); // first tag's size
    CHECK(!multiboot2_parse(mbi, 0, &bi), "multiboot2: a tag past the end is rejected");
    memset(mbi, 0, sizeof mbi);
    len = 8;
    strcpy(tag(1, 8 + 4), "abc");
    memcpy(mbi, &len, 4); // no end tag
    CHECK(!multiboot2_parse(mbi, 0, &bi), "multiboot2: a missing end tag is rejected");
    uint32_t huge = 0x7FFFFFFF;
    memcpy(mbi, &huge, 4);
    CHECK(!multiboot2_parse(mbi, 0, &bi), "multiboot2: an absurd total size is rejected");
}
