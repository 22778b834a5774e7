// A tiny test harness for kernel code compiled for the host: KTAP-style lines,
// a non-zero exit status when any check failed.
#pragma once
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>

extern int harness_failures, harness_count;
extern jmp_buf harness_panic_jmp;
extern bool harness_expect_panic;
extern char harness_panic_msg[256];

#define CHECK(cond, ...) \
    do { \
        harness_count++; \
        bool ok_ = (cond); \
        if (!ok_) \
            harness_failures++; \
        printf("%sok %d ", ok_ ? "" : "not ", harness_count); \
        printf(__VA_ARGS__); \
        printf("\n"); \
        if (!ok_) \
            printf("# %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    } while (0)

// Run stmt and report whether it called panic() (which longjmps back here).
#define PANICS(stmt) \
    ({ \
        harness_expect_panic = true; \
        bool p_ = false; \
        if (setjmp(harness_panic_jmp) == 0) { \
            stmt; \
        } else { \
            p_ = true; \
        } \
        harness_expect_panic = false; \
        p_; \
    })

void test_kprintf(void);
void test_lapic(void);
void test_callchain(void);
void test_pmm(void);
void test_multiboot2(void);
void test_acpi(void);
void test_cmdline(void);
void test_profile_index(void);
void test_ring(void);
void test_object(void);
