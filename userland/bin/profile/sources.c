// `profile sources`: every KPROFILE_SOURCE, its counter kind, its intervals
// (default, current, range) and whether this machine supports it.
#include <stdio.h>
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

int cmd_sources(int argc, char **argv)
{
    (void)argv;
    if (argc > 2)
        return usage_error(usage_sources, "%s", "sources takes no arguments");
    printf("%4s %-32s %-7s %10s %10s %10s %10s %-6s %s\n", "Src", "Name", "Kind", "Default",
           "Current", "Min", "Max", "Units", "Supported");
    for (uint32_t i = 0; i < prof_nsources; i++) {
        const struct sys_profile_source *s = &prof_sources[i];
        printf("%#4x %-32s %-7s %10lu %10lu %10lu %10lu %-6s %s%s\n", s->source, s->name,
               kind_name(s->kind), s->default_interval, s->interval, s->min_interval,
               s->max_interval, s->units, s->supported ? "yes" : "no: ", s->reason);
    }
    return 0;
}
