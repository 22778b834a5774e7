// Memory allocation, number parsing and ending the process.
#pragma once
#include <stddef.h>

void *malloc(size_t size);
void free(void *p);
void *calloc(size_t count, size_t size);
void *realloc(void *p, size_t size);

// What the allocator holds, for leak checks (usertests) and the host tests.
struct malloc_stats {
    size_t bytes_in_use; // payload bytes of live allocations (rounded up to 16)
    size_t bytes_mapped; // memory obtained from SysMap and not yet returned
    size_t allocations;  // live allocations
};
void malloc_stats(struct malloc_stats *out);

// Base 0 accepts 0x (hex), 0 (octal) or decimal. *end, when not NULL, is set
// past the last digit used (to s when there was none). Overflow saturates.
unsigned long strtoul(const char *s, char **end, int base);
long strtol(const char *s, char **end, int base);
int atoi(const char *s);

_Noreturn void exit(int status); // flushes stdout and stderr, then SysExit
_Noreturn void abort(void);      // flushes, then traps: the kernel reports where
