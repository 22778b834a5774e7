// Rows and their administration on the PMU model (kernel/pmc/hal/rows.c,
// its pmc_row_admin_counter, kernel/pmc/hwpmc/admin.c): a counter
// row disabled on one CPU is left alone by sampling there and by every
// counting reservation, a row in use cannot be disabled, the timer row keeps
// ProfileTime off its CPU, and enabling gives each back.
#include "ke_host.h"
#include "pmc/hal/rows.h"
#include "pmc/hwpmc/admin.h"
#include "pmc/hwpmc/kind_sampling.h"
#include "tests.h"

static struct process proc;
static struct thread thr;

static void setup(const struct model_config *cfg)
{
    ke_host_boot(cfg);
    ke_host_process(&proc, &thr, 10);
}

static struct pmc_rowinfo row_info(unsigned cpu, unsigned row)
{
    static struct pmc_rowinfo out[PMC_ROWS_MAX];
    NTSTATUS st = pmc_rows_info(cpu, out);
    return NT_SUCCESS(st) ? out[row] : (struct pmc_rowinfo){0};
}

// The classes tile the rows: counters, the timer, the software events.
static void check_cpuinfo(const struct model_config *m)
{
    struct pmc_cpuinfo ci;
    pmc_cpuinfo(&ci);
    unsigned next = 0, counters = 0;
    bool ok = ci.npmc == pmc_ncounters + 1 + PMC_SW_COUNT && ci.ncpu == m->ncpus;
    for (unsigned c = 0; c < ci.nclass; c++) {
        const struct pmc_classinfo *k = &ci.classes[c];
        ok = ok && k->first_row == next && k->num > 0 && k->width > 0;
        next += k->num;
        counters += k->cls != PMC_CLASS_TIMER && k->cls != PMC_CLASS_SOFT ? k->num : 0;
        if (k->cls == PMC_CLASS_IAP || k->cls == PMC_CLASS_K8)
            ok = ok && k->width == (k->cls == PMC_CLASS_K8 ? 48u : m->gp_width) &&
                 (k->events >> ProfileBranchInstructionRetired & 1);
    }
    tap_ok(ok && next == ci.npmc && counters == pmc_ncounters,
           "%s: %u classes tile %u rows (%u counters, the timer, %u software events)", m->name,
           ci.nclass, ci.npmc, counters, PMC_SW_COUNT);
}

// The first GP counter, and a GP-only source (an event no fixed counter has).
static int first_gp(void)
{
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (pmc_hw[i].kind == PMC_COUNTER_GENERAL)
            return (int)i;
    return -1;
}

// Sampling on a CPU skips a counter disabled there; other CPUs still take it.
static void check_sampling_avoids(const struct model_config *m, unsigned g)
{
    KPROFILE_SOURCE ev = ProfileBranchInstructionRetired;
    STATUS_EQ(pmc_admin(1, g, PMC_STATE_DISABLED), STATUS_SUCCESS, "%s: disable %s on cpu 1",
              m->name, row_info(1, g).name);
    tap_ok(!row_info(1, g).enabled && row_info(1, g).disp == PMC_DISP_STANDALONE &&
               row_info(0, g).enabled && row_info(0, g).disp == PMC_DISP_FREE,
           "%s: disabled on cpu 1 (STANDALONE), free on cpu 0", m->name);
    if (!start_ok(ev))
        return;
    tap_ok(pmc_counter_find(0, ev) == (int)g && pmc_counter_find(1, ev) >= 0 &&
               pmc_counter_find(1, ev) != (int)g &&
               !(model_gp_ctl(1, pmc_hw[g].number) & (1 << 22)),
           "%s: sampling %s takes counter %d on cpu 0, %d on cpu 1 (not the disabled one, which "
           "stays unprogrammed)",
           m->name, src(ev), pmc_counter_find(0, ev), pmc_counter_find(1, ev));
    struct pmc_rowinfo r = row_info(0, g);
    tap_ok(r.disp == PMC_DISP_STANDALONE && r.event == (uint32_t)ev && r.reload > 0,
           "%s: cpu 0's sampled row is STANDALONE with its source and period", m->name);
    STATUS_EQ(pmc_admin(0, g, PMC_STATE_DISABLED), STATUS_PMC_ROW_BUSY,
              "%s: disabling a row sampling holds: STATUS_PMC_ROW_BUSY", m->name);
    stop_ok(ev);
}

