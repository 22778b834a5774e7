// vsnprintf and kprintf. The formatter is pure (host-tested in tests/host);
// kprintf formats into a stack buffer and writes it to the console in one go,
// under the console lock, so lines from different CPUs do not interleave.
#include "lib/kprintf.h"
#include "lib/string.h"

struct out {
    char *buf;
    size_t size, len; // len counts every character, even those that did not fit
};

static void put(struct out *o, char c)
{
    if (o->len + 1 < o->size)
        o->buf[o->len] = c;
    o->len++;
}

static void put_padding(struct out *o, int n, char c)
{
    while (n-- > 0)
        put(o, c);
}

static void put_number(struct out *o, uint64_t v, bool negative, unsigned base, bool upper,
                       int width, bool zero, bool left, const char *prefix)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = digits[v % base];
        v /= base;
    } while (v);
    int len = n + negative + (int)strlen(prefix);
    if (!left && !zero)
        put_padding(o, width - len, ' ');
    if (negative)
        put(o, '-');
    while (*prefix)
        put(o, *prefix++);
    if (!left && zero)
        put_padding(o, width - len, '0');
    while (n)
        put(o, tmp[--n]);
    if (left)
        put_padding(o, width - len, ' ');
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct out o = {buf, size, 0};
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            put(&o, *fmt);
            continue;
        }
        fmt++;
        bool zero = false, left = false, alt = false;
        for (;; fmt++) {
            if (*fmt == '0')
                zero = true;
            else if (*fmt == '#')
                alt = true;
            else if (*fmt == '-')
                left = true;
            else
                break;
        }
        int width = 0, precision = -1;
        if (*fmt == '*') {
            width = va_arg(ap, int);
            fmt++;
        }
        while (*fmt >= '0' && *fmt <= '9')
            width = width * 10 + (*fmt++ - '0');
        if (*fmt == '.') {
            fmt++;
            precision = 0;
            if (*fmt == '*') {
                precision = va_arg(ap, int);
                fmt++;
            }
            while (*fmt >= '0' && *fmt <= '9')
                precision = precision * 10 + (*fmt++ - '0');
        }
        int lng = 0; // 0 int, 1 long, 2 long long, -1 short, -2 char
        for (;; fmt++) {
            if (*fmt == 'l')
                lng++;
            else if (*fmt == 'z')
                lng = 1;
            else if (*fmt == 'h')
                lng--;
            else
                break;
        }
        switch (*fmt) {
        case 'd':
        case 'i': {
            int64_t v = lng >= 2   ? va_arg(ap, long long)
                        : lng == 1 ? va_arg(ap, long)
                                   : va_arg(ap, int);
            if (lng == -1)
                v = (short)v;
            else if (lng <= -2)
                v = (signed char)v;
            uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
            put_number(&o, mag, v < 0, 10, false, width, zero, left, "");
            break;
        }
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            uint64_t v = lng >= 2   ? va_arg(ap, unsigned long long)
                         : lng == 1 ? va_arg(ap, unsigned long)
                                    : va_arg(ap, unsigned int);
            if (lng == -1)
                v = (unsigned short)v;
            else if (lng <= -2)
                v = (unsigned char)v;
            unsigned base = *fmt == 'u' ? 10 : *fmt == 'o' ? 8 : 16;
            const char *prefix = !alt || base == 10 ? ""
                                 : base == 8        ? "0"
                                 : *fmt == 'X'      ? "0X"
                                                    : "0x";
            put_number(&o, v, false, base, *fmt == 'X', width, zero, left, prefix);
            break;
        }
        case 'p': {
            uintptr_t v = (uintptr_t)va_arg(ap, void *);
            put_number(&o, v, false, 16, false, 18, true, false, "0x");
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            int len = (int)(precision >= 0 ? strnlen(s, (size_t)precision) : strlen(s));
            if (!left)
                put_padding(&o, width - len, ' ');
            for (int i = 0; i < len; i++)
                put(&o, s[i]);
            if (left)
                put_padding(&o, width - len, ' ');
            break;
        }
        case 'c': put(&o, (char)va_arg(ap, int)); break;
        case '%': put(&o, '%'); break;
        case '\0':
            fmt--; // a lone '%' at the end: print nothing more
            break;
        default: // unknown conversion: show it, so the mistake is visible
            put(&o, '%');
            put(&o, *fmt);
            break;
        }
    }
    if (size)
        buf[o.len < size ? o.len : size - 1] = '\0';
    return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

#ifndef KERNEL_HOSTED
void (*kprintf_output)(const char *s, size_t n);

int kprintf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    void (*out)(const char *, size_t) = READ_ONCE(kprintf_output);
    if (out)
        out(buf, MIN((size_t)n, sizeof buf - 1));
    return n;
}
#endif
