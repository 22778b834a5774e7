// NtPmcAdmin and NtPmcGetPmcInfo behind the system calls (see hwpmc/admin.h).
//
// Who decides that a row is in use, and so cannot be disabled:
//   a counter     pmc/hal/rows.c: a reservation (any scope), or sampling on that CPU
//   the timer     pmc/hal/hal_profile.c: ProfileTime started (it runs on every CPU)
//   a software    here, under pmc_lock: a counting PMC of that event whose CPUs
//   event's row   include that CPU (hwpmc/pmc.c refuses new ones on a disabled row)
#include "pmc/hwpmc/admin.h"

#include "arch/x86/percpu.h"

#include "core/spinlock.h"

#include "pmc/hal/rows.h"

#include "pmc/hwpmc/pmc.h"

static bool covers(const struct pmc *m, unsigned cpu)
{
    return (m->cpus >> cpu) & 1;
}

static bool counts_soft(const struct pmc *m, uint32_t event)
{
    return pmc_mode_is_counting(&m->a) && m->a.source == event;
}

static NTSTATUS soft_admin(unsigned cpu, unsigned row, bool disable)
{
    uint32_t event = PMC_EVENT_SW(row - pmc_row_soft(0));
    NTSTATUS s = STATUS_SUCCESS;
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (const struct pmc *m = pmc_all_locked(); disable && m; m = m->all_next)
        if (counts_soft(m, event) && covers(m, cpu))
            s = STATUS_PMC_ROW_BUSY;
    if (NT_SUCCESS(s))
        pmc_row_mark(cpu, row, disable);
    spin_unlock_irqrestore(&pmc_lock, f);
    return s;
}

static bool cpu_ok(uint32_t cpu)
{
    return cpu < ncpus && cpus[cpu].online;
}

NTSTATUS pmc_admin(uint32_t cpu, uint32_t row, uint32_t state)
{
    if (!cpu_ok(cpu))
        return STATUS_PMC_BAD_CPU;
    if (state != PMC_STATE_DISABLED && state != PMC_STATE_FREE)
        return STATUS_INVALID_PARAMETER;
    if (row >= pmc_row_count())
        return STATUS_PMC_BAD_ROW;
    bool disable = state == PMC_STATE_DISABLED;
    if (row < pmc_row_timer())
        return pmc_row_admin_counter(cpu, row, disable);
    if (row == pmc_row_timer())
        return hal_timer_admin(cpu, disable);
    return soft_admin(cpu, row, disable);
}

// The first PMC found names the row's owner and mode, and its event where
// the HAL layer named none (it names the source a counter samples, and the
// timer's: ProfileTime, which a counting PMC counts as profile-ticks).
static void held_by(struct pmc_rowinfo *r, const struct pmc *m)
{
    if (r->mode)
        return;
    r->owner_pid = m->owner_pid;
    r->mode = m->a.mode;
    if (r->event == PMC_EVENT_NONE)
        r->event = m->a.source;
}

// m's rows on cpu (pmc_lock held). A software event's row is THREAD for a
// process-scope PMC and STANDALONE for a system-scope one on that CPU (the
// latter wins when both count it: software events have no resource to share).
static void mark_pmc(const struct pmc *m, unsigned cpu, struct pmc_rowinfo *out)
{
    if (pmc_mode_is_counting(&m->a) && PMC_EVENT_IS_SW(m->a.source)) {
        struct pmc_rowinfo *r =
            &out[pmc_row_soft((enum pmc_sw_event)(m->a.source - PMC_EVENT_SW(0)))];
        r->users++;
        if (r->disp != PMC_DISP_STANDALONE)
            r->disp = pmc_process_scope(m) ? PMC_DISP_THREAD : PMC_DISP_STANDALONE;
        held_by(r, m);
        if (m->c.runs_profile_time && out[pmc_row_timer()].disp != PMC_DISP_FREE)
            held_by(&out[pmc_row_timer()], m);
    } else if (m->ops == &pmc_hw_counting) {
        held_by(&out[m->c.row], m);
    } else if (m->a.source == ProfileTime) {
        if (out[pmc_row_timer()].disp != PMC_DISP_FREE)
            held_by(&out[pmc_row_timer()], m);
    } else if (!pmc_mode_is_counting(&m->a)) {
        int i = pmc_counter_find(cpu, (KPROFILE_SOURCE)m->a.source);
        if (i >= 0)
            held_by(&out[i], m);
    }
}

NTSTATUS pmc_rows_info(uint32_t cpu, struct pmc_rowinfo *out)
{
    if (!cpu_ok(cpu))
        return STATUS_PMC_BAD_CPU;
    unsigned n = pmc_row_count();
    for (unsigned r = 0; r < n; r++)
        pmc_row_describe(cpu, r, &out[r]);
    uint64_t f = spin_lock_irqsave(&pmc_lock);
    for (const struct pmc *m = pmc_all_locked(); m; m = m->all_next)
        if (covers(m, cpu))
            mark_pmc(m, cpu, out);
    spin_unlock_irqrestore(&pmc_lock, f);
    return STATUS_SUCCESS;
}
