// Host tests of the libc pieces that need no kernel: the allocator (over a
// SysMap made of mmap), strings, number parsing, status names and line
// editing (over scripted keystrokes), and `pmc trace`'s decoder
// (test_pmctrace.c). Built by `make -f userland/userland.mk
// userland-test`; the libc functions are renamed ul_* so they do not collide
// with the host's C library. KTAP-style output, non-zero exit on failure.
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"
#include "check.h"
#include "mallocchurn.h"
#include "statfmt.h"

int checks, failed;

// The renamed libc.
struct ul_malloc_stats {
    size_t bytes_in_use, bytes_mapped, allocations;
};
void *ul_malloc(size_t n);
void ul_free(void *p);
void *ul_calloc(size_t n, size_t m);
void *ul_realloc(void *p, size_t n);
void ul_malloc_stats(struct ul_malloc_stats *out);
unsigned long ul_strtoul(const char *s, char **end, int base);
long ul_strtol(const char *s, char **end, int base);
int ul_atoi(const char *s);
char *ul_strrchr(const char *s, int c);
char *ul_strstr(const char *h, const char *n);
char *ul_strcpy(char *d, const char *s);
char *ul_strncpy(char *d, const char *s, size_t n);
char *ul_strcat(char *d, const char *s);
size_t ul_strlcpy(char *d, const char *s, size_t n);
char *ul_strdup(const char *s);
int ul_readline(const char *prompt, char *buf, size_t size);
const char *nt_status_name(NTSTATUS s);
int ul_isspace(int c);
int ul_toupper(int c);

// ---------------------------------------------------------------------------
// The system calls the pieces use, done by the host.

static size_t mapped_now;

NTSTATUS ul_SysMap(void **addr, size_t size, uint32_t prot)
{
    (void)prot;
    if (*addr || size % 4096)
        return STATUS_INVALID_PARAMETER;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return STATUS_NO_MEMORY;
    mapped_now += size;
    *addr = p;
    return STATUS_SUCCESS;
}

NTSTATUS ul_SysUnmap(void *addr, size_t size)
{
    if ((uintptr_t)addr % 4096 || munmap(addr, size) != 0)
        return STATUS_INVALID_PARAMETER;
    mapped_now -= size;
    return STATUS_SUCCESS;
}

NTSTATUS ul_SysWrite(int fd, const void *buf, size_t len)
{
    fwrite(buf, 1, len, fd == 2 ? stderr : stdout);
    return STATUS_SUCCESS;
}

// Console for readline: keystrokes from a script, echo into a buffer.
static const char *keys;
static char echo[4096];
static size_t echo_len;

int ul_getchar(void)
{
    return *keys ? (unsigned char)*keys++ : -1;
}
int ul_putchar(int c)
{
    if (echo_len < sizeof echo - 1)
        echo[echo_len++] = (char)c;
    return c;
}
int ul_fputs(const char *s, void *f)
{
    (void)f;
    while (*s)
        ul_putchar(*s++);
    return 0;
}
size_t ul_fwrite(const void *buf, size_t size, size_t n, void *f)
{
    (void)f;
    for (size_t i = 0; i < size * n; i++)
        ul_putchar(((const char *)buf)[i]);
    return n;
}
int ul_fflush(void *f)
{
    (void)f;
    return 0;
}
void *const ul_stdout = NULL;

// ---------------------------------------------------------------------------

