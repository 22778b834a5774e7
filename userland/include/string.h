// Strings and memory. memcpy, memmove, memset, memcmp, strlen, strnlen,
// strcmp, strncmp and strchr are the kernel's own (kernel/lib/string.c, compiled
// into libc), declared by its header; the rest are in lib/string.c.
#pragma once
#include <stddef.h>
#include "lib/string.h"

char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
char *strcpy(char *dst, const char *src);
char *strncpy(char *dst, const char *src, size_t n);
char *strcat(char *dst, const char *src);
size_t strlcpy(char *dst, const char *src,
               size_t size); // always terminates (size > 0); returns strlen(src)
char *strdup(const char *s); // malloc'd copy, NULL when out of memory
