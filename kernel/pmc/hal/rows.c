// Rows: their numbering, their reservation for counting and their
// administrative state (see hal/rows.h); what each is, for `pmc info` and
// NtPmcGetPmcInfo, is hal/row_info.c.
#include "pmc/hal/rows.h"

#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/smp.h"
#include "core/spinlock.h"

#include "pmc/hal/hal_interface.h"

// ---- reservation ------------------------------------------------------------

// A row of a scope with no reservation (users 0) is a spare: the scope holds
// it while it has more reservations than rows, so that the counts of the
// reservations that share a row find a counter of their own once one is free
// (take_spare, drop_spares).
struct pmc_row pmc_rows[PMC_MAX_COUNTERS];

static unsigned reserved_in[3]; // reservations per scope
static struct spinlock rows_lock = SPINLOCK_INIT("pmc rows");

static void no_leave_hook(void *freed)
{
    UNUSED(freed);
}
void (*pmc_rows_leave_hook)(void *freed) = no_leave_hook;

// Sampling owns counter i on cpu.
static bool sampling_on(unsigned cpu, unsigned i)
{
    struct pmc_counter_cpu c = *(volatile struct pmc_counter_cpu *)pmc_counter(cpu, i);
    return c.period != 0;
}

// True when sampling owns counter i on some CPU. Reservation sets the row's
// bit before looking and sampling claims a counter before looking at the bits
// (hal/counters.c), each with a full fence between, so at least one of two racing
// sides sees the other and backs off.
static bool row_sampling(unsigned i)
{
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
        if (sampling_on(cpu, i))
            return true;
    return false;
}

static bool try_take_free(unsigned i, enum pmc_row_scope scope)
{
    __atomic_fetch_or(&pmc_rows_reserved, 1u << i, __ATOMIC_SEQ_CST);
    if (row_sampling(i)) {
        __atomic_fetch_and(&pmc_rows_reserved, ~(1u << i), __ATOMIC_SEQ_CST);
        return false;
    }
    pmc_rows[i].scope = (uint8_t)scope;
    return true;
}

// Free general-purpose rows, in service on every CPU (rows_lock held): the
// rows any event may need.
static unsigned rows_free_general(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        n += pmc_hw[i].kind == PMC_COUNTER_GENERAL && pmc_rows[i].scope == PMC_ROW_FREE &&
             !pmc_row_off_anywhere(i);
    return n;
}

// The row for a new reservation: a free row that can count the event, a fixed
// counter first (it counts nothing else, and leaves the GP counters to events
// that need them), else the least-shared unpinned row of the scope that can
// (a spare first; only a spare when own). keep_last: the last free
// general-purpose row is not taken (an unprivileged reservation shares a row
// of its scope instead, or takes a free fixed counter).
static int pick_row(uint32_t fits, enum pmc_row_scope scope, bool own, bool keep_last)
{
    for (int pass = 0; pass < 2; pass++) {
        enum pmc_counter_kind kind = pass == 0 ? PMC_COUNTER_FIXED : PMC_COUNTER_GENERAL;
        if (kind == PMC_COUNTER_GENERAL && keep_last && rows_free_general() <= 1)
            break;
        for (unsigned i = 0; i < pmc_ncounters; i++)
            if ((fits >> i) & 1 && pmc_hw[i].kind == kind && pmc_rows[i].scope == PMC_ROW_FREE &&
                !pmc_row_off_anywhere(i) && try_take_free(i, scope))
                return (int)i;
    }
    int best = -1;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if ((fits >> i) & 1 && pmc_rows[i].scope == scope && !pmc_rows[i].pinned &&
            (!own || pmc_rows[i].users == 0) &&
            (best < 0 || pmc_rows[i].users < pmc_rows[best].users))
            best = (int)i;
    return best;
}