// 200,000 random allocations, reallocations and frees over SLOTS blocks,
// each block's bytes checked before it changes; then everything freed. false
// when an allocation failed (said by its CHECK).
static bool malloc_random(void)
{
    struct ul_malloc_stats st;
    enum { SLOTS = 300 };
    static unsigned char *slot[SLOTS];
    static size_t size[SLOTS];
    struct malloc_churn c = {
        .alloc = ul_malloc,
        .resize = ul_realloc,
        .release = ul_free,
        .slot = slot,
        .size = size,
        .slots = SLOTS,
        .rounds = 200000,
        .seed = 88172645463325252ull,
        .small = 3000,
        .large_every = 64,
        .large_min = 60000,
        .large_span = 300000,
    };
    malloc_churn_run(&c);
    if (c.failed) {
        CHECK(!c.failed, "allocation of %zu bytes", c.failed);
        return false;
    }
    CHECK(c.overwritten == 0, "malloc: no block was overwritten by another");
    CHECK(c.misaligned == 0, "malloc: every block is 16-byte aligned");
    CHECK(c.lost == 0, "realloc: contents kept");
    malloc_churn_free(&c);
    ul_malloc_stats(&st);
    CHECK(st.allocations == 0 && st.bytes_in_use == 0, "malloc: all freed (%zu, %zu)",
          st.allocations, st.bytes_in_use);
    CHECK(st.bytes_mapped == mapped_now && st.bytes_mapped <= 256 * 1024,
          "malloc: one arena left mapped (%zu bytes, host sees %zu)", st.bytes_mapped, mapped_now);
    return true;
}

static void test_malloc(void)
{
    if (!malloc_random())
        return;
    // Coalescing: after freeing neighbours, one large block fits where they were.
    void *a = ul_malloc(1000), *b = ul_malloc(1000), *c = ul_malloc(1000);
    ul_free(a);
    ul_free(c);
    ul_free(b);
    void *d = ul_malloc(2900);
    CHECK(d == a, "malloc: freed neighbours merge (%p, %p)", d, a);
    // realloc in place into a free successor.
    void *e = ul_malloc(100);
    ul_free(ul_malloc(1)); // keep the layout simple: e is followed by free space
    void *f = ul_realloc(e, 200);
    CHECK(f == e, "realloc: grows in place");
    ul_free(f);
    ul_free(d);
    CHECK(ul_malloc((size_t)-1) == NULL, "malloc(SIZE_MAX) fails");
    CHECK(ul_calloc((size_t)1 << 62, 16) == NULL, "calloc overflow fails");
    unsigned char *z = ul_calloc(100, 10);
    bool zero = z != NULL;
    for (int i = 0; z && i < 1000; i++)
        zero &= z[i] == 0;
    CHECK(zero, "calloc zeroes");
    ul_free(z);
    CHECK(ul_realloc(NULL, 10) != NULL, "realloc(NULL) allocates"); // leaked on purpose: 10 bytes
}

static void test_strings(void)
{
    char buf[32];
    CHECK(strcmp(ul_strcpy(buf, "abc"), "abc") == 0, "strcpy");
    CHECK(strcmp(ul_strcat(buf, "def"), "abcdef") == 0, "strcat");
    CHECK(ul_strrchr("a/b/c", '/') && strcmp(ul_strrchr("a/b/c", '/'), "/c") == 0, "strrchr");
    CHECK(ul_strrchr("abc", 'x') == NULL && *ul_strrchr("abc", '\0') == '\0',
          "strrchr misses and NUL");
    CHECK(ul_strstr("hello world", "o w") && ul_strstr("abc", "") && !ul_strstr("abc", "abcd"),
          "strstr");
    memset(buf, 'x', sizeof buf);
    ul_strncpy(buf, "ab", 5);
    CHECK(memcmp(buf, "ab\0\0\0x", 6) == 0, "strncpy pads with NULs");
    CHECK(ul_strlcpy(buf, "truncated", 5) == 9 && strcmp(buf, "trun") == 0, "strlcpy truncates");
    char *d = ul_strdup("copy");
    CHECK(d && strcmp(d, "copy") == 0, "strdup");
    ul_free(d);
    CHECK(ul_isspace('\t') && !ul_isspace('x') && ul_toupper('q') == 'Q', "ctype");
}

