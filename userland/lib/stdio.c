// Buffered console output over SysWrite, and getchar over SysRead.
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

struct file {
    int fd;
    bool line_buffered; // stdout: written at each newline
    size_t len;
    char buf[1024];
};

static struct file stdout_file = {.fd = 1, .line_buffered = true};
static struct file stderr_file = {.fd = 2};
FILE *const stdout = &stdout_file;
FILE *const stderr = &stderr_file;

static int flush_one(struct file *f)
{
    if (f->len == 0)
        return 0;
    NTSTATUS s = SysWrite(f->fd, f->buf, f->len);
    f->len = 0;
    return NT_SUCCESS(s) ? 0 : EOF;
}

int fflush(FILE *f)
{
    if (f)
        return flush_one(f);
    int a = flush_one(stdout), b = flush_one(stderr);
    return a | b;
}

// Appends len bytes and writes them out when the stream's policy says so.
static int emit(struct file *f, const char *s, size_t len)
{
    int r = 0;
    bool newline = false;
    if (f == stderr)
        r |= flush_one(stdout); // keep the order in which a reader expects them
    for (size_t i = 0; i < len; i++) {
        if (f->len == sizeof f->buf)
            r |= flush_one(f);
        f->buf[f->len++] = s[i];
        newline |= s[i] == '\n';
    }
    if (!f->line_buffered || newline)
        r |= flush_one(f);
    return r;
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    int r;
    if ((size_t)n < sizeof small) {
        r = emit(f, small, (size_t)n);
    } else {
        // Too long for the stack buffer: format again into the heap, or
        // print what fitted when the heap is exhausted too.
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, again);
            r = emit(f, big, (size_t)n);
            free(big);
        } else {
            r = emit(f, small, sizeof small - 1);
        }
    }
    va_end(again);
    return r ? EOF : n;
}

int vprintf(const char *fmt, va_list ap)
{
    return vfprintf(stdout, fmt, ap);
}

int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return n;
}

int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(stdout, fmt, ap);
    va_end(ap);
    return n;
}

int fputs(const char *s, FILE *f)
{
    return emit(f, s, strlen(s)) ? EOF : 0;
}

int puts(const char *s)
{
    // stdout is line-buffered: the text and its newline leave in one SysWrite.
    int r = emit(stdout, s, strlen(s));
    r |= emit(stdout, "\n", 1);
    return r ? EOF : 0;
}

int fputc(int c, FILE *f)
{
    char ch = (char)c;
    return emit(f, &ch, 1) ? EOF : (unsigned char)ch;
}

int putchar(int c)
{
    return fputc(c, stdout);
}

size_t fwrite(const void *buf, size_t size, size_t count, FILE *f)
{
    if (size == 0 || count == 0)
        return 0;
    return emit(f, buf, size * count) ? 0 : count;
}

// Console input arrives in bursts (a pasted line, an escape sequence): keep
// what one SysRead returned and hand it out a byte at a time.
static char in_buf[128];
static size_t in_pos, in_len;

int getchar(void)
{
    if (in_pos == in_len) {
        fflush(stdout); // a prompt must be visible before we block
        size_t got = 0;
        NTSTATUS s = SysRead(0, in_buf, sizeof in_buf, &got);
        if (s == STATUS_ACCESS_DENIED)
            fprintf(stderr, "the console's input belongs to the foreground job: not read "
                            "(run this in the foreground)\n");
        if (!NT_SUCCESS(s) || got == 0 || got > sizeof in_buf)
            return EOF;
        in_pos = 0;
        in_len = got;
    }
    return (unsigned char)in_buf[in_pos++];
}
