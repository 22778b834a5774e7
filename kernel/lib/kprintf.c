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

// One conversion specification: %[flags][width][.precision][length]conversion.
struct spec {
    bool zero, left, alt; // flags '0', '-', '#'
    int width;
    int precision; // -1: none given
    int lng;       // length: 0 int, 1 long, 2 long long, -1 short, -2 char
    char conv;     // the conversion character ('\0' for a lone '%' at the end)
};

// A width or precision: digits, or '*' (the next int argument).
static int parse_count(const char **fmt, va_list *ap)
{
    int n = 0;
    if (**fmt == '*') {
        (*fmt)++;
        return va_arg(*ap, int);
    }
    while (**fmt >= '0' && **fmt <= '9')
        n = n * 10 + (*(*fmt)++ - '0');
    return n;
}

// Reads the specification that follows a '%' and leaves *fmt at its
// conversion character.
static void parse_spec(const char **fmt, va_list *ap, struct spec *sp)
{
    *sp = (struct spec){.precision = -1};
    for (;; (*fmt)++) {
        if (**fmt == '0')
            sp->zero = true;
        else if (**fmt == '#')
            sp->alt = true;
        else if (**fmt == '-')
            sp->left = true;
        else
            break;
    }
    sp->width = parse_count(fmt, ap);
    if (**fmt == '.') {
        (*fmt)++;
        sp->precision = parse_count(fmt, ap);
    }
    for (;; (*fmt)++) {
        if (**fmt == 'l')
            sp->lng++;
        else if (**fmt == 'z')
            sp->lng = 1;
        else if (**fmt == 'h')
            sp->lng--;
        else
            break;
    }
    sp->conv = **fmt;
}

// %d and %i: the argument at its length, narrowed as the length says.
static void put_signed(struct out *o, const struct spec *sp, va_list *ap)
{
    int64_t v = sp->lng >= 2   ? va_arg(*ap, long long)
                : sp->lng == 1 ? va_arg(*ap, long)
                               : va_arg(*ap, int);
    if (sp->lng == -1)
        v = (short)v;
    else if (sp->lng <= -2)
        v = (signed char)v;
    uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
    put_number(o, mag, v < 0, 10, false, sp->width, sp->zero, sp->left, "");
}

// %u, %x, %X and %o; '#' prefixes 0x, 0X or 0.
static void put_unsigned(struct out *o, const struct spec *sp, va_list *ap)
{
    uint64_t v = sp->lng >= 2   ? va_arg(*ap, unsigned long long)
                 : sp->lng == 1 ? va_arg(*ap, unsigned long)
                                : va_arg(*ap, unsigned int);
    if (sp->lng == -1)
        v = (unsigned short)v;
    else if (sp->lng <= -2)
        v = (unsigned char)v;
    unsigned base = sp->conv == 'u' ? 10 : sp->conv == 'o' ? 8 : 16;
    const char *prefix = !sp->alt || base == 10 ? ""
                         : base == 8            ? "0"
                         : sp->conv == 'X'      ? "0X"
                                                : "0x";
    put_number(o, v, false, base, sp->conv == 'X', sp->width, sp->zero, sp->left, prefix);
}

// %s: at most precision characters, padded to the width.
static void put_string(struct out *o, const struct spec *sp, const char *s)
{
    if (!s)
        s = "(null)";
    int len = (int)(sp->precision >= 0 ? strnlen(s, (size_t)sp->precision) : strlen(s));
    if (!sp->left)
        put_padding(o, sp->width - len, ' ');
    for (int i = 0; i < len; i++)
        put(o, s[i]);
    if (sp->left)
        put_padding(o, sp->width - len, ' ');
}

// Formats one conversion; false for a lone '%' at the end of the format.
static bool put_conversion(struct out *o, const struct spec *sp, va_list *ap)
{
    switch (sp->conv) {
    case 'd':
    case 'i': put_signed(o, sp, ap); break;
    case 'u':
    case 'x':
    case 'X':
    case 'o': put_unsigned(o, sp, ap); break;
    case 'p':
        put_number(o, (uintptr_t)va_arg(*ap, void *), false, 16, false, 18, true, false, "0x");
        break;
    case 's': put_string(o, sp, va_arg(*ap, const char *)); break;
    case 'c': put(o, (char)va_arg(*ap, int)); break;
    case '%': put(o, '%'); break;
    case '\0': return false;
    default: // unknown conversion: show it, so the mistake is visible
        put(o, '%');
        put(o, sp->conv);
        break;
    }
    return true;
}

// The arguments are read through a copy: a va_list parameter cannot be
// passed on by address portably (on x86-64 it is an array type).
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct out o = {buf, size, 0};
    va_list args;
    va_copy(args, ap);
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            put(&o, *fmt);
            continue;
        }
        fmt++;
        struct spec sp;
        parse_spec(&fmt, &args, &sp);
        if (!put_conversion(&o, &sp, &args))
            break; // a lone '%' at the end: print nothing more
    }
    va_end(args);
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
