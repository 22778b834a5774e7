// prof_report_print: the kernrate-style report `profile run` and `profile
// kernel` print for one source. Integer arithmetic only (the formatter has no
// floating point): percentages are hundredths, rates are rounded down.
#include "kernrate.h"
#include "cli.h"
#include <sort.h>
#include <statfmt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_WIDTH 28
#define FEW_HITS   100 // fewer hits in a module than this: the report says so

uint64_t prof_range_hits(const struct prof_range *r)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < r->nbuckets; i++)
        n += r->buckets[i];
    return n;
}

// "12.34%" (two decimals, rounded) into buf.
static const char *percent(char *buf, size_t size, uint64_t part, uint64_t total)
{
    uint64_t hundredths = stat_ratio(part, total, 10000);
    snprintf(buf, size, "%lu.%02lu%%", hundredths / 100, hundredths % 100);
    return buf;
}

// Events per second = hits x events per hit / seconds, without overflow for
// any count this kernel can produce (hits x interval < 2^64 / 10^6).
static uint64_t events_per_second(uint64_t hits, uint64_t interval, uint64_t elapsed_ns)
{
    uint64_t events = hits * interval, us = elapsed_ns / 1000;
    if (us == 0)
        return 0;
    if (events <= UINT64_MAX / 1000000)
        return events * 1000000 / us;
    return events / us * 1000000;
}

// Whether some function starts inside a bucket rather than on its boundary:
// then a bucket's hits go to the function its first byte belongs to.
static int rounds_down(const struct prof_range *r)
{
    uint64_t mask = (1ull << r->shift) - 1;
    for (size_t i = 0; i < r->image->nfuncs; i++) {
        uint64_t a = r->image->funcs[i].addr;
        if (a >= r->base && a < r->base + r->size && ((a - r->base) & mask))
            return 1;
    }
    return 0;
}

struct func_row {
    struct tally hits; // at the function's address
    const char *name;
};

// Hits per function: each bucket goes to the function containing its first
// address; buckets before the first function go to a row of their own.
static void print_functions(const struct prof_report *rep, const struct prof_range *r,
                            uint64_t total)
{
    const struct elf_image *img = r->image;
    size_t nrows = img->nfuncs + 1;
    struct func_row *rows = calloc(nrows, sizeof *rows);
    if (!rows) {
        printf("(out of memory for the function table)\n");
        return;
    }
    for (size_t i = 0; i < img->nfuncs; i++)
        rows[i] = (struct func_row){{img->funcs[i].addr, 0}, img->funcs[i].name};
    rows[img->nfuncs] = (struct func_row){{r->base, 0}, "(no symbol)"};
    for (uint64_t b = 0; b < r->nbuckets; b++) {
        if (!r->buckets[b])
            continue;
        const struct elf_func *f = elf_func_at(img, r->base + (b << r->shift));
        rows[f ? (size_t)(f - img->funcs) : img->nfuncs].hits.count += r->buckets[b];
    }
    sort_array(rows, nrows, sizeof *rows, by_tally);

    printf("\n----- Zoomed module %s (Bucket size = %lu bytes, %s) -----\n", r->module,
           1ul << r->shift, rounds_down(r) ? "Rounding Down" : "buckets inside functions");
    printf("%-*s %10s %8s %10s\n", NAME_WIDTH, "Function", "Hits", "%Total", "Cumulative");
    uint64_t cumulative = 0;
    char p1[16], p2[16];
    for (size_t i = 0; i < nrows && i < rep->top && rows[i].hits.count; i++) {
        uint64_t hits = rows[i].hits.count;
        cumulative += hits;
        printf("%-*s %10lu %8s %10s\n", NAME_WIDTH, rows[i].name, hits,
               percent(p1, sizeof p1, hits, total), percent(p2, sizeof p2, cumulative, total));
    }
    free(rows);
}

