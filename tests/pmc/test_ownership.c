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

// ---- a trace logger's counters are its own ----

// The values of the last two context-switch records cpu wrote.
static bool last_two_cswitch(unsigned cpu, const struct pmclog_cswitch **a,
                             const struct pmclog_cswitch **b)
{
    *a = *b = NULL;
    for (size_t off = 0; off + sizeof(struct pmclog_header) <= ke_host_log.nbytes;) {
        const struct pmclog_header *h = (const void *)(ke_host_log.bytes + off);
        if (h->size == 0)
            break;
        if (h->type == PMCLOG_CSWITCH && h->cpu == cpu) {
            *a = *b;
            *b = (const void *)h;
        }
        off += h->size;
    }
    return *a && *b;
}

// A context-switch logger of four branch counts holds the four GP counters.
// A counting PMC of the same event allocated after it must not share one of
// them, and the scheduler tick must not rotate the logger's counts out: two
// switch records around 777 branches differ by 777 in every value.
static void logger_rows(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "logger rows";
    uint32_t ev[4] = {ProfileBranchInstructions, ProfileBranchInstructions,
                      ProfileBranchInstructions, ProfileBranchInstructions};
    STATUS_EQ(cswitch_counters_start(&proc[0], ev, 4), STATUS_SUCCESS,
              "%s: a switch logger of 4 branch counts", n);
    NTSTATUS st;
    struct pmc *p = ke_host_allocate(&proc[0], ProfileBranchInstructions, PMC_MODE_SC, 0, &st);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
              "%s: a counting PMC of the event finds no counter: the logger's are its own", n);
    if (p)
        pmc_start(p, &proc[0]);
    ke_host_tick(0);
    ke_host_switch(0, &thr[1]);
    model_retire(0, EV_BRANCHES, 777, USER_IP, true);
    ke_host_switch(0, NULL);
    const struct pmclog_cswitch *a, *b;
    bool found = last_two_cswitch(0, &a, &b);
    uint64_t d[4] = {0};
    for (unsigned i = 0; found && i < 4; i++)
        d[i] = b->value[i] - a->value[i];
    tap_ok(d[0] == 777 && d[1] == 777 && d[2] == 777 && d[3] == 777,
           "%s: each of the 4 values moved by the 777 branches between two switches (%llu %llu "
           "%llu %llu)",
           n, (unsigned long long)d[0], (unsigned long long)d[1], (unsigned long long)d[2],
           (unsigned long long)d[3]);
    release(p);
    STATUS_EQ(cswitch_counters_stop(), STATUS_SUCCESS, "%s: stop the logger", n);
    tap_eq(pmc_rows_reserved, 0, "%s: its rows are free again", n);
    finish(n);
}

void test_ownership(void)
{
    released_row();
    logger_rows();
}