static void test_numbers(void)
{
    char *end;
    CHECK(ul_strtoul("0x1F", &end, 0) == 31 && *end == 0, "strtoul hex");
    CHECK(ul_strtoul("017", NULL, 0) == 15, "strtoul octal");
    CHECK(ul_strtoul("  42abc", &end, 10) == 42 && strcmp(end, "abc") == 0, "strtoul stops");
    CHECK(ul_strtoul("xyz", &end, 10) == 0 && strcmp(end, "xyz") == 0, "strtoul no digits");
    CHECK(ul_strtoul("99999999999999999999999", NULL, 10) == UINT64_MAX, "strtoul saturates");
    CHECK(ul_strtol("-123", NULL, 10) == -123, "strtol negative");
    CHECK(ul_strtol("-9223372036854775808", NULL, 10) == INT64_MIN, "strtol minimum");
    CHECK(ul_strtol("9223372036854775808", NULL, 10) == INT64_MAX, "strtol saturates");
    CHECK(ul_atoi("  -7") == -7 && ul_atoi("1000") == 1000, "atoi");
}

// Every STATUS_ defined in kernel/lib/abi/status.h has its name in the table.
static void test_status_names(void)
{
    FILE *f = fopen("kernel/lib/abi/status.h", "r");
    CHECK(f != NULL, "open kernel/lib/abi/status.h (run from the top directory)");
    if (!f)
        return;
    char line[256], name[64];
    unsigned value;
    int found = 0, named = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "#define %63s ((NTSTATUS)0x%x)", name, &value) == 2 &&
            strncmp(name, "STATUS_", 7) == 0) {
            found++;
            const char *got = nt_status_name((NTSTATUS)value);
            if (strcmp(got, name) == 0)
                named++;
            else
                printf("# %s (0x%08X) is named %s\n", name, value, got);
        }
    fclose(f);
    CHECK(found > 10 && named == found, "nt_status_name knows all %d status codes of abi/status.h",
          found);
    CHECK(strcmp(nt_status_name((NTSTATUS)0xC0001234), "STATUS_0xC0001234") == 0, "unknown status");
}

static int type_line(const char *script, char *buf, size_t size)
{
    keys = script;
    echo_len = 0;
    int n = ul_readline("$ ", buf, size);
    echo[echo_len] = 0;
    return n;
}

// Keystrokes typed at the prompt, in order (the history carries over), and
// what readline must return: the count and the line (want NULL: only the count).
static const struct {
    const char *keys;
    size_t size; // the buffer's; 0 for all of it
    int n;
    const char *want;
    const char *name;
} typed[] = {
    {"ls -l\n", 0, 5, "ls -l", "a line"},
    {"abx\x7f"
     "c\n",
     0, 3, "abc", "DEL"},
    {"ab\bc\n", 0, 2, "ac", "backspace"},
    {"\x7f\x7fok\n", 0, 2, "ok", "backspace on an empty line"},
    {"junk\x15pwd\n", 0, 3, "pwd", "ctrl-U"},
    {"\x1b[A\n", 0, 3, "pwd", "up = last line"},
    {"\x1b[A\x1b[A\x1b[A\n", 0, 2, "ac", "up three times (repeats are stored once)"},
    {"new\x1b[A\x1b[B\n", 0, 3, "new", "down returns to the draft"},
    {"\x1b[1;5A\x1b[C\n", 0, 3, "new", "modified arrows and other sequences"},
    {"abcd\n", 5, 4, "abcd", "a line that just fits the buffer"},
    {"abcdefghij\n", 5, -2, "abcd", "a longer line: READLINE_TOO_LONG, its start kept"},
    {"abcdefghij\x15xy\n", 5, 2, "xy", "ctrl-U forgets a line too long"},
    {"x\x03", 0, 0, "", "ctrl-C abandons"},
    {"eof", 0, -1, NULL, "end of input"},
    {"\t\x01z\r", 0, 1, "z", "control characters ignored, CR ends"},
};

static void test_readline(void)
{
    char buf[64];
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        int n = type_line(typed[i].keys, buf, typed[i].size ? typed[i].size : sizeof buf);
        CHECK(n == typed[i].n && (!typed[i].want || strcmp(buf, typed[i].want) == 0),
              "readline: %s", typed[i].name);
        if (i == 0)
            CHECK(strcmp(echo, "$ ls -l\n") == 0, "readline: prompt and echo");
    }
}

