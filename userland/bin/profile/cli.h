// What the profile commands share (profile.c, lib/profrecord.c, lib/profstat.c):
// the source table, source names and numbers, the privilege.
#pragma once
#include <stdint.h>
#include "lib/abi.h"

// Every KPROFILE_SOURCE into out (ProfileSourceCount rows); *n gets how many.
// On failure prints why (prefixed "profile: ") and returns -1.
int prof_load_sources(struct sys_profile_source *out, uint32_t *n);
// Case-insensitive equality after dropping a "Profile" prefix from either.
int prof_same_source_name(const char *a, const char *b);
// A source by name ("Time", "profiletime") or number ("0", "0x13"); NULL if none.
const struct sys_profile_source *prof_find_source(const struct sys_profile_source *sources,
                                                  uint32_t n, const char *text);
// A whole decimal or 0x number; -1 for anything else.
int prof_parse_number(const char *text, uint64_t *out);
// Whether this process holds the system-profile privilege.
int prof_holds_privilege(void);
