// Event names (see events.h).
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "events.h"

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

int parse_event(const char *name, uint32_t *event)
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

const char *event_name(uint32_t ev)
{
    if (PMC_EVENT_IS_SW(ev))
        return sw_names[ev - PMC_EVENT_SW(0)];
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (aliases[i].source == ev)
            return aliases[i].name;
    const struct sys_profile_source *s = prof_source_row(ev);
    return s ? s->name : "?";
}

const char *event_reason(uint32_t ev)
{
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
        if (parse_event(p, &events[*n]) < 0) {
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