static NTSTATUS reserve(KPROFILE_SOURCE source, enum pmc_row_scope scope, bool own, bool keep_last,
                        unsigned *row, const char **reason)
{
    struct pmc_source_query q = {0};
    if ((unsigned)source >= ProfileSourceCount || source == ProfileTime)
        q.reason = "not a hardware event";
    else
        halp_profile_interface->QueryInformation(source, &q);
    uint32_t fits = q.supported ? halp_profile_interface->CountersFor(source) : 0;
    if (!fits) {
        *reason = q.reason && q.reason[0] ? q.reason : "no counter can count it";
        return STATUS_NOT_SUPPORTED;
    }
    uint64_t f = spin_lock_irqsave(&rows_lock);
    NTSTATUS s = STATUS_SUCCESS;
    int i = -1;
    if (reserved_in[scope] >= PMC_ROW_MAX_RESERVED)
        s = STATUS_PMC_TOO_MANY_RUNNING;
    else if ((i = pick_row(fits, scope, own, keep_last)) < 0)
        s = STATUS_INSUFFICIENT_RESOURCES;
    if (NT_SUCCESS(s)) {
        pmc_rows[i].pinned = own;
        pmc_rows[i].users++;
        reserved_in[scope]++;
        *row = (unsigned)i;
    }
    spin_unlock_irqrestore(&rows_lock, f);
    *reason = s == STATUS_PMC_TOO_MANY_RUNNING     ? "too many counting PMCs in this scope"
              : s != STATUS_INSUFFICIENT_RESOURCES ? ""
              : keep_last ? "no free counter but the last general one, kept for privileged users"
                          : "no free counter: sampling or the other scope holds every one that "
                            "can count it";
    return s;
}

NTSTATUS pmc_row_reserve(KPROFILE_SOURCE source, enum pmc_row_scope scope, unsigned *row,
                         const char **reason)
{
    return reserve(source, scope, false, false, row, reason);
}

NTSTATUS pmc_row_reserve_unprivileged(KPROFILE_SOURCE source, enum pmc_row_scope scope,
                                      unsigned *row, const char **reason)
{
    return reserve(source, scope, false, true, row, reason);
}

NTSTATUS pmc_row_reserve_own(KPROFILE_SOURCE source, enum pmc_row_scope scope, unsigned *row,
                             const char **reason)
{
    return reserve(source, scope, true, false, row, reason);
}

// Under rows_lock: the reservations of scope beyond the rows they hold (those
// that share a row); the scope's spares, and how many.
static unsigned excess(enum pmc_row_scope scope)
{
    unsigned held = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        held += pmc_rows[i].scope == scope && pmc_rows[i].users;
    return reserved_in[scope] - held;
}

static uint32_t spares(enum pmc_row_scope scope, unsigned *n)
{
    uint32_t m = 0;
    *n = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (pmc_rows[i].scope == scope && pmc_rows[i].users == 0) {
            m |= 1u << i;
            ++*n;
        }
    return m;
}

// Under rows_lock: the spares of scope beyond its excess become free (no
// count is placed on them from now on). Returns them.
static uint32_t drop_spares(enum pmc_row_scope scope)
{
    unsigned n, keep = excess(scope);
    uint32_t s = spares(scope, &n), freed = 0;
    for (unsigned i = 0; n > keep && i < pmc_ncounters; i++) {
        if ((s >> i) & 1) {
            pmc_rows[i].scope = PMC_ROW_FREE;
            freed |= 1u << i;
            n--;
        }
    }
    return freed;
}

// A row its scope no longer holds keeps its bit in pmc_rows_reserved until no
// CPU has a count on its counter: place() puts a count on another row of its
// scope when its home is busy, so another reservation's count may still be
// loaded there. Sampling takes only counters whose bit is clear
// (hal/counters.c), and a counter it shared with a count would be programmed
// by both: the count would read the sampler's period, and its unload would
// clear the sampler's event select. Each CPU moves such a count off the row
// (pmc_rows_leave_hook: hal/counts.c's pmc_count_leave_rows, with interrupts
// off, after any placement in progress there)
// before the bit goes.
static void free_rows(uint32_t freed)
{
    if (!freed)
        return;
    smp_call_all(pmc_rows_leave_hook, (void *)(uintptr_t)freed); // one round for them all
    uint64_t f = spin_lock_irqsave(&rows_lock);
    for (unsigned row = 0; row < pmc_ncounters; row++)
        if (((freed >> row) & 1) &&
            pmc_rows[row].scope == PMC_ROW_FREE) // not taken again meanwhile
            __atomic_fetch_and(&pmc_rows_reserved, ~(1u << row), __ATOMIC_SEQ_CST);
    spin_unlock_irqrestore(&rows_lock, f);
}

