// Formatted output to the console, buffered, and character input.
//
// stdout is line-buffered (written at each '\n', when full, and before any
// read of the console); stderr is written at the end of every call, after
// flushing stdout so the two stay in order. vsnprintf and snprintf are the
// kernel's formatter (kernel/lib/kprintf.c): %d %i %u %x %X %o %p %s %c %%, the
// l, ll, z and h modifiers, width, the '0' '-' '#' flags and %.Ns. No floats.
#pragma once
#include <stdarg.h>
#include <stddef.h>

#define EOF (-1)

typedef struct file FILE;
extern FILE *const stdout;
extern FILE *const stderr;

#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) PRINTF_LIKE(3, 4);
int printf(const char *fmt, ...) PRINTF_LIKE(1, 2);
int fprintf(FILE *f, const char *fmt, ...) PRINTF_LIKE(2, 3);
int vprintf(const char *fmt, va_list ap);
int vfprintf(FILE *f, const char *fmt, va_list ap);
int puts(const char *s);           // s and a newline
int fputs(const char *s, FILE *f); // s only
int putchar(int c);
int fputc(int c, FILE *f);
size_t fwrite(const void *buf, size_t size, size_t count, FILE *f); // count, or less on failure
int fflush(FILE *f);                                                // NULL flushes both streams

int getchar(void); // next byte of the console, EOF when reading failed
