// A tiny TAP harness: each check prints "ok N - name" or "not ok N - name"
// followed by "# " diagnostics; tap_finish prints the plan and "N passed, N failed".
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

bool tap_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool tap_eq(uint64_t got, uint64_t want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool tap_streq(const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool tap_contains(const char *haystack, const char *needle, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_section(const char *name); // a "# name" header line
int tap_finish(void);               // exit status: 0 when everything passed
void tap_set_stream(FILE *f);       // where the lines go (stdout until set)
unsigned tap_failures(void);        // failed checks so far