// The last reservation of a row gone, the row is free; one reservation fewer
// may leave its scope a spare too many, which is freed too.
void pmc_row_release(unsigned row)
{
    uint64_t f = spin_lock_irqsave(&rows_lock);
    struct pmc_row *r = &pmc_rows[row];
    uint32_t freed = 0;
    if (r->users != 0) { // 0: released by pmc_shutdown's reset already
        enum pmc_row_scope scope = (enum pmc_row_scope)r->scope;
        reserved_in[scope]--;
        if (--r->users == 0) {
            r->scope = PMC_ROW_FREE; // no count is placed on it from now on
            r->pinned = false;
            freed = 1u << row;
        }
        freed |= drop_spares(scope);
    }
    spin_unlock_irqrestore(&rows_lock, f);
    free_rows(freed);
}

bool pmc_row_pin(unsigned row)
{
    uint64_t f = spin_lock_irqsave(&rows_lock);
    bool ok = pmc_rows[row].users == 1;
    if (ok)
        pmc_rows[row].pinned = true;
    spin_unlock_irqrestore(&rows_lock, f);
    return ok;
}

enum pmc_row_scope pmc_row_scope(unsigned row, unsigned *users)
{
    *users = pmc_rows[row].users;
    return (enum pmc_row_scope)pmc_rows[row].scope;
}

// A spare for a count of source whose scope has more reservations than
// rows: a free row that can count the event, taken as try_take_free takes
// one for a reservation; -1 when none is free or the scope has spares enough.
int pmc_row_take_spare(KPROFILE_SOURCE source, enum pmc_row_scope scope)
{
    uint32_t fits = halp_profile_interface->CountersFor(source);
    uint64_t f = spin_lock_irqsave(&rows_lock);
    int got = -1;
    unsigned n;
    spares(scope, &n);
    bool wanted = n < excess(scope);
    for (unsigned i = 0; wanted && got < 0 && i < pmc_ncounters; i++)
        if ((fits >> i) & 1 && pmc_rows[i].scope == PMC_ROW_FREE && !pmc_row_off_anywhere(i) &&
            try_take_free(i, scope))
            got = (int)i;
    spin_unlock_irqrestore(&rows_lock, f);
    return got;
}

// ---- administration ---------------------------------------------------------

// Under rows_lock, which reservation takes: a row no reservation holds. The
// bit is set before sampling's counter is looked at, and sampling claims the
// counter before it reads the bit (hal/counters.c), each with a full fence
// between, so one of two racing sides backs off: a disable that loses says
// busy. hwpmc refuses with EBUSY a row that process-scope PMCs hold and a
// CPU's row that a PMC holds (FreeBSD hwpmc_mod.c, PMC_OP_PMCADMIN); a
// reserved row here is loaded on every CPU, so any reservation makes it busy.
NTSTATUS pmc_row_admin_counter(unsigned cpu, unsigned row, bool disable)
{
    uint64_t f = spin_lock_irqsave(&rows_lock);
    NTSTATUS s = STATUS_SUCCESS;
    if (disable && (pmc_rows[row].users || ((pmc_rows_reserved >> row) & 1))) {
        s = STATUS_PMC_ROW_BUSY;
    } else {
        pmc_row_mark(cpu, row, disable);
        if (disable && sampling_on(cpu, row)) {
            pmc_row_mark(cpu, row, false);
            s = STATUS_PMC_ROW_BUSY;
        }
    }
    spin_unlock_irqrestore(&rows_lock, f);
    return s;
}

void pmc_rows_reset(void)
{
    memset(pmc_rows, 0, sizeof pmc_rows);
    memset(reserved_in, 0, sizeof reserved_in);
    pmc_rows_reserved = 0;
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
        pmc_rows_disabled[cpu] = 0; // the numbering follows the interface chosen next
}
