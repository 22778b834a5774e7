// `profile sources`: every KPROFILE_SOURCE, its counter kind, its intervals
// (default, current, range), the counters it may use and whether this
// machine supports it; then how many of them can run at once.
#include <stdio.h>
#include <string.h>
#include "cli.h"

static const char *kind_name(uint32_t kind)
{
    static const char *const names[] = {
        [COUNTER_TIMER] = "timer",
        [COUNTER_FIXED] = "fixed",
        [COUNTER_GENERAL] = "general",
        [COUNTER_NONE] = "none",
    };
    return kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

// The set bits of mask as ranges after prefix: "gp0-3", "fx1", "gp0,2".
static void append_bits(char *out, size_t n, const char *prefix, uint32_t mask)
{
    size_t len = strlen(out);
    const char *sep = len ? "," : "";
    for (unsigned b = 0; b < 32 && len < n; b++) {
        if (!((mask >> b) & 1))
            continue;
        unsigned e = b;
        while (e + 1 < 32 && ((mask >> (e + 1)) & 1))
            e++;
        len += (size_t)(e > b ? snprintf(out + len, n - len, "%s%s%u-%u", sep, prefix, b, e)
                              : snprintf(out + len, n - len, "%s%s%u", sep, prefix, b));
        sep = ",", prefix = "";
        b = e;
    }
}

// The Counters column: the timer, the counters the source may use (general-
// purpose gpN, Intel fixed fxN) with "!" when it is confined to fewer than
// its kind's all, or "-" for none.
static void counters_text(const struct sys_profile_source *s, char *out, size_t n)
{
    out[0] = '\0';
    if (s->constraints & PROFILE_COUNTERS_TIMER) {
        snprintf(out, n, "timer");
        return;
    }
    append_bits(out, n, "gp", s->gp_counters);
    append_bits(out, n, "fx", s->fixed_counters);
    if (!out[0])
        snprintf(out, n, "-");
    else if (s->constraints & (PROFILE_COUNTERS_FIXED_ONLY | PROFILE_COUNTERS_GP_SUBSET))
        snprintf(out + strlen(out), n - strlen(out), "!");
}

// Kuhn's augmenting path: can source i get a counter, moving others along?
// Counter c (0-31 general-purpose, 32-63 fixed) is held by owner[c] (-1: free).
static int augment(const uint64_t *fits, unsigned i, int *owner, uint64_t *seen)
{
    for (unsigned c = 0; c < 64; c++) {
        if (!((fits[i] >> c) & 1) || ((*seen >> c) & 1))
            continue;
        *seen |= 1ull << c;
        if (owner[c] < 0 || augment(fits, (unsigned)owner[c], owner, seen)) {
            owner[c] = (int)i;
            return 1;
        }
    }
    return 0;
}

// How many hardware sources can be started together: the largest matching
// of the supported ones to distinct counters (each holds one on every CPU).
static unsigned most_together(unsigned *nhw)
{
    uint64_t fits[64];
    int owner[64];
    unsigned n = 0, together = 0;
    for (uint32_t i = 0; i < prof_nsources && n < 64; i++) {
        const struct sys_profile_source *s = &prof_sources[i];
        if (s->supported && !(s->constraints & PROFILE_COUNTERS_TIMER))
            fits[n++] = s->gp_counters | (uint64_t)s->fixed_counters << 32;
    }
    for (unsigned c = 0; c < 64; c++)
        owner[c] = -1;
    for (unsigned i = 0; i < n; i++) {
        uint64_t seen = 0;
        together += (unsigned)augment(fits, i, owner, &seen);
    }
    *nhw = n;
    return together;
}

// The line under the table: the counters, and what can run at once.
static void print_together(void)
{
    unsigned gp = 0, fx = 0, nhw;
    for (uint32_t i = 0; i < prof_nsources; i++) {
        gp = prof_sources[i].gp_total > gp ? prof_sources[i].gp_total : gp;
        fx = prof_sources[i].fixed_total > fx ? prof_sources[i].fixed_total : fx;
    }
    unsigned together = most_together(&nhw);
    if (gp + fx == 0) {
        printf("\nCounters: none (no PMU): ProfileTime alone runs, on the LAPIC timer; "
               "0 hardware sources can run\n");
        return;
    }
    printf("\nCounters: %u general-purpose (gp), %u fixed (fx); ! marks a source confined to "
           "some of them\n",
           gp, fx);
    printf("Together: at most %u of the %u supported hardware sources at once (one counter "
           "each on every CPU), and ProfileTime beside them on the LAPIC timer\n",
           together, nhw);
}

int cmd_sources(int argc, char **argv)
{
    (void)argv;
    if (argc > 2)
        return usage_error(usage_sources, "%s", "sources takes no arguments");
    printf("%4s %-32s %-7s %10s %10s %10s %10s %-6s %-12s %s\n", "Src", "Name", "Kind", "Default",
           "Current", "Min", "Max", "Units", "Counters", "Supported");
    for (uint32_t i = 0; i < prof_nsources; i++) {
        const struct sys_profile_source *s = &prof_sources[i];
        char counters[32];
        counters_text(s, counters, sizeof counters);
        printf("%#4x %-32s %-7s %10lu %10lu %10lu %10lu %-6s %-12s %s%s\n", s->source, s->name,
               kind_name(s->kind), s->default_interval, s->interval, s->min_interval,
               s->max_interval, s->units, counters, s->supported ? "yes" : "no: ", s->reason);
    }
    print_together();
    return 0;
}