// Under FEW_HITS in the first range (the program, or the kernel alone), the
// function table says little: one line says so and what would give more.
// When the other ranges (the kernel, -k) hold the run's samples, the time
// went there: the line says where, not to run longer.
static void print_few_hits(const struct prof_report *rep)
{
    if (rep->nranges == 0)
        return;
    const struct prof_range *r = &rep->ranges[0];
    const struct sys_profile_source *s = rep->source;
    uint64_t hits = prof_range_hits(r), out = r->stats.out_of_range, elsewhere = 0;
    if (hits >= FEW_HITS)
        return;
    for (size_t i = 1; i < rep->nranges; i++)
        elsewhere += prof_range_hits(&rep->ranges[i]);
    if (elsewhere >= FEW_HITS) {
        printf("Few hits    only %lu in %s, %lu in %s%s on its behalf: see the tables below\n",
               hits, r->module, elsewhere, rep->ranges[1].module,
               rep->nranges > 2 ? " and the others" : "");
        return;
    }
    printf("Few hits    only %lu in %s (under %u): try a longer run", hits, r->module, FEW_HITS);
    if (rep->interval > s->min_interval)
        printf(", a finer interval (sudo ... -i %lu)", s->min_interval);
    if (rep->nranges == 1 && out > hits)
        printf(", or -k for the kernel's share (%lu samples out of range)", out);
    printf("\n");
}

static void print_header(const struct prof_report *rep, uint64_t total)
{
    const struct sys_profile_source *s = rep->source;
    printf("\n===== profile: %s =====\n", rep->title);
    printf("Source      %s (%u)\n", s->name, s->source);
    if (s->source == ProfileTime)
        printf("Interval    %lu x 100ns (%lu.%lu us), %lu events per hit\n", rep->interval,
               rep->interval / 10, rep->interval % 10, rep->interval);
    else
        printf("Interval    %lu %s, %lu events per hit\n", rep->interval, s->units, rep->interval);
    printf("Elapsed     %lu.%03lu s\n", rep->elapsed_ns / 1000000000,
           rep->elapsed_ns / 1000000 % 1000);
    printf("Processors  %u\n", rep->ncpus);
    printf("Total hits  %lu\n", total);
    if (rep->note)
        printf("Note        %s\n", rep->note);
    print_few_hits(rep);
}

static void print_modules(const struct prof_report *rep, uint64_t total)
{
    char p[16];
    printf("\n%-*s %10s %8s %14s\n", NAME_WIDTH, "Module", "Hits", "%Total", "Events/Sec");
    for (size_t i = 0; i < rep->nranges; i++) {
        const struct prof_range *r = &rep->ranges[i];
        uint64_t hits = prof_range_hits(r);
        printf("%-*s %10lu %8s %14lu\n", NAME_WIDTH, r->module, hits,
               percent(p, sizeof p, hits, total),
               events_per_second(hits, rep->interval, rep->elapsed_ns));
    }
}

static void print_losses(const struct prof_report *rep)
{
    printf("\n");
    for (size_t i = 0; i < rep->nranges; i++) {
        const struct sys_profile_stats *st = &rep->ranges[i].stats;
        printf("%s: %lu samples delivered, %lu in range, %lu out of range, %lu throttled\n",
               rep->ranges[i].module, st->delivered, st->in_range, st->out_of_range, st->throttled);
    }
    if (rep->periods)
        printf("%s: %lu periods on %u CPUs, %lu missed (the CPU came back a period or more "
               "late: one tick, not a burst)\n",
               rep->source->name, rep->periods, rep->ncpus, rep->missed);
    // Written as it is, not formatted: no buffer's size can cut it short.
    if (rep->approximate_time)
        fputs(note_approximate_time, stdout);
}

void prof_report_print(const struct prof_report *rep)
{
    uint64_t total = 0;
    for (size_t i = 0; i < rep->nranges; i++)
        total += prof_range_hits(&rep->ranges[i]);
    print_header(rep, total);
    print_modules(rep, total);
    for (size_t i = 0; i < rep->nranges; i++)
        print_functions(rep, &rep->ranges[i], total);
    print_losses(rep);
}
