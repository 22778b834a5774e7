// The events `profile stat` counts and `profile record --cswitch` reads at
// each context switch (events.c): the software counters, perf's names of the
// hardware events, and every KPROFILE_SOURCE by name or number.
#pragma once
#include <stdint.h>

// perf's modifiers (perf-list(1), "EVENT MODIFIERS"): EVENT:u counts ring 3
// only, EVENT:k ring 0 only, EVENT:uk both (as no modifier). They ride in
// the event's value above its number.
#define EV_USER     0x10000000u // :u
#define EV_KERNEL   0x20000000u // :k
#define EV_LEVELS   (EV_USER | EV_KERNEL)
#define EV_BASE(ev) ((ev) & ~EV_LEVELS)
// The allocation flags of an event's modifiers (PMC_F_USER, PMC_F_KERNEL; 0: none).
uint32_t event_pmc_flags(uint32_t ev);
// MODS after an event's colon ("u", "k", "uk", "ku") as EV_* bits; -1 for anything else.
int parse_modifiers(const char *mods, uint32_t *rings);

// EVENT[:MODS]: a software name, a perf hardware name, a KPROFILE_SOURCE name (with
// or without "Profile") or number, and its modifiers. 0 on success, -1 for
// an unknown name, -2 for unknown modifiers.
int parse_event(const char *name, uint32_t *event);
// "EVENT,EVENT,...", appended to events[*n..max-1]; each checked and not
// repeated. 0, or -1 having said why (usage: the command's usage line).
int parse_event_list(char *list, uint32_t *events, unsigned *n, unsigned max, const char *usage);
// The name an event is shown by: the software or perf name, else the
// source's, and its modifiers (":u", ":k").
const char *event_name(uint32_t ev);
// Why a hardware event is not supported here; "" when it is, or is a software one.
const char *event_reason(uint32_t ev);
