// Strings and memory. memcpy, memmove, memset, memcmp, strlen, strnlen,
// strcmp, strncmp and strchr are the kernel's own (kernel/lib/string.c, compiled
// into libc); the rest are in lib/string.c.
#pragma once
#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);

char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
char *strcpy(char *dst, const char *src);
char *strncpy(char *dst, const char *src, size_t n);
char *strcat(char *dst, const char *src);
size_t strlcpy(char *dst, const char *src,
               size_t size); // always terminates (size > 0); returns strlen(src)
char *strdup(const char *s); // malloc'd copy, NULL when out of memory
