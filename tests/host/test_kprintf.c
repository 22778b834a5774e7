// vsnprintf: every conversion the kernel uses, widths, flags and truncation.
#include <string.h>
#include "harness.h"
#include "lib/kprintf.h"

static bool fmt_is(const char *want, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (strcmp(buf, want) != 0 || n != (int)strlen(want)) {
        printf("# got \"%s\" (%d), want \"%s\"\n", buf, n, want);
        return false;
    }
    return true;
}

void test_kprintf(void)
{
    CHECK(fmt_is("42 -7 0", "%d %i %u", 42, -7, 0u), "kprintf: %%d %%i %%u");
    CHECK(fmt_is("-9223372036854775808", "%ld", (long)(-9223372036854775807L - 1)),
          "kprintf: LONG_MIN");
    CHECK(fmt_is("18446744073709551615", "%lu", ~0ul), "kprintf: ULONG_MAX");
    CHECK(fmt_is("ff FF 0xff 17", "%x %X %#x %o", 255u, 255u, 255u, 15u), "kprintf: hex, octal, #");
    CHECK(fmt_is("[   42][42   ][00042]", "[%5d][%-5d][%05d]", 42, 42, 42),
          "kprintf: width and flags");
    CHECK(fmt_is("[-0042]", "[%05d]", -42), "kprintf: zero padding after the sign");
    CHECK(fmt_is("0x00000000deadbeef", "%p", (void *)0xdeadbeef), "kprintf: %%p");
    CHECK(fmt_is("ab|abc  |  abc|(null)", "%.2s|%-5s|%5s|%s", "abc", "abc", "abc", (char *)0),
          "kprintf: strings, precision, NULL");
    CHECK(fmt_is("xc%", "x%c%%%", (int)'c'), "kprintf: %%c, %%%% and a trailing lone %%");
    CHECK(fmt_is("-1 255 65535", "%hhd %hhu %hu", 255, 255, 65535), "kprintf: hh and h");
    CHECK(fmt_is("%q", "%q"), "kprintf: unknown conversion shown as is");
    CHECK(fmt_is("  7", "%*d", 3, 7), "kprintf: * width");
    CHECK(fmt_is("ab|5|017|7  |", "%.*s|%zu|%#o|%-*d|", 2, "abc", (size_t)5, 15u, 3, 7),
          "kprintf: * precision, z, # with octal, - with a * width");

    char small[6];
    const char *volatile long_text = "hello world"; // volatile: no compile-time truncation warning
    int n = snprintf(small, sizeof small, "%s", long_text);
    CHECK(n == 11 && strcmp(small, "hello") == 0,
          "kprintf: truncation keeps NUL, returns full length");
    CHECK(snprintf(NULL, 0, "%d", 12345) == 5, "kprintf: size 0 only measures");
}
