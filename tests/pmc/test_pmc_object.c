// The PMC object end to end: kernel/pmc/hwpmc/pmc.c and its kinds over
// kernel/pmc/hal/counts.c over the PMU model. Hardware counting with context
// switches, migrations, process exit, multiplexing on the scheduler tick and
// ring-3 rdpmc; then what every kind shares: one ID space, the operations a
// kind does not have, attach and detach, and the release path.
#include <string.h>

#include "arch/x86/cpu.h"
#include "core/grace.h"
#include "ke_host.h"
#include "pmc/hwpmc/loggers.h"
#include "pmc/hal/counts.h"
#include "pmc/hal/rows.h"
#include "pmc/hwpmc/kind_sampling.h"
#include "pmc/hwpmc/log.h"
#include "tests.h"

#define USER_IP 0x401000ull

static struct process proc[3];
static struct thread thr[3];

static void retire(unsigned cpu, enum model_event ev, uint64_t n)
{
    model_retire(cpu, ev, n, USER_IP, true);
}

static struct pmc *alloc_flags(uint32_t source, uint32_t mode, uint32_t flags, NTSTATUS *st)
{
    return ke_host_allocate(&proc[0], source, mode, flags, st);
}

static struct pmc *alloc(uint32_t source, uint32_t mode, NTSTATUS *st)
{
    return alloc_flags(source, mode, 0, st);
}

static struct pmc_value query(struct pmc *p)
{
    struct pmc_value v = {0};
    pmc_read(p, &v);
    return v;
}

static void release(struct pmc *p)
{
    if (p)
        object_unref(&p->obj);
}

// The calls as the system-call layer makes them, by proc[0] (the owner).
static NTSTATUS pmc_attach_(struct pmc *p, struct process *target)
{
    return pmc_attach(p, &proc[0], target);
}

static NTSTATUS pmc_detach_(struct pmc *p, struct process *target)
{
    return pmc_detach(p, &proc[0], target);
}

static NTSTATUS pmc_start_(struct pmc *p)
{
    return pmc_start(p, &proc[0]);
}

static void setup(const struct model_config *cfg)
{
    ke_host_boot(cfg);
    pmc_loggers_init();
    for (unsigned i = 0; i < 3; i++)
        ke_host_process(&proc[i], &thr[i], 10 + i);
}

