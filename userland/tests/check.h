// The userland host tests' check: a KTAP-style line per check, counted
// (test_libc.c prints the totals and sets the exit status).
#pragma once
#include <stdio.h>
#include "ktapcheck.h"

// "ok N WHAT"; a failed one adds "# FILE:LINE: COND".
#define CHECK(cond, ...) \
    do { \
        if (!ktap_check(!!(cond), " ", __VA_ARGS__)) \
            printf("# %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    } while (0)

void test_pmctrace(void); // test_pmctrace.c
