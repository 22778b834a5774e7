// Who owns a hardware counter, and when: a count and a sampling period never
// share one; a trace logger's counters are its alone; an NMI that reads a
// count, or checks for overflows, never sees a counter half-updated or not yet
// loaded; a count attached to a process that runs now counts from the attach.
// Each behaviour is driven through the real kernel/pmc and kernel/profile
// sources over the PMU model, as the system calls and the scheduler reach it.
#include <stdio.h>
#include "arch/x86/cpu.h"
#include "ke_host.h"
#include "pmc/counting.h"
#include "profile/cswitch_counters.h"
#include "tests.h"

#define USER_IP 0x401000ull

static struct process proc[3];
static struct thread thr[3];

static uint64_t value_of(struct pmc *p)
{
    struct pmc_value v = {0};
    pmc_read(p, &v);
    return v.value;
}

static void release(struct pmc *p)
{
    if (p)
        object_unref(&p->obj);
}

static void setup(const struct model_config *cfg)
{
    ke_host_boot(cfg);
    cswitch_counters_init();
    for (unsigned i = 0; i < 3; i++)
        ke_host_process(&proc[i], &thr[i], 10 + i);
    ke_host_log.owner_pid = proc[0].pid; // proc[0] owns the log
}

// ---- a count's counter is never sampling's ----

// No counter of cpu both samples and counts.
static bool one_owner(unsigned cpu)
{
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (pmc_counter(cpu, i)->period && ((pmc_counting[cpu] >> i) & 1))
            return false;
    return true;
}

// Five system-scope branch counts on four GP counters: P4 shares P0's home
// row, so once P4 is loaded P0 counts on counter 1, P1's row. P1 is released
// without ever starting: its row must not go to sampling while P0 counts on
// its counter, and stopping P0 must not stop the sampler.
static void released_row(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "released row";
    struct pmc *p[5] = {0};
    bool ok = true;
    for (unsigned i = 0; i < 5; i++) {
        NTSTATUS st;
        p[i] = ke_host_allocate(&proc[0], ProfileBranchInstructions, PMC_MODE_SC, 0, &st);
        ok &= STATUS_EQ(st, STATUS_SUCCESS, "%s: system-scope branch count P%u", n, i);
    }
    if (ok) {
        tap_ok(p[4]->c.row == p[0]->c.row, "%s: P4 shares P0's row %u", n, p[0]->c.row);
        STATUS_EQ(pmc_start(p[4], &proc[0]), STATUS_SUCCESS, "%s: start P4", n);
        STATUS_EQ(pmc_start(p[0], &proc[0]), STATUS_SUCCESS, "%s: start P0", n);
        release(p[1]);
        p[1] = NULL;
        set_interval(ProfileBranchInstructions, 10000);
        start_ok(ProfileBranchInstructions);
        tap_ok(ALL_CPUS(one_owner(cpu)), "%s: no counter both samples and counts", n);
        model_retire(0, EV_BRANCHES, 1000, USER_IP, true);
        tap_eq(value_of(p[0]), 1000, "%s: P0 reads the 1,000 branches retired", n);
        tap_eq(value_of(p[4]), 1000, "%s: and so does P4", n);
        STATUS_EQ(pmc_stop(p[0]), STATUS_SUCCESS, "%s: stop P0", n);
        samples_clear();
        model_retire(0, EV_BRANCHES, 100000, USER_IP, true);
        tap_eq(samples.count[0][ProfileBranchInstructions], 10,
               "%s: sampling goes on after P0 stops (101,000 branches at 10,000: 10 samples)", n);
        stop_ok(ProfileBranchInstructions);
    }
    for (unsigned i = 0; i < 5; i++)
        release(p[i]);
    tap_eq(pmc_rows_reserved, 0, "%s: every row free once the PMCs are gone", n);
    finish(n);
}

void test_ownership(void)
{
    released_row();
}