// Two processes switching and migrating between two CPUs, one system-wide
// count beside them: each process's count is exactly the events retired while
// it ran, and with the idle time's they add up to the system count.
static void switches_and_migrations(const struct model_config *cfg)
{
    setup(cfg);
    const char *n = cfg->name;
    NTSTATUS sa, sb, ss;
    // The system count first: on a two-counter machine it takes one row and
    // A's and B's share the other (they never run on one CPU at once).
    struct pmc *sys = alloc(ProfileTotalIssues, PMC_MODE_SC, &ss);
    struct pmc *pa = alloc(ProfileTotalIssues, PMC_MODE_TC, &sa);
    struct pmc *pb = alloc(ProfileTotalIssues, PMC_MODE_TC, &sb);
    bool ok = STATUS_EQ(sa, STATUS_SUCCESS, "%s: allocate a process-scope instruction count", n);
    ok &= STATUS_EQ(sb, STATUS_SUCCESS, "%s: a second one", n);
    ok &= STATUS_EQ(ss, STATUS_SUCCESS, "%s: and a system-scope one", n);
    if (!ok) {
        release(pa);
        release(pb);
        release(sys);
        finish(n);
        return;
    }
    STATUS_EQ(pmc_attach_(pa, &proc[1]), STATUS_SUCCESS, "%s: attach A", n);
    STATUS_EQ(pmc_attach_(pb, &proc[2]), STATUS_SUCCESS, "%s: attach B", n);
    STATUS_EQ(pmc_start_(pa), STATUS_SUCCESS, "%s: start A's", n);
    STATUS_EQ(pmc_start_(pb), STATUS_SUCCESS, "%s: start B's", n);
    STATUS_EQ(pmc_start_(sys), STATUS_SUCCESS, "%s: start the system count", n);

    retire(0, EV_INSTRUCTIONS, 100); // idle
    ke_host_switch(0, &thr[1]);      // A on cpu0
    retire(0, EV_INSTRUCTIONS, 1000);
    ke_host_switch(1, &thr[2]); // B on cpu1
    retire(1, EV_INSTRUCTIONS, 2000);
    tap_eq(query(pa).value, 1000, "%s: A's count while A runs on cpu0 (read across CPUs)", n);
    ke_host_switch(0, NULL); // A out
    retire(0, EV_INSTRUCTIONS, 50);
    ke_host_switch(1, &thr[1]); // B out, A migrates to cpu1
    retire(1, EV_INSTRUCTIONS, 300);
    ke_host_switch(0, &thr[2]); // B migrates to cpu0
    retire(0, EV_INSTRUCTIONS, 7);

    uint64_t a = query(pa).value, b = query(pb).value, s = query(sys).value;
    tap_eq(a, 1300, "%s: A counted exactly its own events on both CPUs", n);
    tap_eq(b, 2007, "%s: B counted exactly its own events on both CPUs", n);
    tap_eq(s, 3457, "%s: the system count saw every event", n);
    tap_eq(a + b + 150, s, "%s: A + B + idle = system, nothing leaked between processes", n);
    struct pmc_value v = query(pa);
    // With two counters A's and B's PMCs share one row: no counter is theirs alone.
    bool row_ok = pmc_ncounters < 3 ? v.row == 0xFFFFFFFFu : v.row < pmc_ncounters;
    tap_ok(row_ok && v.targets == 1, "%s: query names the row (%u, or none when shared), 1 target",
           n, v.row);

    STATUS_EQ(pmc_stop(pa), STATUS_SUCCESS, "%s: stop A's", n);
    retire(1, EV_INSTRUCTIONS, 5000); // A still runs, its PMC is stopped
    tap_eq(query(pa).value, 1300, "%s: a stopped count does not move", n);
    STATUS_EQ(pmc_start_(pa), STATUS_SUCCESS, "%s: start A's again", n);
    retire(1, EV_INSTRUCTIONS, 11);
    tap_eq(query(pa).value, 1311, "%s: restarted where it stopped (A was running)", n);

    ke_host_exit(1, &proc[1]); // A exits on the CPU it runs on
    retire(1, EV_INSTRUCTIONS, 999);
    v = query(pa);
    tap_ok(v.value == 1311 && v.targets == 0, "%s: A's total survives its exit (%llu, %u targets)",
           n, (unsigned long long)v.value, v.targets);

    STATUS_EQ(pmc_write(pb, 5), STATUS_PMC_RUNNING, "%s: write while running refused", n);
    STATUS_EQ(pmc_stop(pb), STATUS_SUCCESS, "%s: stop B's", n);
    STATUS_EQ(pmc_write(pb, 5), STATUS_SUCCESS, "%s: write while stopped", n);
    STATUS_EQ(pmc_start_(pb), STATUS_SUCCESS, "%s: start B's after the write", n);
    retire(0, EV_INSTRUCTIONS, 20);
    tap_eq(query(pb).value, 25, "%s: B counts on from the written value", n);
    STATUS_EQ(pmc_detach_(pb, &proc[2]), STATUS_SUCCESS, "%s: detach B while it runs", n);
    retire(0, EV_INSTRUCTIONS, 20);
    tap_eq(query(pb).value, 25, "%s: a detached process's count is kept, and stops", n);

    release(pa);
    release(pb);
    release(sys);
    tap_eq(pmc_rows_reserved, 0, "%s: every row is free once the PMCs are gone", n);
    tap_ok(ALL_CPUS(pmc_counters_loaded[cpu] == 0), "%s: no counter left counting", n);
    finish(n);
}