// profile stat's integer arithmetic (statfmt.c), against values worked by hand.
static void test_statfmt(void)
{
    CHECK(stat_muldiv(1ull << 40, 1ull << 40, 1ull << 41) == 1ull << 39,
          "muldiv: 2^40 * 2^40 / 2^41 = 2^39 (the product needs 81 bits)");
    CHECK(stat_muldiv(UINT64_MAX, 3, 4) == UINT64_MAX / 4 * 3 + 2, "muldiv: (2^64-1)*3/4");
    CHECK(stat_muldiv(5, 5, 0) == UINT64_MAX && stat_muldiv(UINT64_MAX, 2, 1) == UINT64_MAX,
          "muldiv: divide by 0 and overflow saturate");
    // perf's example: 5 of 8 time slices on a counter = 62.5 %, count scaled by 8/5.
    CHECK(stat_scale(1000, 8000000, 5000000) == 1600,
          "scale: 1000 counted in 5/8 of the time = 1600");
    CHECK(stat_running_permille(5000000, 8000000) == 625, "running fraction 5/8 = 62.5%%");
    CHECK(stat_scale(1000, 8000, 8000) == 1000 && stat_running_permille(8000, 8000) == 1000,
          "scale: fully running is unscaled, 100.0%%");
    CHECK(stat_scale(1000, 8000, 0) == 0, "scale: never running counts 0 (<not counted>)");
    // CPUs utilized, task-clock / wall time to three decimals: rounded, not cut.
    CHECK(stat_ratio(1996780, 2003260, 1000) == 997, "CPUs utilized 1996.78 / 2003.26 = 0.997");
    CHECK(stat_ratio(13099, 13873, 1000) == 944, "CPUs utilized 13.099 / 13.873 = 0.944");
    CHECK(stat_ratio(2008, 210000, 1000) == 10, "CPUs utilized 2.008 / 210 ms = 0.010");
    CHECK(stat_ratio(3, 18, 10000) == 1667 && stat_ratio(7, 18, 10000) == 3889,
          "percentages rounded: 3/18 = 16.67 %%, 7/18 = 38.89 %%");
    CHECK(stat_ratio(1, 2, 1) == 1 && stat_ratio(5, 0, 1000) == 0, "halves round up; b = 0 is 0");
    CHECK(stat_running_permille(9999, 10000) == 999, "99.99 %% running is 99.9 %%, not 100");
    CHECK(stat_ratio_x100(850, 1000) == 85 && stat_ratio_x100(1, 0) == 0,
          "ratio: 850 insns / 1000 cycles = 0.85; a zero divisor gives 0");
    uint64_t same[3] = {7, 7, 7};
    CHECK(stat_rel_stderr_x100(same, 3) == 0, "stderr of equal runs is 0");
    // 90, 100, 110: mean 100, sample stddev 10, stderr 10/sqrt(3) = 5.7735 -> 5.77 %
    uint64_t three[3] = {90, 100, 110};
    CHECK(stat_mean(three, 3) == 100 && stat_rel_stderr_x100(three, 3) == 577,
          "90,100,110: mean 100, +- 5.77%% (got %llu)",
          (unsigned long long)stat_rel_stderr_x100(three, 3));
    uint64_t big[2] = {UINT64_MAX - 1, UINT64_MAX - 3};
    CHECK(stat_mean(big, 2) == UINT64_MAX - 2, "mean of two values near 2^64 does not overflow");
    CHECK(stat_isqrt(1ull << 62) == 1ull << 31 && stat_isqrt(99) == 9, "isqrt");
    char b[32];
    stat_fmt_fixed(b, sizeof b, 12345, 3);
    CHECK(strcmp(b, "12.345") == 0, "fixed 12345/10^3 = \"12.345\" (%s)", b);
    stat_fmt_fixed(b, sizeof b, 5, 2);
    CHECK(strcmp(b, "0.05") == 0, "fixed 5/10^2 = \"0.05\" (%s)", b);
}

int main(void)
{
    test_malloc();
    test_strings();
    test_numbers();
    test_status_names();
    test_readline();
    test_statfmt();
    test_pmctrace();
    printf("%d passed, %d failed\n", checks - failed, failed);
    return failed != 0;
}
