// Formatted output to the console (COM1 and VGA text).
//
// Formats: %d %i %u %x %X %o %p %s %c %%, the l, ll, z and h length modifiers,
// width (or *), the '0', '-' and '#' flags, and precision for %s.
#pragma once
#include <stdarg.h>

#include "lib/types.h"

int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Where kprintf's text goes: the console registers its writer at init
// (core/console.c); until then the text is dropped.
extern void (*kprintf_output)(const char *s, size_t n);
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