// More branch counts on one process than GP counters: they take turns at
// every scheduler tick. With the same events in every tick, over a whole turn
// each is loaded rows/counts of the time, and value x enabled / running gives
// back every event.
static void multiplexing(const struct model_config *cfg, unsigned extra)
{
    setup(cfg);
    const char *n = cfg->name;
    unsigned rows = (unsigned)__builtin_popcount(
                 halp_profile_interface->CountersFor(ProfileBranchInstructions)),
             counts = rows + extra;
    struct pmc *p[16] = {0};
    bool ok = counts <= 16;
    for (unsigned i = 0; ok && i < counts; i++) {
        NTSTATUS st;
        p[i] = alloc(ProfileBranchInstructions, PMC_MODE_TC, &st);
        ok = STATUS_EQ(st, STATUS_SUCCESS, "%s: branch count %u of %u", n, i + 1, counts);
        ok = ok && STATUS_EQ(pmc_attach_(p[i], &proc[1]), STATUS_SUCCESS, "%s: attach", n);
        ok = ok && STATUS_EQ(pmc_start_(p[i]), STATUS_SUCCESS, "%s: start", n);
    }
    if (ok) {
        ke_host_switch(0, &thr[1]);
        const uint64_t per_tick = 1000, tick_ns = 10000000;
        for (unsigned t = 0; t < counts; t++) {
            model_advance_time(tick_ns);
            retire(0, EV_BRANCHES, per_tick);
            ke_host_tick(0);
        }
        // Model time also passes in each MSR access (0.1 us bare, 2 us under
        // a hypervisor), so enabled time is the ticks' plus those (under 2 %)
        // and the shares and estimates hold within 0.1 %.
        bool exact = true, shares = true, scaled = true;
        for (unsigned i = 0; i < counts; i++) {
            struct pmc_value v = query(p[i]);
            exact &= v.value == per_tick * rows;
            double share = v.time_enabled ? (double)v.time_running / (double)v.time_enabled : 0;
            double est = v.time_running
                             ? (double)v.value * (double)v.time_enabled / (double)v.time_running
                             : 0;
            shares &= v.time_enabled >= tick_ns * counts &&
                      v.time_enabled < tick_ns * counts * 102 / 100 &&
                      share > (double)rows / counts * 0.999 &&
                      share < (double)rows / counts * 1.001;
            scaled &= est > (double)(per_tick * counts) * 0.999 &&
                      est < (double)(per_tick * counts) * 1.001;
            if (i == 0)
                tap_diag("%s: count 0: %llu events, enabled %llu ns, running %llu ns", n,
                         (unsigned long long)v.value, (unsigned long long)v.time_enabled,
                         (unsigned long long)v.time_running);
        }
        tap_ok(shares, "%s: %u counts on %u counters: each ran %u/%u of its enabled time", n,
               counts, rows, rows, counts);
        tap_ok(exact, "%s: each count saw exactly its %u loaded ticks' events", n, rows);
        tap_ok(scaled, "%s: scaled by enabled/running, every count gives all %llu events", n,
               (unsigned long long)(per_tick * counts));
        ke_host_switch(0, NULL);
    }
    for (unsigned i = 0; i < counts; i++)
        release(p[i]);
    finish(n);
}

// NtPmcGetMsr's rules and ring-3 rdpmc while the owner runs.
static void self_monitoring(const struct model_config *cfg)
{
    setup(cfg);
    const char *n = cfg->name;
    NTSTATUS st;
    struct pmc *p = alloc(ProfileTotalIssues, PMC_MODE_TC, &st);
    if (!STATUS_EQ(st, STATUS_SUCCESS, "%s: allocate", n)) {
        finish(n);
        return;
    }
    uint32_t index = 0;
    STATUS_EQ(pmc_attach_(p, &proc[0]), STATUS_SUCCESS, "%s: attach the owner", n);
    STATUS_EQ(pmc_start_(p), STATUS_SUCCESS, "%s: start", n);
    STATUS_EQ(pmc_rdpmc_index(p, &proc[1], &index), STATUS_INVALID_PARAMETER,
              "%s: GetMsr by another process refused", n);
    ke_host_switch(0, &thr[0]); // the owner runs on cpu0, the test's CPU
    retire(0, EV_INSTRUCTIONS, 4321);
    tap_ok(!(read_cr4() & CR4_PCE), "%s: CR4.PCE clear before GetMsr", n);
    STATUS_EQ(pmc_rdpmc_index(p, &proc[0], &index), STATUS_SUCCESS, "%s: GetMsr", n);
    tap_ok(read_cr4() & CR4_PCE, "%s: CR4.PCE set while the owner runs", n);
    uint64_t got = 0;
    bool read = model_rdpmc(0, index, true, &got);
    tap_ok(read && got == 4321, "%s: ring-3 rdpmc(0x%x) reads the count (%llu)", n, index,
           (unsigned long long)got);
    ke_host_switch(0, NULL);
    tap_ok(!(read_cr4() & CR4_PCE), "%s: CR4.PCE clear once the owner is switched out", n);
    tap_ok(!model_rdpmc(0, index, true, &got), "%s: and ring-3 rdpmc faults", n);
    ke_host_switch(1, &thr[0]); // on the other CPU: the same counter index
    retire(1, EV_INSTRUCTIONS, 9);
    read = model_rdpmc(1, index, true, &got);
    tap_ok(read && got == 4330, "%s: after migrating, rdpmc on cpu1 reads on (%llu)", n,
           (unsigned long long)got);
    STATUS_EQ(pmc_attach_(p, &proc[2]), STATUS_PMC_READ_IN_RING3,
              "%s: no other process may be attached to a ring-3-read PMC", n);
    ke_host_switch(1, NULL);
    release(p);
    finish(n);
}

