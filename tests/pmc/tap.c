// TAP output for the hosted pmc tests.
#include "tap.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static unsigned tap_n, tap_failed;
static FILE *out;

void tap_set_stream(FILE *f)
{
    out = f;
}

unsigned tap_failures(void)
{
    return tap_failed;
}

static FILE *stream(void)
{
    return out ? out : stdout;
}

static bool report(bool cond, const char *fmt, va_list ap)
{
    tap_n++;
    fprintf(stream(), "%sok %u - ", cond ? "" : "not ", tap_n);
    vfprintf(stream(), fmt, ap);
    fprintf(stream(), "\n");
    if (!cond)
        tap_failed++;
    fflush(stream());
    return cond;
}

// One TAP line for cond, its description from the caller's format and
// arguments (the variadic function this expands in).
#define REPORT(cond, fmt) \
    do { \
        va_list ap; \
        va_start(ap, fmt); \
        report(cond, fmt, ap); \
        va_end(ap); \
    } while (0)

bool tap_ok(bool cond, const char *fmt, ...)
{
    REPORT(cond, fmt);
    return cond;
}

bool tap_eq(uint64_t got, uint64_t want, const char *fmt, ...)
{
    REPORT(got == want, fmt);
    if (got != want)
        fprintf(stream(),
                "#   got  %" PRIu64 " (0x%" PRIx64 ")\n#   want %" PRIu64 " (0x%" PRIx64 ")\n", got,
                got, want, want);
    return got == want;
}

bool tap_streq(const char *got, const char *want, const char *fmt, ...)
{
    bool cond = got && want && strcmp(got, want) == 0;
    REPORT(cond, fmt);
    if (!cond)
        fprintf(stream(), "#   got  \"%s\"\n#   want \"%s\"\n", got ? got : "(null)",
                want ? want : "(null)");
    return cond;
}

bool tap_contains(const char *haystack, const char *needle, const char *fmt, ...)
{
    bool cond = haystack && needle && strstr(haystack, needle) != NULL;
    REPORT(cond, fmt);
    if (!cond)
        fprintf(stream(), "#   missing \"%s\" in:\n#   %s\n", needle ? needle : "(null)",
                haystack ? haystack : "(null)");
    return cond;
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stream(), "# ");
    vfprintf(stream(), fmt, ap);
    fprintf(stream(), "\n");
    va_end(ap);
}

void tap_section(const char *name)
{
    fprintf(stream(), "# --- %s\n", name);
}

int tap_finish(void)
{
    fprintf(stream(), "1..%u\n", tap_n);
    fprintf(stream(), "%u passed, %u failed\n", tap_n - tap_failed, tap_failed);
    return tap_failed ? 1 : 0;
}
