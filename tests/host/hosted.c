// Host stand-ins for the few kernel facilities the tested files call, and main().
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "lib/kprintf.h"

int harness_failures, harness_count;
jmp_buf harness_panic_jmp;
bool harness_expect_panic;
char harness_panic_msg[256];

unsigned cpu_id(void)
{
    return 0;
}
uint64_t irq_save(void)
{
    return 0;
}
void irq_restore(uint64_t flags)
{
    (void)flags;
}

void panic(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(harness_panic_msg, sizeof harness_panic_msg, fmt, ap);
    va_end(ap);
    if (harness_expect_panic)
        longjmp(harness_panic_jmp, 1);
    fprintf(stderr, "unexpected panic: %s\n", harness_panic_msg);
    abort();
}

// The console of kernel/lib/kprintf.c's kprintf (built whole here): its
// text as "# kprintf: " lines on stdout.
static void kprintf_to_stdout(const char *s, size_t n)
{
    printf("# kprintf: %.*s", (int)n, s);
}

int main(void)
{
    kprintf_output = kprintf_to_stdout;
    printf("KTAP version 1\n");
    test_kprintf();
    test_pmm();
    test_multiboot2();
    test_acpi();
    test_cmdline();
    test_profile_index();
    test_ring();
    test_lapic();
    test_callchain();
    test_object();
    printf("# host unit tests: %d passed, %d failed\n", harness_count - harness_failures,
           harness_failures);
    return harness_failures ? 1 : 0;
}