// No counting reservation takes a row disabled on any CPU; one in use is busy.
static void check_counting_avoids(const struct model_config *m, unsigned g)
{
    struct pmc_alloc a = {ProfileBranchInstructionRetired, PMC_MODE_TC, 0, PMC_CPU_ANY, 0};
    struct object *o = NULL;
    NTSTATUS st = pmc_allocate(&proc, &a, &o);
    STATUS_EQ(st, STATUS_SUCCESS, "%s: a process-scope counting PMC with %s disabled on cpu 1",
              m->name, row_info(1, g).name);
    if (!NT_SUCCESS(st))
        return;
    struct pmc *p = pmc_from_object(o);
    struct pmc_rowinfo r = row_info(0, p->c.row);
    tap_ok(p->c.row != g && r.disp == PMC_DISP_THREAD && r.owner_pid == 10 &&
               r.mode == PMC_MODE_TC && row_info(1, p->c.row).disp == PMC_DISP_THREAD,
           "%s: its row is %s, not the disabled one: THREAD on every CPU, owner 10", m->name,
           r.name);
    STATUS_EQ(pmc_admin(1, p->c.row, PMC_STATE_DISABLED), STATUS_PMC_ROW_BUSY,
              "%s: disabling a reserved row: STATUS_PMC_ROW_BUSY", m->name);
    unsigned row = p->c.row;
    object_unref(o);
    tap_ok(row_info(0, row).disp == PMC_DISP_FREE && row_info(1, row).disp == PMC_DISP_FREE,
           "%s: released, %s is FREE", m->name, row_info(0, row).name);
}

// A disabled timer row: ProfileTime runs on every other CPU; busy while it runs.
static void check_timer(const struct model_config *m)
{
    unsigned t = pmc_row_timer();
    STATUS_EQ(pmc_admin(1, t, PMC_STATE_DISABLED), STATUS_SUCCESS, "%s: disable the timer on cpu 1",
              m->name);
    if (!start_ok(ProfileTime))
        return;
    tap_ok(model_timer(0, TIMER_SLOT_PROFILE)->running &&
               !model_timer(1, TIMER_SLOT_PROFILE)->running,
           "%s: ProfileTime runs on cpu 0, not on cpu 1", m->name);
    STATUS_EQ(pmc_admin(0, t, PMC_STATE_DISABLED), STATUS_PMC_ROW_BUSY,
              "%s: the timer row while ProfileTime runs: STATUS_PMC_ROW_BUSY", m->name);
    STATUS_EQ(pmc_admin(1, t, PMC_STATE_FREE), STATUS_SUCCESS, "%s: enable it while it runs",
              m->name);
    tap_ok(model_timer(1, TIMER_SLOT_PROFILE)->running &&
               model_timer(0, TIMER_SLOT_PROFILE)->starts == 1,
           "%s: cpu 1's timer runs at once, cpu 0's is not restarted", m->name);
    stop_ok(ProfileTime);
}

static void check_config(const struct model_config *m)
{
    setup(m);
    check_cpuinfo(m);
    int g = first_gp();
    if (g >= 0 && m->ncpus >= 2) {
        check_sampling_avoids(m, (unsigned)g);
        check_counting_avoids(m, (unsigned)g);
        STATUS_EQ(pmc_admin(1, (unsigned)g, PMC_STATE_FREE), STATUS_SUCCESS, "%s: enable it",
                  m->name);
        tap_ok(pmc_rows_disabled[1] == 0 && row_info(1, (unsigned)g).enabled,
               "%s: every row enabled again", m->name);
    }
    check_timer(m);
    STATUS_EQ(pmc_admin(m->ncpus, 0, PMC_STATE_DISABLED), STATUS_PMC_BAD_CPU, "%s: bad CPU",
              m->name);
    STATUS_EQ(pmc_admin(0, pmc_row_count(), PMC_STATE_DISABLED), STATUS_PMC_BAD_ROW, "%s: bad row",
              m->name);
    STATUS_EQ(pmc_admin(0, 0, 9), STATUS_INVALID_PARAMETER, "%s: bad state", m->name);
    finish(m->name);
}

void test_admin(void)
{
    check_config(&MODEL_INTEL_V4);
    check_config(&MODEL_INTEL_V1);
    check_config(&MODEL_AMD_LEGACY);
    check_config(&MODEL_AMD_V2);
}