// ETW-style counter values at every switch with a hardware event: each CPU's
// records carry its counter's running total, so consecutive records of a CPU
// differ by exactly the events retired between the two switches.
static void cswitch_counters(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "intel-v4";
    uint32_t ev[2] = {ProfileTotalIssues, PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES)};
    STATUS_EQ(pmc_logger_cswitch_start(&proc[0], ev, 2), STATUS_PMC_NO_LOG,
              "%s: context-switch counters need the caller's log", n);
    ke_host_log.owner_pid = proc[0].pid;
    STATUS_EQ(pmc_logger_cswitch_start(&proc[0], ev, 2), STATUS_SUCCESS,
              "%s: context-switch log with "
              "instructions and context switches",
              n);
    retire(0, EV_INSTRUCTIONS, 100);
    ke_host_switch(0, &thr[1]);
    retire(0, EV_INSTRUCTIONS, 250);
    ke_host_switch(1, &thr[2]);
    retire(1, EV_INSTRUCTIONS, 70);
    ke_host_switch(0, NULL);
    ke_host_switch(1, NULL);
    STATUS_EQ(pmc_logger_cswitch_stop(), STATUS_SUCCESS, "%s: stop the counters", n);
    tap_eq(ke_host_log.users, 0, "%s: stopping gives the log back", n);
    tap_ok(pmc_rows_reserved == 0 && ALL_CPUS(pmc_counters_loaded[cpu] == 0),
           "%s: stopping frees its rows and counters", n);

    const struct pmclog_cswitch *rec = (const void *)ke_host_log.bytes;
    unsigned nrec = ke_host_log.records[PMCLOG_CSWITCH];
    tap_ok(ke_host_log.nbytes == nrec * sizeof *rec, "%s: the log holds only switch records", n);
    const struct pmclog_cswitch *c0[2] = {0}, *c1[2] = {0};
    unsigned k0 = 0, k1 = 0;
    for (unsigned i = 0; i < nrec; i++) {
        if (rec[i].h.cpu == 0 && k0 < 2)
            c0[k0++] = &rec[i];
        else if (rec[i].h.cpu == 1 && k1 < 2)
            c1[k1++] = &rec[i];
    }
    tap_ok(nrec == 4 && k0 == 2 && k1 == 2, "%s: 4 switch records, 2 per CPU (%u)", n, nrec);
    if (k0 == 2 && k1 == 2) {
        tap_ok(c0[0]->new_pid == 11 && c0[1]->old_pid == 11 && c1[0]->new_pid == 12,
               "%s: the records name the threads switched", n);
        tap_ok(c0[0]->event[0] == ProfileTotalIssues && c0[0]->nevents == 2,
               "%s: each record lists its events", n);
        tap_eq(c0[1]->value[0] - c0[0]->value[0], 250,
               "%s: cpu0's counter advanced by A's 250 instructions between its switches", n);
        tap_eq(c1[1]->value[0] - c1[0]->value[0], 70, "%s: cpu1's by B's 70", n);
    }

    // A record holds raw counter values: more hardware events than counters
    // is refused rather than multiplexed.
    uint32_t many[6] = {ProfileBranchInstructions, ProfileBranchInstructions,
                        ProfileBranchInstructions, ProfileBranchInstructions,
                        ProfileBranchInstructions, ProfileBranchInstructions};
    STATUS_EQ(pmc_logger_cswitch_start(&proc[0], many, 6), STATUS_INSUFFICIENT_RESOURCES,
              "%s: 6 GP-only events on 4 GP counters refused", n);
    tap_ok(pmc_rows_reserved == 0, "%s: ... and nothing stays reserved", n);
    pmc_shutdown(); // the log's rings stay allocated for the next session: no leak check
    tap_eq(model_gp_faults(), 0, "%s: no #GP", n);
}

