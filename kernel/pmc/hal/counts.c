// Counting on the hardware counters: each CPU's loaded counts and their
// rotation, on the rows reserved for their scope (hal/rows.c); see
// hal/counts.h.
#include "pmc/hal/counts.h"

#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"

#include "core/smp.h"
#include "core/spinlock.h"
#include "core/uaccess.h"

#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmu_regs.h"
#include "pmc/hal/rows.h"

// Counts may be loaded: from pmc_init's choice to pmc_shutdown's
// pmc_count_unload_all, which saves them first (the no-PMU interface that
// follows has no counting operations).
static volatile bool counting_live;

uint32_t pmc_count_rdpmc_index(unsigned row)
{
    const struct pmc_counter_hw *hw = &pmc_hw[row];
    return hw->kind == PMC_COUNTER_FIXED ? (1u << 30) | hw->number : hw->number;
}

// ---- each CPU's counts ---------------------------------------------------------

// The scopes use disjoint rows, so each rotates on its own: the k-th count of
// a scope (in want[] order) is placed first after turn[scope] rotations.
static struct count_cpu {
    struct pmc_count *want[PMC_COUNT_MAX_WANT];
    unsigned nwant;
    unsigned turn[3];    // rotations per scope
    unsigned waiting[3]; // wanted counts of each scope with no counter
    struct pmc_count *on[PMC_MAX_COUNTERS];
    uint32_t dirty; // counters that may hold a value someone else left there
} percount[MAX_CPUS];

void pmc_count_init(struct pmc_count *c, KPROFILE_SOURCE source, unsigned row, bool user_read)
{
    *c = (struct pmc_count){
        .source = source,
        .levels = PMC_LEVELS_ALL,
        .scope = pmc_rows[row].scope,
        .home = (uint8_t)row,
        .user_read = user_read,
        .counter = -1,
        .cpu = -1,
    };
}

// Time wanted and time loaded, up to now.
static void advance(struct pmc_count *c, uint64_t now)
{
    uint64_t d = now - c->since_ns;
    c->enabled_ns += d;
    if (c->counter >= 0)
        c->running_ns += d;
    c->since_ns = now;
}

