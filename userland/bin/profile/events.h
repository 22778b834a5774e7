// The events `profile stat` counts and `profile record --cswitch` reads at
// each context switch (events.c): the software counters, perf's names of the
// hardware events, and every KPROFILE_SOURCE by name or number.
#pragma once
#include <stdint.h>

// EVENT: a software name, a perf hardware name, a KPROFILE_SOURCE name (with
// or without "Profile") or number. 0 on success.
int parse_event(const char *name, uint32_t *event);
// "EVENT,EVENT,...", appended to events[*n..max-1]; each checked and not
// repeated. 0, or -1 having said why (usage: the command's usage line).
int parse_event_list(char *list, uint32_t *events, unsigned *n, unsigned max, const char *usage);
// The name an event is shown by: the software or perf name, else the source's.
const char *event_name(uint32_t ev);
// Why a hardware event is not supported here; "" when it is, or is a software one.
const char *event_reason(uint32_t ev);