static void no_pmu(void)
{
    setup(&MODEL_TCG_INTEL);
    NTSTATUS st;
    struct pmc *p = alloc(ProfileTotalIssues, PMC_MODE_TC, &st);
    STATUS_EQ(st, STATUS_PMC_COUNTING_UNSUPPORTED, "tcg: hardware counting refused with no PMU");
    release(p);
    finish("tcg");
}

// What every kind shares: one ID space, the statuses of the operations a kind
// does not have, attachment rules, and the release path (a target freed at
// detach or exit, every object gone at the end).
static void one_object(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "object";
    uint64_t objects = object_live_count();
    NTSTATUS st[4];
    struct pmc *ts = alloc(ProfileTime, PMC_MODE_TS, &st[0]);
    struct pmc *sw = alloc(PMC_EVENT_SW(PMC_SW_CONTEXT_SWITCHES), PMC_MODE_TC, &st[1]);
    struct pmc *hw = alloc(ProfileTotalIssues, PMC_MODE_SC, &st[2]);
    struct pmc *tsx =
        alloc_flags(ProfileTime, PMC_MODE_TS, PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT, &st[3]);
    bool ok = true;
    for (unsigned i = 0; i < 4; i++)
        ok &= STATUS_EQ(st[i], STATUS_SUCCESS, "%s: allocate kind %u of 4", n, i + 1);
    if (!ok) {
        release(ts), release(sw), release(hw), release(tsx);
        finish(n);
        return;
    }
    tap_ok(ts->ops == &pmc_time_sampling && sw->ops == &pmc_sw_counting &&
               hw->ops == &pmc_hw_counting,
           "%s: the mode and source choose the kind", n);
    tap_ok(ts->id != sw->id && ts->id != hw->id && sw->id != hw->id && tsx->id != ts->id,
           "%s: one ID space (%u %u %u %u)", n, ts->id, sw->id, hw->id, tsx->id);

    struct pmc_value v;
    uint32_t index;
    STATUS_EQ(pmc_read(ts, &v), STATUS_PMC_NOT_COUNTING, "%s: read of a sampling PMC", n);
    STATUS_EQ(pmc_write(ts, 1), STATUS_PMC_NOT_COUNTING, "%s: write of a sampling PMC", n);
    STATUS_EQ(pmc_rdpmc_index(ts, &proc[0], &index), STATUS_PMC_NOT_COUNTING,
              "%s: GetMsr of a sampling PMC", n);
    STATUS_EQ(pmc_set_count(sw, 10), STATUS_PMC_NOT_SAMPLING, "%s: set count of a counting PMC", n);
    STATUS_EQ(pmc_rdpmc_index(sw, &proc[0], &index), STATUS_NOT_SUPPORTED,
              "%s: GetMsr of a software count (no register)", n);
    STATUS_EQ(pmc_attach_(hw, &proc[1]), STATUS_PMC_NOT_PROCESS_SCOPE,
              "%s: attach to a system-scope PMC", n);

    STATUS_EQ(pmc_start_(ts), STATUS_PMC_NO_TARGET, "%s: sampling start with no target", n);
    STATUS_EQ(pmc_attach_(ts, &proc[1]), STATUS_SUCCESS, "%s: attach", n);
    STATUS_EQ(pmc_attach_(ts, &proc[1]), STATUS_PMC_ALREADY_ATTACHED, "%s: attach again", n);
    STATUS_EQ(pmc_detach_(ts, &proc[2]), STATUS_PMC_NOT_ATTACHED, "%s: detach a stranger", n);
    STATUS_EQ(pmc_start_(ts), STATUS_PMC_NO_LOG, "%s: sampling start without the log", n);
    ke_host_log.owner_pid = proc[0].pid;
    uint64_t drops = ke_host_log.drops;
    STATUS_EQ(pmc_start_(ts), STATUS_SUCCESS, "%s: sampling start by the log's owner", n);
    tap_ok(ke_host_log.drops > drops, "%s: a start drops the sample plans", n);
    STATUS_EQ(pmc_start_(ts), STATUS_PMC_RUNNING, "%s: start twice", n);

    // The fan-out's view: the samplers for the attached process hold the PMC.
    struct intr_frame user = {.rip = USER_IP, .cs = 0x23};
    struct pmc_sampler *samplers = pmc_samplers_make(ProfileTime, &proc[1], 0);
    tap_ok(samplers && !samplers->next && samplers == &ts->s.cpu[0],
           "%s: the target's CPU has the PMC's sampler, alone", n);
    if (samplers) {
        pmc_log_sample(samplers, &user);
        tap_ok(ke_host_log.samples == 1 && ke_host_log.last_pmc == ts->id,
               "%s: a sample becomes the PMC's log record", n);
    }
    tap_ok(pmc_samplers_make(ProfileTime, &proc[2], 0) == NULL,
           "%s: no sampler for a process not attached", n);

    // Switch and exit records of a sampling PMC, and the release at exit.
    STATUS_EQ(pmc_attach_(tsx, &proc[2]), STATUS_SUCCESS, "%s: attach the logging PMC", n);
    STATUS_EQ(pmc_start_(tsx), STATUS_SUCCESS, "%s: start it", n);
    ke_host_switch(0, &thr[2]);
    ke_host_switch(0, NULL);
    tap_eq(ke_host_log.records[PMCLOG_CSW], 1, "%s: PMC_F_LOG_PROCCSW: one record a switch-out", n);
    ke_host_exit(0, &proc[2]);
    tap_eq(ke_host_log.records[PMCLOG_EXIT], 1, "%s: PMC_F_LOG_PROCEXIT: a record at exit", n);
    tap_ok(tsx->ntargets == 0 && pmc_target_of(tsx, &proc[2]) == NULL,
           "%s: the exited process is no target", n);
    tap_eq(proc[2].obj.refs, 2, "%s: its target is kept for a grace period", n);
    grace_flush();
    tap_eq(proc[2].obj.refs, 1, "%s: and its reference dropped after it", n);

    STATUS_EQ(pmc_attach_(sw, &proc[1]), STATUS_SUCCESS, "%s: attach a counting PMC", n);
    STATUS_EQ(pmc_detach_(sw, &proc[1]), STATUS_SUCCESS, "%s: detach it", n);
    STATUS_EQ(pmc_detach_(ts, &proc[1]), STATUS_SUCCESS, "%s: detach from a running one", n);
    grace_flush();
    tap_eq(proc[1].obj.refs, 1, "%s: every target's reference dropped a grace period later", n);
    STATUS_EQ(pmc_stop(ts), STATUS_SUCCESS, "%s: stop", n);
    STATUS_EQ(pmc_stop(ts), STATUS_PMC_NOT_RUNNING, "%s: stop twice", n);
    release(ts), release(sw), release(hw), release(tsx); // tsx still runs: closing stops it
    tap_ok(ke_host_log.users == 0, "%s: closing the last handle stops a PMC (the log is free)", n);
    tap_eq(object_live_count(), objects, "%s: every PMC object is gone", n);
    tap_eq(pmc_rows_reserved, 0, "%s: and its counter rows", n);
    finish(n);
}

