// Event names (see events.h).
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "events.h"
#include "lib/abi/pmc.h"

static const char *const sw_names[PMC_SW_COUNT] = {
    "task-clock",   "context-switches",   "cpu-migrations", "page-faults",
    "system-calls", "profile-interrupts", "profile-ticks",
};

// perf's names for the hardware events, as KPROFILE_SOURCEs.
static const struct {
    const char *name;
    KPROFILE_SOURCE source;
} aliases[] = {
    {"cycles", ProfileTotalCycles},
    {"instructions", ProfileInstructionRetired},
    {"ref-cycles", ProfileUnhaltedReferenceCycles},
    {"cache-references", ProfileLLCReference},
    {"cache-misses", ProfileLLCMisses},
    {"branches", ProfileBranchInstructionRetired},
    {"branch-misses", ProfileBranchMispredictsRetired},
};

static int same_name(const char *a, const char *b)
{
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b))
        a++, b++;
    return *a == *b;
}

uint32_t event_pmc_flags(uint32_t ev)
{
    return (ev & EV_USER ? PMC_F_USER : 0) | (ev & EV_KERNEL ? PMC_F_KERNEL : 0);
}

int parse_modifiers(const char *mods, uint32_t *rings)
{
    *rings = 0;
    for (const char *m = mods; *m; m++) {
        uint32_t bit = *m == 'u' ? EV_USER : *m == 'k' ? EV_KERNEL : 0;
        if (!bit || (*rings & bit))
            return -1;
        *rings |= bit;
    }
    return *mods ? 0 : -1;
}

static int parse_name(const char *name, uint32_t *event)
{
    for (unsigned i = 0; i < PMC_SW_COUNT; i++)
        if (same_name(name, sw_names[i])) {
            *event = PMC_EVENT_SW(i);
            return 0;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (same_name(name, aliases[i].name)) {
            *event = aliases[i].source;
            return 0;
        }
    for (uint32_t i = 0; i < prof_nsources; i++)
        if (prof_same_source_name(name, prof_sources[i].name)) {
            *event = prof_sources[i].source;
            return 0;
        }
    char *end;
    unsigned long v = strtoul(name, &end, 0);
    if (*name && !*end && v < ProfileSourceCount) {
        *event = (uint32_t)v;
        return 0;
    }
    return -1;
}

// -1: an unknown name; -2: unknown modifiers.
int parse_event(const char *name, uint32_t *event)
{
    char base[64];
    const char *colon = strchr(name, ':');
    size_t len = colon ? (size_t)(colon - name) : strlen(name);
    uint32_t rings = 0;
    if (len >= sizeof base)
        return -1;
    memcpy(base, name, len);
    base[len] = '\0';
    if (parse_name(base, event) < 0)
        return -1;
    if (colon && parse_modifiers(colon + 1, &rings) < 0)
        return -2;
    *event |= rings;
    return 0;
}

static const char *base_name(uint32_t ev)
{
    if (PMC_EVENT_IS_SW(ev))
        return sw_names[ev - PMC_EVENT_SW(0)];
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (aliases[i].source == ev)
            return aliases[i].name;
    const struct sys_profile_source *s = prof_source_row(ev);
    return s ? s->name : "?";
}

// Names with modifiers are built in turn in a few buffers: enough for the
// names one printf shows.
const char *event_name(uint32_t ev)
{
    static char names[4][64];
    static unsigned next;
    const char *base = base_name(EV_BASE(ev));
    if (!(ev & EV_LEVELS))
        return base;
    char *out = names[next++ % 4];
    snprintf(out, sizeof names[0], "%s:%s%s", base, ev & EV_USER ? "u" : "",
             ev & EV_KERNEL ? "k" : "");
    return out;
}

const char *event_reason(uint32_t ev)
{
    ev = EV_BASE(ev);
    const struct sys_profile_source *s = PMC_EVENT_IS_SW(ev) ? NULL : prof_source_row(ev);
    if (s && !s->supported)
        return s->reason;
    return "";
}

int parse_event_list(char *list, uint32_t *events, unsigned *n, unsigned max, const char *usage)
{
    for (char *p = list; p && *p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*n >= max) {
            fprintf(stderr, "profile: at most %u events\n%s\n", max, usage);
            return -1;
        }
        int st = parse_event(p, &events[*n]);
        if (st == -2) {
            fprintf(stderr,
                    "profile: unknown modifier in '%s' (perf's: :u ring 3 only, :k ring 0 only, "
                    ":uk both)\n",
                    p);
            return -1;
        }
        if (st < 0) {
            fprintf(stderr,
                    "profile: unknown event '%s' (software: task-clock, context-switches, "
                    "cpu-migrations, page-faults, system-calls, profile-interrupts, "
                    "profile-ticks; hardware: cycles, instructions, ... or a name from "
                    "'profile sources')\n",
                    p);
            return -1;
        }
        for (unsigned i = 0; i < *n; i++)
            if (events[i] == events[*n]) {
                fprintf(stderr, "profile: event '%s' given twice\n", p);
                return -1;
            }
        (*n)++;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}
