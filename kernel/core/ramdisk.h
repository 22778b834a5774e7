// The initial ramdisk: every GRUB module is a file, named by its command line
// (grub.cfg: `module2 /boot/bin/primes primes`).
#pragma once
#include "lib/types.h"

struct ramdisk_file {
    const char *name;
    const uint8_t *data;
    size_t size;
};

// The file called name, or NULL.
const struct ramdisk_file *ramdisk_find(const char *name);
// The i-th file, or NULL past the end.
const struct ramdisk_file *ramdisk_file_at(unsigned i);
void ramdisk_init(void);