// Two owners with a log each, as kernel/pmc/hwpmc/log.c keeps one per
// owner: a PMC's samples, switch and exit records, sampling or counting, go
// to its owner's log alone, though both sample one process.
static void logs_per_owner(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "a log per owner";
    static struct process owner2;
    static struct thread owner2_thread;
    ke_host_process(&owner2, &owner2_thread, 20);
    ke_host_log.owner_pid = proc[0].pid;
    ke_host_log_other.owner_pid = owner2.pid;
    uint32_t flags = PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT;
    NTSTATUS st[3];
    struct pmc *m[3] = {
        alloc_flags(ProfileTime, PMC_MODE_TS, flags, &st[0]),
        ke_host_allocate(&owner2, ProfileTime, PMC_MODE_TS, flags, &st[1]),
        ke_host_allocate(&owner2, PMC_EVENT_SW(PMC_SW_SYSCALLS), PMC_MODE_TC, PMC_F_LOG_PROCEXIT,
                         &st[2]),
    };
    struct process *owner[3] = {&proc[0], &owner2, &owner2};
    bool ok = true;
    for (unsigned i = 0; i < 3 && ok; i++)
        ok = STATUS_EQ(st[i], STATUS_SUCCESS, "%s: allocate %u", n, i) &&
             STATUS_EQ(pmc_attach(m[i], owner[i], &proc[1]), STATUS_SUCCESS, "%s: attach %u", n,
                       i) &&
             STATUS_EQ(pmc_start(m[i], owner[i]), STATUS_SUCCESS, "%s: start %u", n, i);
    if (ok) {
        struct intr_frame user = {.rip = USER_IP, .cs = 0x23};
        pmc_log_sample(pmc_samplers_make(ProfileTime, &proc[1], 0), &user);
        tap_ok(ke_host_log.samples == 1 && ke_host_log.last_pmc == m[0]->id &&
                   ke_host_log_other.samples == 1 && ke_host_log_other.last_pmc == m[1]->id,
               "%s: each PMC's sample in its owner's log (%lu, %lu)", n, ke_host_log.samples,
               ke_host_log_other.samples);
        ke_host_switch(0, &thr[1]);
        ke_host_switch(0, NULL);
        tap_ok(ke_host_log.records[PMCLOG_CSW] == 1 && ke_host_log_other.records[PMCLOG_CSW] == 1,
               "%s: a switch record in each log", n);
        ke_host_exit(0, &proc[1]);
        tap_ok(ke_host_log.records[PMCLOG_EXIT] == 1 && ke_host_log_other.records[PMCLOG_EXIT] == 2,
               "%s: exit records: one in the first log, the sampling and the counting PMC's in "
               "the second",
               n);
    }
    for (unsigned i = 0; i < 3; i++)
        release(m[i]); // closing stops
    tap_ok(ke_host_log.users == 0 && ke_host_log_other.users == 0, "%s: both logs given back", n);
    grace_flush();
    finish(n);
}

