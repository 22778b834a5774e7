// Shared helpers for the hosted pmc tests.
#pragma once
#include "lib/abi/profile.h"
#include "pmc/hal/counters.h"
#include "pmc/hal/detect.h"
#include "pmc/hal/hal.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmu.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/trace.h"
#include "pmu_model.h"
#include "tap.h"

// NTSTATUS compared as the 32-bit value it is.
#define STATUS_EQ(got, want, ...) tap_eq((uint32_t)(got), (uint32_t)(want), __VA_ARGS__)

// True when cond, an expression of `cpu`, holds on every model CPU.
#define ALL_CPUS(cond) \
    ({ \
        bool all_ = true; \
        for (unsigned cpu = 0; cpu < model_config()->ncpus; cpu++) \
            all_ = all_ && (cond); \
        all_; \
    })

// What the profile callback has seen since the last boot() or samples_clear().
struct samples {
    uint64_t count[MODEL_MAX_CPUS][ProfileSourceCount];
    uint64_t total, user;
    uint64_t last_ip;
    KPROFILE_SOURCE last_source;
    unsigned last_cpu;
};
extern struct samples samples;
void samples_clear(void);

// Reset the model to cfg, run pmc_init, register the sample callback.
void boot(const struct model_config *cfg);
// base under the name "BASE-suffix", written into name (the copy points at it).
struct model_config model_variant(const struct model_config *base, const char *suffix,
                                  char name[40]);
// pmc_shutdown, then check nothing leaked and no #GP happened.
void finish(const char *what);

// HalStartProfileInterrupt/Stop expecting success; the check names the source.
bool start_ok(KPROFILE_SOURCE s);
bool stop_ok(KPROFILE_SOURCE s);
bool supported(KPROFILE_SOURCE s);
uint64_t set_interval(KPROFILE_SOURCE s, uint64_t interval); // returns the actual interval
const char *src(KPROFILE_SOURCE s);
// The last line the kernel printed (no newline).
const char *console_last_line(void);

void test_source(void);
void test_detect(void);
void test_emon(void);
void test_amd(void);
void test_pmi(void);
void test_hal(void);
void test_admin(void);
void test_time(void);
void test_trace(void);
void test_hyper(void);
void test_counting(void);
void test_pmc_object(void);
void test_review(void);
void test_interleave(void);
void test_levels(void);
void test_ownership(void);
