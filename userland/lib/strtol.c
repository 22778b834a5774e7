// Numbers from text: strtoul, strtol, atoi.
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>

static int digit_value(int c)
{
    if (isdigit(c))
        return c - '0';
    if (isalpha(c))
        return tolower(c) - 'a' + 10;
    return 99;
}

// Parses the magnitude after any sign; *neg tells whether there was a '-'.
static unsigned long parse(const char *s, char **end, int base, int *neg)
{
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    *neg = 0;
    if (*p == '+' || *p == '-')
        *neg = *p++ == '-';
    if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
        isxdigit((unsigned char)p[2])) {
        p += 2;
        base = 16;
    } else if (base == 0) {
        base = p[0] == '0' ? 8 : 10;
    }
    if (base < 2 || base > 36) {
        if (end)
            *end = (char *)s;
        return 0;
    }
    unsigned long v = 0;
    int overflow = 0;
    const char *digits = p;
    for (int d; (d = digit_value((unsigned char)*p)) < base; p++) {
        if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base)
            overflow = 1;
        v = v * (unsigned)base + (unsigned)d;
    }
    if (end)
        *end = (char *)(p == digits ? s : p);
    return overflow ? UINT64_MAX : v;
}

unsigned long strtoul(const char *s, char **end, int base)
{
    int neg;
    unsigned long v = parse(s, end, base, &neg);
    if (v == UINT64_MAX) // overflow saturates, whatever the sign
        return v;
    return neg ? -v : v;
}

long strtol(const char *s, char **end, int base)
{
    int neg;
    unsigned long v = parse(s, end, base, &neg);
    if (neg)
        return v > (unsigned long)INT64_MAX + 1 ? INT64_MIN : -(long)(v - 1) - 1;
    return v > INT64_MAX ? INT64_MAX : (long)v;
}

int atoi(const char *s)
{
    return (int)strtol(s, NULL, 10);
}