// What counter i has counted since it was loaded (or last read), into value.
//
// A trace logger's hook reads a count from an NMI too (a sample delivered as
// NMI, pmi=nmi: logger_value), on the CPU that has it loaded, and clearing IF
// does not hold an NMI off (Intel SDM vol. 3A, 6.8.1 "Masking Maskable
// Hardware Interrupts"): one may land between any two instructions here,
// under KVM typically right after the intercepted rdmsr. So, as Linux's
// x86_perf_event_update (arch/x86/events/core.c) does, the events since load
// are claimed by moving load to the new reading with a compare-and-exchange,
// retried with a fresh reading when an NMI moved load meanwhile, and only
// then added to value: each event is added once, by whichever side claimed
// it, and a reading never goes backwards.
static void harvest(struct pmc_count *c, unsigned i)
{
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    uint64_t prev = __atomic_load_n(&c->load, __ATOMIC_RELAXED), now;
    do
        now = pmc_rdmsr(hw->ctr_msr) & hw->mask;
    while (!__atomic_compare_exchange_n(&c->load, &prev, now, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
    __atomic_fetch_add(&c->value, (now - prev) & hw->mask, __ATOMIC_RELAXED);
}

// An NMI on this CPU reads c->counter: it names a counter only while that
// counter holds c's count (set after the load, cleared after the last read).
static void publish_counter(struct pmc_count *c, int counter)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST); // the NMI is this CPU's: order against it only
    __atomic_store_n(&c->counter, (int8_t)counter, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

// Counter i counts for someone other than the running process: a sampling
// period, or a system-scope count.
static bool foreign_live(const struct count_cpu *cc, unsigned cpu, unsigned i)
{
    return pmc_counter(cpu, i)->period || (cc->on[i] && cc->on[i]->scope == PMC_ROW_SYSTEM);
}

// CR4.PCE (bit 8) lets user mode execute rdpmc on every counter (Intel SDM vol.
// 3A, 2.5 "Control Registers"; AMD APM vol. 3, RDPMC), not only its own. It is
// on while this CPU has a count loaded that its owner reads itself, and only
// while every other counter holds that process's counts or zero: counters
// others left a value in are cleared first (Linux's
// x86_pmu_clear_dirty_counters, arch/x86/events/core.c), and while a sampling
// period or a system-scope count is live on another counter CR4.PCE stays
// off, and the reader's rdpmc is emulated instead (pmc_count_rdpmc_gp).
static void update_pce(struct count_cpu *cc)
{
    unsigned cpu = cpu_id();
    bool reader = false, foreign = false;
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        reader |= cc->on[i] && cc->on[i]->user_read;
        foreign |= foreign_live(cc, cpu, i);
    }
    bool want = reader && !foreign;
    for (unsigned i = 0; want && cc->dirty && i < pmc_ncounters; i++) {
        if (((cc->dirty >> i) & 1) && !cc->on[i]) {
            pmc_wrmsr(pmc_hw[i].ctr_msr, 0); // stopped: neither loaded nor sampling
            cc->dirty &= ~(1u << i);
        }
    }
    uint64_t cr4 = read_cr4();
    if (want != ((cr4 & CR4_PCE) != 0))
        write_cr4(want ? cr4 | CR4_PCE : cr4 & ~CR4_PCE);
}

static bool place_on(struct count_cpu *cc, struct pmc_count *c, unsigned i)
{
    if (cc->on[i] || pmc_rows[i].scope != c->scope || (pmc_rows[i].pinned && i != c->home) ||
        !((halp_profile_interface->CountersFor(c->source) >> i) & 1))
        return false;
    c->load = c->value & pmc_hw[i].max_period; // the low bits a write keeps as written
    cc->on[i] = c;
    pmc_counters_loaded[cpu_id()] |= 1u << i;
    halp_profile_interface->StartCounting(i, c->source, c->levels, c->load);
    publish_counter(c, (int)i);
    return true;
}

static void unload(struct count_cpu *cc, struct pmc_count *c, uint64_t now)
{
    unsigned i = (unsigned)c->counter;
    advance(c, now);
    harvest(c, i);
    cc->dirty |= 1u << i;
    pmc_counters_loaded[cpu_id()] &= ~(1u << i);
    halp_profile_interface->StopCounting(i);
    cc->on[i] = NULL;
    publish_counter(c, -1);
}

// A count whose home row is pinned: read from user mode (its reader was given
// that counter's index) or by a trace logger (its records hold whole counts).
// It goes only on its home row, always, and is never rotated out.
static bool pinned(const struct pmc_count *c)
{
    return pmc_rows[c->home].pinned;
}

// Load c on its home row if that counter is free here, else another of its
// scope. A pinned count takes its home row from a count placed there before
// the row was pinned.
static bool place(struct count_cpu *cc, struct pmc_count *c, uint64_t now)
{
    if (pinned(c) && cc->on[c->home] && cc->on[c->home] != c)
        unload(cc, cc->on[c->home], now);
    if (place_on(cc, c, c->home))
        return true;
    for (unsigned i = 0; !pinned(c) && i < pmc_ncounters; i++)
        if (i != c->home && place_on(cc, c, i))
            return true;
    return false;
}

// Load the wanted counts of scope that have no counter, in rotation order;
// pinned counts first (pass 0). A count that finds no counter of its scope
// free here takes a spare where a free row can count its event: a count
// whose reservation shares a row (made while no row was free: a logger's or
// sampling's counters taken, or rows disabled) is not left to wait for
// counters freed since, nor put on the row a later reservation takes.
static void fill_scope(struct count_cpu *cc, enum pmc_row_scope scope, uint64_t now)
{
    struct pmc_count *order[PMC_COUNT_MAX_WANT];
    unsigned n = 0;
    for (unsigned k = 0; k < cc->nwant; k++)
        if (cc->want[k]->scope == scope)
            order[n++] = cc->want[k];
    cc->waiting[scope] = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned k = 0; k < n; k++) {
            struct pmc_count *c = order[(cc->turn[scope] + k) % n];
            if (c->counter >= 0 || pinned(c) != (pass == 0))
                continue;
            advance(c, now); // its running time starts here, if it is placed
            if (place(cc, c, now))
                continue;
            int spare =
                pinned(c) ? -1 : pmc_row_take_spare(c->source, (enum pmc_row_scope)c->scope);
            if (spare < 0 || !place_on(cc, c, (unsigned)spare))
                cc->waiting[scope]++;
        }
    }
}

static void fill(struct count_cpu *cc, uint64_t now)
{
    if (READ_ONCE(counting_live)) {
        fill_scope(cc, PMC_ROW_THREAD, now);
        fill_scope(cc, PMC_ROW_SYSTEM, now);
    }
    update_pce(cc);
}

void pmc_count_leave_rows(void *arg)
{
    uint32_t freed = (uint32_t)(uintptr_t)arg;
    struct count_cpu *cc = &percount[cpu_id()];
    uint64_t now = clock_ns();
    bool moved = false;
    for (unsigned row = 0; row < pmc_ncounters; row++) {
        struct pmc_count *c = (freed >> row) & 1 ? cc->on[row] : NULL;
        if (!c || pmc_rows[row].scope == c->scope) // the scope's again: it may stay
            continue;
        unload(cc, c, now);
        moved = true;
    }
    if (moved)
        fill(cc, now);
}

void pmc_count_in(struct pmc_count *c, uint64_t now)
{
    struct count_cpu *cc = &percount[cpu_id()];
    if (c->cpu >= 0 || cc->nwant == PMC_COUNT_MAX_WANT)
        return; // already wanted; a full list cannot happen (hal/counts.h's limits)
    c->cpu = (int16_t)cpu_id();
    c->since_ns = now;
    cc->want[cc->nwant++] = c;
    fill(cc, now);
}

