// Who owns a hardware counter, and when: a count and a sampling period never
// share one; a trace logger's counters are its alone; an NMI that reads a
// count, or checks for overflows, never sees a counter half-updated or not yet
// loaded, and never re-arms one being stopped; a logger record written after
// an NMI's in the log holds no older values; a count attached to a process
// that runs now counts from the attach.
// Each behaviour is driven through the real kernel/pmc/hal and kernel/pmc/hwpmc
// sources over the PMU model, as the system calls and the scheduler reach it.
#include <stdio.h>
#include "ke_host.h"
#include "pmc/hal/counts.h"
#include "pmc/hal/pmu_regs.h"
#include "pmc/hwpmc/loggers.h"
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
    pmc_loggers_init();
    for (unsigned i = 0; i < 3; i++)
        ke_host_process(&proc[i], &thr[i], 10 + i);
    ke_host_log.owner_pid = proc[0].pid; // proc[0] owns the log
}

// ---- a count's counter is never sampling's ----

// No counter of cpu both samples and counts.
static bool one_owner(unsigned cpu)
{
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (pmc_counter(cpu, i)->period && ((pmc_counters_loaded[cpu] >> i) & 1))
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
        unsigned r1 = p[1]->c.row;
        tap_ok(ALL_CPUS(p[0]->c.cpu_hw[cpu].counter == (int)r1),
               "%s: P0 counts on P1's row %u on every CPU", n, r1);
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
    STATUS_EQ(pmc_logger_cswitch_start(&proc[0], ev, 4), STATUS_SUCCESS,
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
    STATUS_EQ(pmc_logger_cswitch_stop(), STATUS_SUCCESS, "%s: stop the logger", n);
    tap_eq(pmc_rows_reserved, 0, "%s: its rows are free again", n);
    finish(n);
}

// A system-scope branch count P0 runs; a switch logger of three branch counts
// takes the other three GP counters, so P1 shares P0's row and waits for its
// turn. Once the logger stops, three counters are free again and P2 reserves
// one of them: three counts on four counters need no multiplexing, so P1,
// loaded wherever a counter of its scope is free, must not keep P2 waiting.
// P2 is loaded from its start on every CPU and counts the 1,000 branches.
static void freed_rows_used(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "freed rows used";
    NTSTATUS st[3];
    struct pmc *p[3] = {0};
    p[0] = ke_host_allocate(&proc[0], ProfileBranchInstructions, PMC_MODE_SC, 0, &st[0]);
    bool ok = STATUS_EQ(st[0], STATUS_SUCCESS, "%s: a system-scope branch count P0", n);
    ok = ok && STATUS_EQ(pmc_start(p[0], &proc[0]), STATUS_SUCCESS, "%s: start P0", n);
    uint32_t ev[3] = {ProfileBranchInstructions, ProfileBranchInstructions,
                      ProfileBranchInstructions};
    ok = ok && STATUS_EQ(pmc_logger_cswitch_start(&proc[0], ev, 3), STATUS_SUCCESS,
                         "%s: a switch logger of 3 branch counts", n);
    p[1] = ke_host_allocate(&proc[0], ProfileBranchInstructions, PMC_MODE_SC, 0, &st[1]);
    ok = ok && STATUS_EQ(st[1], STATUS_SUCCESS, "%s: P1, on P0's row", n);
    ok = ok && STATUS_EQ(pmc_start(p[1], &proc[0]), STATUS_SUCCESS, "%s: start P1", n);
    ok = ok && STATUS_EQ(pmc_logger_cswitch_stop(), STATUS_SUCCESS, "%s: stop the logger", n);
    p[2] = ke_host_allocate(&proc[0], ProfileBranchInstructions, PMC_MODE_SC, 0, &st[2]);
    ok = ok && STATUS_EQ(st[2], STATUS_SUCCESS, "%s: P2, on a row the logger freed", n);
    ok = ok && STATUS_EQ(pmc_start(p[2], &proc[0]), STATUS_SUCCESS, "%s: start P2", n);
    if (ok) {
        unsigned r2 = p[2]->c.row;
        tap_ok(r2 != p[0]->c.row && p[1]->c.row == p[0]->c.row,
               "%s: P2 has a row of its own (%u), P1 shares P0's (%u)", n, r2, p[0]->c.row);
        tap_ok(ALL_CPUS(p[2]->c.cpu_hw[cpu].counter >= 0), "%s: P2 is loaded on every CPU", n);
        model_retire(0, EV_BRANCHES, 1000, USER_IP, true);
        struct pmc_value v = {0};
        pmc_read(p[2], &v);
        tap_eq(v.value, 1000, "%s: P2 reads the 1,000 branches retired", n);
        tap_ok(v.time_running == v.time_enabled,
               "%s: and ran all the time it was enabled (%llu of %llu ns)", n,
               (unsigned long long)v.time_running, (unsigned long long)v.time_enabled);
    }
    for (unsigned i = 0; i < 3; i++)
        release(p[i]);
    tap_eq(pmc_rows_reserved, 0, "%s: every row free once the PMCs are gone", n);
    finish(n);
}

// ---- an NMI reads a count the code it interrupted is updating ----

static uint32_t nmi_msr;
static unsigned nmis;

// The NMI of a sample delivered as NMI (pmi=nmi): its own path retires a few
// branches, and the trace logger's profile-interrupt hook reads the count.
static void nmi_reads_count(unsigned cpu, uint32_t msr, bool write)
{
    if (write || msr != nmi_msr || nmis)
        return;
    nmis++;
    model_retire(cpu, EV_BRANCHES, 5, MODEL_HANDLER_IP, false);
    pmc_hook_fire(HOOK_PROFILE, 0, ProfileBranchInstructions);
}

// The CSwitch record cpu wrote last, or NULL.
static const struct pmclog_hook *last_hook(unsigned cpu, uint16_t id)
{
    const struct pmclog_hook *last = NULL;
    for (size_t off = 0; off + sizeof(struct pmclog_header) <= ke_host_log.nbytes;) {
        const struct pmclog_header *h = (const void *)(ke_host_log.bytes + off);
        if (h->size == 0)
            break;
        const struct pmclog_hook *r = (const void *)h;
        if (h->type == PMCLOG_HOOK && h->cpu == cpu && r->hook_id == id)
            last = r;
        off += h->size;
    }
    return last;
}

static int counting_counter(unsigned cpu)
{
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if ((pmc_counters_loaded[cpu] >> i) & 1)
            return (int)i;
    return -1;
}

// A logger of branches on the CSwitch and SampledProfile hooks. The switch's
// record reads the count (rdmsr of its counter); an NMI right after that
// rdmsr, as a hypervisor injects one after an intercepted access, reads it too.
static void nmi_during_read(const struct model_config *cfg)
{
    pmc_pmi_as_nmi = true;
    setup(cfg);
    char n[64];
    snprintf(n, sizeof n, "%s, NMI in a count's read", cfg->name);
    TRACEHANDLE h = 0;
    uint32_t ev[1] = {ProfileBranchInstructions};
    uint32_t hooks[2] = {ETW_HOOK_CSWITCH, ETW_HOOK_SAMPLED_PROFILE};
    bool ok = STATUS_EQ(pmc_logger_create(&proc[0], &h), STATUS_SUCCESS, "%s: a logger", n);
    ok = ok && STATUS_EQ(pmc_logger_set_counters(&proc[0], h, ev, 1), STATUS_SUCCESS,
                         "%s: counting branches", n);
    ok = ok && STATUS_EQ(pmc_logger_set_hooks(&proc[0], h, hooks, 2), STATUS_SUCCESS,
                         "%s: at CSwitch and SampledProfile", n);
    int i = counting_counter(0);
    if (ok && i >= 0) {
        nmi_msr = pmc_hw[i].ctr_msr;
        nmis = 0;
        model_retire(0, EV_BRANCHES, 1000, USER_IP, true);
        model_nmi_hook = nmi_reads_count;
        ke_host_switch(0, &thr[1]);
        model_nmi_hook = NULL;
        const struct pmclog_hook *p = last_hook(0, ETW_HOOK_SAMPLED_PROFILE);
        const struct pmclog_hook *c = last_hook(0, ETW_HOOK_CSWITCH);
        tap_ok(nmis == 1 && p, "%s: the NMI came, and wrote its record", n);
        tap_eq(p ? p->value[0] : 0, 1005, "%s: the NMI's record: 1,000 + its own 5", n);
        tap_eq(c ? c->value[0] : 0, 1005, "%s: the interrupted switch's record: the same", n);
        model_retire(0, EV_BRANCHES, 20, USER_IP, true);
        ke_host_switch(0, NULL);
        c = last_hook(0, ETW_HOOK_CSWITCH);
        tap_eq(c ? c->value[0] : 0, 1025, "%s: the next switch's: 1,005 + 20, no jump", n);
    }
    STATUS_EQ(pmc_logger_close(&proc[0], h), STATUS_SUCCESS, "%s: close the logger", n);
    finish(n);
    pmc_pmi_as_nmi = false;
}

// ---- records in log order: no value goes backwards ----

static uint32_t first_read_msr;
static unsigned record_nmis;

// The counting counter whose MSR is msr, on cpu.
static bool counting_msr(unsigned cpu, uint32_t msr)
{
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (((pmc_counters_loaded[cpu] >> i) & 1) && pmc_hw[i].ctr_msr == msr)
            return true;
    return false;
}

// An NMI right after the switch record's read of its second counter: its
// path retires 40 instructions, writes its SampledProfile record, and
// retires 40 more before it returns.
static void nmi_writes_record(unsigned cpu, uint32_t msr, bool write)
{
    if (write || record_nmis || !counting_msr(cpu, msr))
        return;
    if (first_read_msr == 0)
        first_read_msr = msr;
    if (msr == first_read_msr)
        return;
    record_nmis++;
    model_retire(cpu, EV_INSTRUCTIONS, 40, MODEL_HANDLER_IP, false);
    pmc_hook_fire(HOOK_PROFILE, 0, ProfileTotalIssues);
    model_retire(cpu, EV_INSTRUCTIONS, 40, MODEL_HANDLER_IP, false);
}

// Each hook record of cpu holds, counter by counter, at least the values of
// the one before it in the log.
static bool hook_records_monotonic(unsigned cpu, unsigned *records)
{
    const struct pmclog_hook *prev = NULL;
    bool ok = true;
    *records = 0;
    for (size_t off = 0; off + sizeof(struct pmclog_header) <= ke_host_log.nbytes;) {
        const struct pmclog_header *h = (const void *)(ke_host_log.bytes + off);
        if (h->size == 0)
            break;
        const struct pmclog_hook *r = (const void *)h;
        if (h->type == PMCLOG_HOOK && h->cpu == cpu) {
            for (unsigned i = 0; prev && i < r->ncounters; i++)
                ok &= r->value[i] >= prev->value[i];
            prev = r;
            ++*records;
        }
        off += h->size;
    }
    return ok;
}

// A logger of instructions and branches at CSwitch and SampledProfile. An
// NMI that writes a SampledProfile record lands while the switch's record
// is being read: the switch's record follows the NMI's in the log, so it
// must hold values no older than the NMI's.
static void nmi_record_order(const struct model_config *cfg)
{
    setup(cfg);
    char n[64];
    snprintf(n, sizeof n, "%s, NMI record in a record's read", cfg->name);
    TRACEHANDLE h = 0;
    uint32_t ev[2] = {ProfileTotalIssues, ProfileBranchInstructions};
    uint32_t hooks[2] = {ETW_HOOK_CSWITCH, ETW_HOOK_SAMPLED_PROFILE};
    bool ok = STATUS_EQ(pmc_logger_create(&proc[0], &h), STATUS_SUCCESS, "%s: a logger", n);
    ok = ok && STATUS_EQ(pmc_logger_set_counters(&proc[0], h, ev, 2), STATUS_SUCCESS,
                         "%s: counting instructions and branches", n);
    ok = ok && STATUS_EQ(pmc_logger_set_hooks(&proc[0], h, hooks, 2), STATUS_SUCCESS,
                         "%s: at CSwitch and SampledProfile", n);
    if (ok) {
        first_read_msr = 0;
        record_nmis = 0;
        model_retire(0, EV_INSTRUCTIONS, 1000, USER_IP, true);
        model_nmi_hook = nmi_writes_record;
        ke_host_switch(0, &thr[1]);
        model_nmi_hook = NULL;
        const struct pmclog_hook *p = last_hook(0, ETW_HOOK_SAMPLED_PROFILE);
        const struct pmclog_hook *c = last_hook(0, ETW_HOOK_CSWITCH);
        tap_ok(record_nmis == 1 && p && c, "%s: the NMI came, and both records were written", n);
        tap_eq(p ? p->value[0] : 0, 1040, "%s: the NMI's record: 1,000 + its path's 40", n);
        tap_eq(c ? c->value[0] : 0, 1080, "%s: the switch's, after it in the log: + the other 40",
               n);
        unsigned records;
        bool monotonic = hook_records_monotonic(0, &records);
        tap_ok(monotonic && records == 2, "%s: in log order, no value goes backwards (%u records)",
               n, records);
        ke_host_switch(0, NULL);
    }
    STATUS_EQ(pmc_logger_close(&proc[0], h), STATUS_SUCCESS, "%s: close the logger", n);
    finish(n);
}

// ---- an NMI never samples a counter not yet loaded ----

static unsigned overflow_nmis;

// While ProfileBranchInstructions is being enabled on cpu (its counter
// claimed, not yet written), another source's counter overflows: its PMI,
// an NMI, lands between two of the enable's accesses.
static void other_overflows(unsigned cpu, uint32_t msr, bool write)
{
    (void)msr;
    (void)write;
    if (overflow_nmis || pmc_counter_find(cpu, ProfileBranchInstructions) < 0)
        return;
    overflow_nmis++;
    model_retire(cpu, EV_INSTRUCTIONS, 1000, USER_IP, true);
}

// PMUs that find an overflow by the counter's top bit (AMD before PerfMonV2,
// Intel version 1): the new counter still holds whatever it held before.
static void nmi_before_load(const struct model_config *cfg)
{
    pmc_pmi_as_nmi = true;
    boot(cfg);
    char n[64];
    snprintf(n, sizeof n, "%s, NMI during an enable", cfg->name);
    set_interval(ProfileTotalIssues, 1000);
    start_ok(ProfileTotalIssues);
    overflow_nmis = 0;
    model_nmi_hook = other_overflows;
    start_ok(ProfileBranchInstructions);
    model_nmi_hook = NULL;
    struct pmc_pmi_stats st;
    pmc_pmi_stats(0, &st);
    tap_eq(overflow_nmis, 1, "%s: the overflow NMI came", n);
    tap_eq(samples.count[0][ProfileTotalIssues], 1, "%s: one sample of the source that overflowed",
           n);
    tap_eq(samples.count[0][ProfileBranchInstructions], 0,
           "%s: none of the source being enabled, which counted nothing", n);
    tap_eq(st.lost, 0, "%s: and no lost periods", n);
    stop_ok(ProfileBranchInstructions);
    stop_ok(ProfileTotalIssues);
    finish(n);
    pmc_pmi_as_nmi = false;
}

// ---- an NMI during a stop never re-arms the counter ----

static unsigned stop_nmis;
static uint32_t stop_msr;

// The PMI latched by the counter's overflow, an NMI, lands right after the
// wrmsr that halts the counter (as a hypervisor injects a pending NMI on the
// VM entry after an intercepted wrmsr).
static void pmi_after_halt(unsigned cpu, uint32_t msr, bool write)
{
    if (!write || msr != stop_msr || stop_nmis || !model_pmi_pending(cpu))
        return;
    stop_nmis++;
    model_deliver_pending(cpu, USER_IP);
}

// The counters of cpu that are enabled with their overflow interrupt.
static unsigned armed_counters(unsigned cpu)
{
    unsigned n = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        n += pmc_hw[i].kind == PMC_COUNTER_GENERAL &&
             (model_gp_ctl(cpu, pmc_hw[i].number) & (PERFEVTSEL_EN | PERFEVTSEL_INT)) != 0;
    return n;
}

// Branches sampled every 1,000 on a PMU whose PMI arrives late (a
// hypervisor's, or NMI delivery): 1,554 branches overflow the counter and
// latch a PMI, which arrives during HalStopProfileInterrupt, after the
// wrmsr that halts the counter.
static void nmi_during_stop(const struct model_config *base)
{
    struct model_config cfg = *base;
    cfg.late_pmi = true;
    pmc_pmi_as_nmi = true;
    boot(&cfg);
    char n[64];
    snprintf(n, sizeof n, "%s, PMI during a stop", cfg.name);
    set_interval(ProfileBranchInstructions, 1000);
    start_ok(ProfileBranchInstructions);
    int i = pmc_counter_find(1, ProfileBranchInstructions);
    stop_nmis = 0;
    if (i >= 0) {
        stop_msr = pmc_hw[i].ctl_msr;
        model_retire(1, EV_BRANCHES, 1554, USER_IP, true);
        tap_ok(model_pmi_pending(1), "%s: the overflow latched a PMI on cpu 1", n);
        model_nmi_hook = pmi_after_halt;
        stop_ok(ProfileBranchInstructions);
        model_nmi_hook = NULL;
    }
    tap_eq(stop_nmis, 1, "%s: the PMI came right after the halting wrmsr", n);
    tap_eq(armed_counters(1), 0, "%s: no counter left enabled on cpu 1", n);
    samples_clear();
    uint64_t pmis = model_pmis_delivered(1);
    model_retire(1, EV_BRANCHES, 5000, USER_IP, true);
    model_deliver_pending(1, USER_IP);
    tap_eq(model_pmis_delivered(1) - pmis, 0, "%s: no PMI after the stop (5,000 more branches)", n);
    tap_eq(samples.count[1][ProfileBranchInstructions], 0, "%s: and no sample", n);
    finish(n);
    pmc_pmi_as_nmi = false;
}

// ---- attached while it runs: counted from the attach ----

// proc[1] runs on cpu0, its child proc[2] on cpu1, and neither switches
// again (the only runnable thread on its CPU is not switched). Attached to
// PMCs already started, they count from the attach.
static void attach_running(const struct model_config *cfg)
{
    setup(cfg);
    char n[64];
    snprintf(n, sizeof n, "%s, attach while running", cfg->name);
    proc[2].parent = proc[1].pid;
    ke_host_switch(0, &thr[1]);
    ke_host_switch(1, &thr[2]);
    NTSTATUS s1, s2;
    struct pmc *p = ke_host_allocate(&proc[0], ProfileBranchInstructions, PMC_MODE_TC, 0, &s1);
    struct pmc *d =
        ke_host_allocate(&proc[0], ProfileBranchInstructions, PMC_MODE_TC, PMC_F_DESCENDANTS, &s2);
    bool ok = STATUS_EQ(s1, STATUS_SUCCESS, "%s: a process-scope branch count", n);
    ok &= STATUS_EQ(s2, STATUS_SUCCESS, "%s: and one with PMC_F_DESCENDANTS", n);
    if (ok) {
        STATUS_EQ(pmc_start(p, &proc[0]), STATUS_SUCCESS, "%s: start (its owner attached)", n);
        STATUS_EQ(pmc_start(d, &proc[0]), STATUS_SUCCESS, "%s: start the other", n);
        STATUS_EQ(pmc_attach(p, &proc[0], &proc[1]), STATUS_SUCCESS, "%s: attach the parent", n);
        STATUS_EQ(pmc_attach(d, &proc[0], &proc[1]), STATUS_SUCCESS,
                  "%s: attach it with its descendants", n);
        model_retire(0, EV_BRANCHES, 500, USER_IP, true);
        model_retire(1, EV_BRANCHES, 300, USER_IP, true);
        tap_eq(value_of(p), 500, "%s: the parent's 500 branches since the attach", n);
        tap_eq(value_of(d), 800, "%s: and its running child's 300 with PMC_F_DESCENDANTS", n);
    }
    ke_host_switch(0, NULL);
    ke_host_switch(1, NULL);
    release(p);
    release(d);
    finish(n);
}

void test_ownership(void)
{
    released_row();
    logger_rows();
    freed_rows_used();
    nmi_during_read(&MODEL_INTEL_V4);
    nmi_during_read(&MODEL_AMD_LEGACY);
    nmi_record_order(&MODEL_INTEL_V4);
    nmi_record_order(&MODEL_AMD_LEGACY);
    nmi_before_load(&MODEL_AMD_LEGACY);
    nmi_before_load(&MODEL_INTEL_V1);
    nmi_during_stop(&MODEL_INTEL_V1);
    nmi_during_stop(&MODEL_AMD_LEGACY);
    attach_running(&MODEL_INTEL_V4);
    attach_running(&MODEL_AMD_V2);
}
