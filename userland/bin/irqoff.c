// irqoff [MICROSECONDS [ROUNDS]]: a known answer for the profiler's blind
// spot (docs/blind-spots.md). Each round is one SysIrqoffSpin: the kernel
// spins MICROSECONDS with interrupts off (inside a spin_lock_irqsave section,
// in irqoff_spin_locked), then as long with them on (irqoff_spin_open). The
// program prints the split the TSC measured: half and half. A profile of the
// kernel (`sudo profile run -k irqoff`) should show the same split; one
// sampled by a maskable interrupt cannot, because that interrupt waits for
// the unlock.
//
// The default rounds are shorter than ProfileTime's finest interval (122.1
// us), so a maskable tick that falls in a locked section is delayed to its
// unlock, not merged with the next one there (timer.c counts those as
// missed): each delayed sample is then one sample moved, none lost.
//
// irqoff longest [reset]: the kernel's own interrupts-off time instead, from
// its tracker (SysIrqoffLongest, core/irqoff.h): each CPU's longest section
// since boot, or since `reset` (which needs sudo), where it began, and the
// longest the kernel keeps on purpose (SysIrqoffSpin's), with its reason.
#include <statfmt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define DEFAULT_US     100
#define DEFAULT_ROUNDS 2000
#define MAX_ROUNDS     1000000

static const char usage[] = "usage: irqoff [MICROSECONDS [ROUNDS]] | irqoff longest [reset]";

// A whole decimal or 0x number into *out; 0 when the word is none.
static int number(const char *word, uint64_t *out)
{
    char *end;
    if (!word[0] || word[0] == '-')
        return 0;
    *out = strtoul(word, &end, 0);
    return *end == '\0';
}

static void print_ms(const char *what, uint64_t ticks, uint64_t hz)
{
    uint64_t us = hz ? ticks * 1000000 / hz : 0;
    printf("irqoff: %-18s %lu.%03lu ms, %lu TSC ticks\n", what, us / 1000, us % 1000, ticks);
}

// One line per CPU: its longest section against the bound, and the longest
// excused one when there is one.
static int longest(uint32_t flags)
{
    static struct sys_irqoff_longest rows[64];
    struct sys_clock clock = {0, 0, 0};
    uint32_t n = 0;
    SysClock(&clock);
    NTSTATUS s = SysIrqoffLongest(rows, 64, &n, flags);
    if (!NT_SUCCESS(s) || !clock.tsc_hz) {
        fprintf(stderr, "irqoff: SysIrqoffLongest: %s\n", nt_status_name(s));
        return 1;
    }
    printf("irqoff: the longest interrupts-off section of each CPU (bound %u us)\n",
           IRQOFF_SPIN_MAX_US);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t us = rows[i].tsc * 1000000 / clock.tsc_hz;
        printf("cpu%-3u %6lu.%03lu ms  %s (%lu sections)\n", i, us / 1000, us % 1000,
               rows[i].tsc ? rows[i].where : "-", rows[i].sections);
        uint64_t ex = rows[i].excused_tsc * 1000000 / clock.tsc_hz;
        if (rows[i].excused_tsc)
            printf("       %6lu.%03lu ms  %s, excused: %s\n", ex / 1000, ex % 1000,
                   rows[i].excused_where, rows[i].why);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "longest") == 0) {
        if (argc > 3 || (argc == 3 && strcmp(argv[2], "reset") != 0)) {
            fprintf(stderr, "irqoff: bad argument\n%s\n", usage);
            return 2;
        }
        return longest(argc == 3 ? IRQOFF_RESET : 0);
    }
    uint64_t us = DEFAULT_US, rounds = DEFAULT_ROUNDS;
    if (argc > 3 || (argc > 1 && !number(argv[1], &us)) ||
        (argc > 2 && !number(argv[2], &rounds))) {
        fprintf(stderr, "irqoff: bad argument\n%s\n", usage);
        return 2;
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "irqoff: ROUNDS must be 1..%u, not %lu\n%s\n", MAX_ROUNDS, rounds, usage);
        return 2;
    }
    struct sys_irqoff_split one, sum = {0, 0, 0};
    for (uint64_t i = 0; i < rounds; i++) {
        // The kernel checks the time: out of 1..IRQOFF_SPIN_MAX_US it says
        // STATUS_INVALID_PARAMETER.
        NTSTATUS s = SysIrqoffSpin(us, &one);
        if (!NT_SUCCESS(s)) {
            fprintf(stderr, "irqoff: SysIrqoffSpin(%lu us): %s (MICROSECONDS must be 1..%u)\n", us,
                    nt_status_name(s), IRQOFF_SPIN_MAX_US);
            return s == STATUS_INVALID_PARAMETER ? 2 : 1;
        }
        sum.locked_tsc += one.locked_tsc;
        sum.open_tsc += one.open_tsc;
        sum.tsc_hz = one.tsc_hz;
    }
    uint64_t total = sum.locked_tsc + sum.open_tsc;
    printf("irqoff: %lu rounds of %lu us with interrupts off, then %lu us on\n", rounds, us, us);
    print_ms("irqoff_spin_locked", sum.locked_tsc, sum.tsc_hz);
    print_ms("irqoff_spin_open", sum.open_tsc, sum.tsc_hz);
    uint64_t h = stat_ratio(sum.locked_tsc, total, 10000); // hundredths of a percent, rounded
    printf("irqoff: split %lu.%02lu%% off / %lu.%02lu%% on (expect 50/50)\n", h / 100, h % 100,
           (10000 - h) / 100, (10000 - h) % 100);
    return 0;
}
