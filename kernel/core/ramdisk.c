// Ramdisk lookup over the boot modules.
#include "core/ramdisk.h"

#include "lib/bootinfo.h"
#include "lib/memlayout.h"
#include "lib/string.h"

static struct ramdisk_file files[BOOT_MAX_MODULES];
static unsigned nfiles;

void ramdisk_init(void)
{
    for (unsigned i = 0; i < boot_info.nmodules; i++) {
        const struct boot_module *m = &boot_info.modules[i];
        files[nfiles++] = (struct ramdisk_file){m->name, phys_to_virt(m->start), m->end - m->start};
    }
}

const struct ramdisk_file *ramdisk_find(const char *name)
{
    for (unsigned i = 0; i < nfiles; i++)
        if (strcmp(files[i].name, name) == 0)
            return &files[i];
    return NULL;
}

const struct ramdisk_file *ramdisk_file_at(unsigned i)
{
    return i < nfiles ? &files[i] : NULL;
}
