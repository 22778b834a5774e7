// The review's defects, one section each ("defect N: ..."), each check
// written to fail on the code before its fix. The model behaviours they need
// (REF_XCLK at the crystal rate, per-MSR faults, the firmware freeze, ...)
// are pmu_model.c's.
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "pmc/counting.h"
#include "tests.h"

#define UIP 0x401000ull // where user-mode events retire

// ---- counting.c's per-CPU calls, run as code on a model CPU ----

struct count_call {
    bool in;
    struct pmc_count *c;
    uint64_t now;
};

static void count_call_fn(void *arg)
{
    struct count_call *k = arg;
    if (k->in)
        pmc_count_in(k->c, k->now);
    else
        pmc_count_out(k->c, k->now);
}

static void count_in(unsigned cpu, struct pmc_count *c, uint64_t now)
{
    struct count_call k = {true, c, now};
    model_on_cpu(cpu, count_call_fn, &k);
}

static void count_out(unsigned cpu, struct pmc_count *c, uint64_t now)
{
    struct count_call k = {false, c, now};
    model_on_cpu(cpu, count_call_fn, &k);
}

static int reserve_row(KPROFILE_SOURCE s, enum pmc_row_scope scope, NTSTATUS *st)
{
    unsigned row = 0;
    const char *why = NULL;
    *st = pmc_row_reserve(s, scope, &row, &why);
    return *st == STATUS_SUCCESS ? (int)row : -1;
}

static bool is_fixed(int row, unsigned number)
{
    return row >= 0 && pmc_hw[row].kind == PMC_COUNTER_FIXED && pmc_hw[row].number == number;
}

// ---- defect 1: reference cycles on a general counter ----

// Two process-scope counts of UnhaltedReferenceCycles: both on FIXED_CTR2,
// never one there and one on a GP counter's 3CH/01H (the crystal clock).
static void defect1_counting(void)
{
    boot(&MODEL_INTEL_V4);
    NTSTATUS s1, s2;
    int r1 = reserve_row(ProfileUnhaltedReferenceCycles, PMC_ROW_THREAD, &s1);
    int r2 = reserve_row(ProfileUnhaltedReferenceCycles, PMC_ROW_THREAD, &s2);
    tap_ok(is_fixed(r1, 2) && is_fixed(r2, 2),
           "defect 1: two THREAD reservations of reference cycles both use FIXED_CTR2 (rows %d, "
           "%d)",
           r1, r2);
    struct pmc_count a, b;
    uint64_t got[2] = {0, 0};
    struct pmc_count *cs[2] = {&a, &b};
    for (unsigned k = 0; k < 2 && r1 >= 0 && r2 >= 0; k++) {
        pmc_count_init(cs[k], ProfileUnhaltedReferenceCycles, (unsigned)(k ? r2 : r1), false);
        count_in(0, cs[k], 0);
        model_retire(0, EV_REF_CYCLES, 1080000, UIP, true);
        count_out(0, cs[k], 1000);
        got[k] = cs[k]->value;
    }
    tap_ok(got[0] == 1080000 && got[1] == 1080000,
           "defect 1: each count reads the 1,080,000 reference cycles retired (%llu, %llu): no "
           "count on the crystal clock",
           (unsigned long long)got[0], (unsigned long long)got[1]);
    const char *why = NULL;
    STATUS_EQ(HalStartProfileInterrupt(ProfileUnhaltedReferenceCycles, &why),
              STATUS_INSUFFICIENT_RESOURCES,
              "defect 1: sampling reference cycles while counting holds FIXED_CTR2: no counter");
    if (r1 >= 0)
        pmc_row_release((unsigned)r1);
    if (r2 >= 0)
        pmc_row_release((unsigned)r2);
    finish("defect 1 counting");
}

static void defect1_sampling(void)
{
    boot(&MODEL_INTEL_V4);
    set_interval(ProfileUnhaltedReferenceCycles, 100000);
    start_ok(ProfileUnhaltedReferenceCycles);
    start_ok(ProfileTotalCycles); // takes GP0: FIXED_CTR1 goes to the first core-cycles source
    model_retire(0, EV_REF_CYCLES, 1000000, UIP, true);
    tap_eq(samples.count[0][ProfileUnhaltedReferenceCycles], 10,
           "defect 1: 1,000,000 reference cycles at interval 100,000: 10 samples on FIXED_CTR2");
    stop_ok(ProfileTotalCycles);
    stop_ok(ProfileUnhaltedReferenceCycles);
    finish("defect 1 sampling");

    // No FIXED_CTR2 (version 1): reference cycles are not offered at all.
    boot(&MODEL_INTEL_V1);
    struct hal_profile_source_details d;
    HalQueryProfileSource(ProfileUnhaltedReferenceCycles, &d);
    tap_ok(!d.supported && d.reason && d.reason[0],
           "defect 1: version 1 (no FIXED_CTR2): reference cycles unsupported (\"%s\")",
           d.reason ? d.reason : "");
    finish("defect 1 v1");
}

void test_review(void)
{
    tap_section("defect 1: reference cycles only on FIXED_CTR2 (the TSC rate)");
    defect1_counting();
    defect1_sampling();
}