// A target leaving a software counting PMC (its process exits) is read until
// its count is in the PMC's total. A stop that lands while it leaves (here
// at the release's call to every CPU) must keep that count: it once kept
// only the attached targets', and the PMC read lower after the stop.
static struct pmc *racing_stop;
static void stop_now(void)
{
    pmc_stop(racing_stop);
}

static void stop_while_leaving(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "stop while a target leaves";
    NTSTATUS st;
    struct pmc *sw = alloc(PMC_EVENT_SW(PMC_SW_SYSCALLS), PMC_MODE_TC, &st);
    if (!STATUS_EQ(st, STATUS_SUCCESS, "%s: allocate", n)) {
        finish(n);
        return;
    }
    STATUS_EQ(pmc_attach_(sw, &proc[1]), STATUS_SUCCESS, "%s: attach", n);
    STATUS_EQ(pmc_attach_(sw, &proc[2]), STATUS_SUCCESS, "%s: attach a second process", n);
    STATUS_EQ(pmc_start_(sw), STATUS_SUCCESS, "%s: start", n);
    thr[1].sw[PMC_SW_SYSCALLS] += 100;
    thr[2].sw[PMC_SW_SYSCALLS] += 20;
    tap_eq(query(sw).value, 120, "%s: 100 + 20 system calls counted", n);
    racing_stop = sw;
    model_call_all_hook = stop_now;
    ke_host_exit(0, &proc[1]);
    tap_ok(model_call_all_hook == NULL && !sw->running, "%s: the stop ran during the release", n);
    tap_eq(query(sw).value, 120, "%s: the exited target's 100 kept", n);
    thr[2].sw[PMC_SW_SYSCALLS] += 7;
    STATUS_EQ(pmc_start_(sw), STATUS_SUCCESS, "%s: start again", n);
    thr[2].sw[PMC_SW_SYSCALLS] += 5;
    tap_eq(query(sw).value, 125, "%s: only what ran while started counts (120 + 5)", n);
    pmc_stop(sw);
    release(sw);
    finish(n);
}

// The samplers of proc[1] on CPU 0, as PMC ids in order; how many.
static unsigned sampler_ids(uint32_t *ids)
{
    unsigned k = 0;
    for (struct pmc_sampler *s = pmc_samplers_make(ProfileTime, &proc[1], 0); s && k < 4;
         s = s->next) {
        struct pmclog_sample head;
        memcpy(&head, s->head, sizeof head);
        ids[k++] = head.pmc;
    }
    return k;
}

