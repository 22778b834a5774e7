// The userland host tests' check: a KTAP-style line per check, counted
// (test_libc.c prints the totals and sets the exit status).
#pragma once
#include <stdbool.h>
#include <stdio.h>

extern int checks, failed;

#define CHECK(cond, ...) \
    do { \
        checks++; \
        bool ok_ = (cond); \
        printf("%sok %d ", ok_ ? "" : "not ", checks); \
        printf(__VA_ARGS__); \
        printf("\n"); \
        if (!ok_) { \
            failed++; \
            printf("# %s:%d: %s\n", __FILE__, __LINE__, #cond); \
        } \
    } while (0)

void test_pmctrace(void); // test_pmctrace.c