void pmc_count_out(struct pmc_count *c, uint64_t now)
{
    if (c->cpu < 0)
        return;
    struct count_cpu *cc = &percount[c->cpu]; // this CPU's
    if (c->counter >= 0)
        unload(cc, c, now);
    advance(c, now);
    unsigned k = 0;
    while (k < cc->nwant && cc->want[k] != c)
        k++;
    c->cpu = -1;
    if (k == cc->nwant)
        return; // forgotten by pmc_shutdown's reset
    memmove(&cc->want[k], &cc->want[k + 1], (cc->nwant - k - 1) * sizeof cc->want[0]);
    cc->nwant--;
    fill(cc, now);
}

uint64_t pmc_count_read(struct pmc_count *c)
{
    int i = __atomic_load_n(&c->counter, __ATOMIC_RELAXED);
    if (i >= 0 && c->cpu == (int)cpu_id())
        harvest(c, (unsigned)i);
    return __atomic_load_n(&c->value, __ATOMIC_RELAXED);
}

void pmc_count_sync(uint64_t now)
{
    struct count_cpu *cc = &percount[cpu_id()];
    for (unsigned k = 0; k < cc->nwant; k++) {
        advance(cc->want[k], now);
        if (cc->want[k]->counter >= 0)
            harvest(cc->want[k], (unsigned)cc->want[k]->counter);
    }
}

bool pmc_count_multiplexing(void)
{
    const struct count_cpu *cc = &percount[cpu_id()];
    return cc->waiting[PMC_ROW_THREAD] || cc->waiting[PMC_ROW_SYSTEM];
}

// Each scope with counts waiting unloads its counts and starts its next turn.
void pmc_count_tick(uint64_t now)
{
    struct count_cpu *cc = &percount[cpu_id()];
    if (!pmc_count_multiplexing())
        return;
    for (unsigned k = 0; k < cc->nwant; k++) { // unload and fill bring the times up to date
        struct pmc_count *c = cc->want[k];
        if (c->counter >= 0 && cc->waiting[c->scope] && !pinned(c))
            unload(cc, c, now);
    }
    for (unsigned s = PMC_ROW_THREAD; s <= PMC_ROW_SYSTEM; s++)
        cc->turn[s] += cc->waiting[s] != 0;
    fill(cc, now);
}

void pmc_count_go_live(void)
{
    WRITE_ONCE(counting_live, true);
}

void pmc_count_stop_loading(void)
{
    WRITE_ONCE(counting_live, false);
}

void pmc_count_unload_all(uint64_t now)
{
    struct count_cpu *cc = &percount[cpu_id()];
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (cc->on[i])
            unload(cc, cc->on[i], now);
    for (unsigned s = PMC_ROW_THREAD; s <= PMC_ROW_SYSTEM; s++)
        cc->waiting[s] = 0;
    update_pce(cc);
}

void pmc_count_sampling_changed(unsigned i, bool freed)
{
    struct count_cpu *cc = &percount[cpu_id()];
    if (freed)
        cc->dirty |= 1u << i;
    update_pce(cc);
}

// The rdpmc the CPU refused (CR4.PCE off): the reader's own counter, zero
// for any other counter of the interface; a #GP still for an index that names
// none, or when no count this CPU has loaded is read from user mode.
bool pmc_count_rdpmc_value(uint32_t ecx, uint64_t *value)
{
    const struct count_cpu *cc = &percount[cpu_id()];
    bool reader = false;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        reader |= cc->on[i] && cc->on[i]->user_read;
    for (unsigned i = 0; reader && i < pmc_ncounters; i++) {
        if (pmc_count_rdpmc_index(i) != ecx)
            continue;
        bool own = cc->on[i] && cc->on[i]->user_read;
        *value = own ? pmc_rdmsr(pmc_hw[i].ctr_msr) & pmc_hw[i].mask : 0;
        return true;
    }
    return false;
}

bool pmc_count_rdpmc_gp(struct trapframe *tf)
{
    uint8_t insn[2];
    uint64_t v;
    if (!NT_SUCCESS(copy_from_user(insn, tf->rip, sizeof insn)) || insn[0] != 0x0F ||
        insn[1] != 0x33 || !pmc_count_rdpmc_value((uint32_t)tf->rcx, &v))
        return false;
    tf->rax = (uint32_t)v;
    tf->rdx = v >> 32;
    tf->rip += sizeof insn;
    return true;
}

void pmc_count_reset(void)
{
    pmc_counter_sampling_hook = pmc_count_sampling_changed;
    pmc_rows_leave_hook = pmc_count_leave_rows;
    pmc_rows_reset();
    memset(percount, 0, sizeof percount);
    for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
        percount[cpu].dirty = ~0u; // whatever firmware or the last session left
}