// The running set needs no memory (a change writes the array not published,
// never the one a sample may be reading): with every allocation failing,
// sampling PMCs start and stop, and the samplers follow each change.
static void running_set_without_memory(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "running set without memory";
    ke_host_log.owner_pid = proc[0].pid;
    struct pmc *m[3] = {0};
    for (unsigned i = 0; i < 3; i++) {
        NTSTATUS st;
        m[i] = alloc(ProfileTime, PMC_MODE_TS, &st);
        if (!STATUS_EQ(st, STATUS_SUCCESS, "%s: allocate %u", n, i) ||
            !STATUS_EQ(pmc_attach_(m[i], &proc[1]), STATUS_SUCCESS, "%s: attach %u", n, i))
            goto out;
    }
    model_fail_alloc_after(0);
    for (unsigned i = 0; i < 3; i++)
        STATUS_EQ(pmc_start_(m[i]), STATUS_SUCCESS, "%s: start %u with no memory", n, i);
    uint32_t ids[4];
    tap_ok(sampler_ids(ids) == 3 && ids[0] == m[0]->id && ids[1] == m[1]->id && ids[2] == m[2]->id,
           "%s: three samplers, in start order", n);
    STATUS_EQ(pmc_stop(m[1]), STATUS_SUCCESS, "%s: stop the middle one with no memory", n);
    tap_ok(sampler_ids(ids) == 2 && ids[0] == m[0]->id && ids[1] == m[2]->id,
           "%s: the other two sample, once each", n);
    STATUS_EQ(pmc_start_(m[1]), STATUS_SUCCESS, "%s: start it again", n);
    STATUS_EQ(pmc_stop(m[0]), STATUS_SUCCESS, "%s: stop the first", n);
    tap_ok(sampler_ids(ids) == 2 && ids[0] == m[2]->id && ids[1] == m[1]->id,
           "%s: the set follows every change", n);
    pmc_stop(m[1]), pmc_stop(m[2]);
    tap_ok(sampler_ids(ids) == 0, "%s: none when none runs", n);
out:
    model_fail_alloc_after(-1);
    for (unsigned i = 0; i < 3; i++)
        release(m[i]);
    finish(n);
}

// Unprivileged process-scope counting PMCs cannot hold every counter: the
// last free general-purpose row is kept, so a privileged system-scope count
// of an event only such a row counts still gets one.
static void rows_kept_for_privileged(void)
{
    setup(&MODEL_INTEL_V4);
    const char *n = "rows kept for the privileged";
    proc[1].privileged = false;
    struct pmc *u[PMC_ROW_MAX_RESERVED] = {0}, *v = NULL;
    NTSTATUS st = STATUS_SUCCESS;
    unsigned got = 0;
    for (; got < PMC_ROW_MAX_RESERVED; got++)
        if (!(u[got] =
                  ke_host_allocate(&proc[1], ProfileBranchMispredictions, PMC_MODE_TC, 0, &st)))
            break;
    tap_ok(got == PMC_ROW_MAX_RESERVED, "%s: %u unprivileged process-scope counts (sharing rows)",
           n, got);
    v = ke_host_allocate(&proc[0], ProfileBranchMispredictions, PMC_MODE_SC, 0, &st);
    STATUS_EQ(st, STATUS_SUCCESS, "%s: then a privileged system-scope count of the same event", n);
    release(v);
    for (unsigned i = 0; i < got; i++)
        release(u[i]);
    proc[1].privileged = true;
    finish(n);
}

void test_pmc_object(void)
{
    rows_kept_for_privileged();
    running_set_without_memory();
    stop_while_leaving();
    switches_and_migrations(&MODEL_INTEL_V4);
    switches_and_migrations(&MODEL_INTEL_KVM_V2);
    switches_and_migrations(&MODEL_INTEL_V1);
    switches_and_migrations(&MODEL_AMD_LEGACY);
    switches_and_migrations(&MODEL_AMD_V2);
    multiplexing(&MODEL_INTEL_V4, 2);
    multiplexing(&MODEL_AMD_V2, 3);
    self_monitoring(&MODEL_INTEL_V4);
    self_monitoring(&MODEL_AMD_V2);
    no_pmu();
    one_object();
    logs_per_owner();
    cswitch_counters();
}
