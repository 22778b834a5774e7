// The PMC code on several CPUs at once: model_interleave runs a program on
// every model CPU as a coroutine, switching at every register access, so
// context switches of counted processes, a self-monitoring reader migrating
// between CPUs, system-scope counts, sampling started and stopped through
// cross-CPU calls, row reservations and PMIs at arbitrary points interleave,
// in an order drawn from a seed. After every switch, for each CPU that is in
// ring 3:
//   - with CR4.PCE set, every counter but the reader's holds zero (what
//     ring 3 can rdpmc is its own count or nothing);
//   - a count of reference cycles sits on FIXED_CTR2 or nowhere (no count
//     mixes the fixed and the GP versions of an event);
// and at the end: no overflow signalled a masked LVTPC once the handler could
// have unmasked it, none was sampled by an unrelated PMI, the reader counted
// exactly its own events, nothing faulted.
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "pmc/hal/counts.h"
#include "tests.h"
#include "../xorshift.h"

#define UIP 0x401000ull
#define OPS 60

enum running { IDLE, VICTIM, READER };

struct world {
    int r_reader, r_victim, r_sys, r_ref[2];
    struct pmc_count reader; // one process: on reader_cpu, or switched out (-1)
    int reader_cpu;
    uint64_t reader_expected; // its event retired in ring 3 while it ran
    struct pmc_count victim[MODEL_MAX_CPUS], sys[MODEL_MAX_CPUS], ref[2][MODEL_MAX_CPUS];
    unsigned runs[MODEL_MAX_CPUS]; // enum running
    bool sys_in[MODEL_MAX_CPUS];
    bool sampling;
    uint64_t rng[MODEL_MAX_CPUS];
    uint64_t now;
    unsigned pce_leaks, ref_on_gp, rdpmc_wrong, checks;
};

static unsigned rnd(struct world *w, unsigned cpu, unsigned n)
{
    return (unsigned)(xorshift64(&w->rng[cpu]) % n);
}

static uint64_t counter_value(unsigned cpu, unsigned i)
{
    return pmc_hw[i].kind == PMC_COUNTER_FIXED ? model_fixed_ctr(cpu, pmc_hw[i].number)
                                               : model_gp_ctr(cpu, pmc_hw[i].number);
}

// hal/counts.c's per-CPU calls, with this CPU's interrupts off.
static void in_out(struct world *w, struct pmc_count *c, bool in)
{
    uint64_t f = irq_save();
    w->now += 1000;
    if (in)
        pmc_count_in(c, w->now);
    else
        pmc_count_out(c, w->now);
    irq_restore(f);
}

static void retire_some(struct world *w, unsigned cpu)
{
    static const enum model_event evs[] = {EV_INSTRUCTIONS, EV_CORE_CYCLES, EV_REF_CYCLES,
                                           EV_LLC_REFS,     EV_LLC_MISSES,  EV_BRANCHES,
                                           EV_BRANCH_MISSES};
    for (size_t k = 0; k < sizeof(evs) / sizeof(evs[0]); k++) {
        uint64_t n = 100 + rnd(w, cpu, 1500);
        if (evs[k] == EV_LLC_MISSES && w->runs[cpu] == READER)
            w->reader_expected += n;
        model_retire(cpu, evs[k], n, UIP + 16 * cpu, true);
    }
}

// The reader's rdpmc of every counter, in ring 3 (emulated while CR4.PCE is
// off): its own counter's value, or 0.
static void reader_reads(struct world *w, unsigned cpu)
{
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        uint32_t ecx = pmc_count_rdpmc_index(i);
        uint64_t v = 0;
        bool ok = model_rdpmc(cpu, ecx, true, &v) || model_user_rdpmc(cpu, ecx, &v);
        bool own = w->reader.counter == (int)i;
        uint64_t want = own ? counter_value(cpu, i) & pmc_hw[i].mask : 0;
        w->rdpmc_wrong += !ok || v != want;
    }
}

// What a CPU runs: nothing (idle), its own victim process (its count of
// branches and two of reference cycles), or the reader, which runs on one CPU
// at a time and is switched in only once its switch-out elsewhere has
// completed (the scheduler's rule, which hal/counts.c relies on: a count is
// wanted on one CPU at a time).
static void victim_in_out(struct world *w, unsigned cpu, bool in)
{
    in_out(w, &w->victim[cpu], in);
    for (unsigned k = 0; k < 2 && w->r_ref[0] >= 0; k++)
        in_out(w, &w->ref[k][cpu], in);
}

static void switch_out(struct world *w, unsigned cpu)
{
    if (w->runs[cpu] == VICTIM) {
        victim_in_out(w, cpu, false);
    } else if (w->runs[cpu] == READER) {
        in_out(w, &w->reader, false);
        w->reader_cpu = -1; // only now may another CPU switch it in
    }
    w->runs[cpu] = IDLE;
}

static void context_switch(struct world *w, unsigned cpu)
{
    enum running next = (enum running)rnd(w, cpu, 3);
    if (next == READER && w->reader_cpu >= 0 && w->reader_cpu != (int)cpu)
        next = IDLE; // running elsewhere
    if (next == w->runs[cpu])
        return;
    if (next == READER)
        w->reader_cpu = (int)cpu; // claimed before anything can run elsewhere
    switch_out(w, cpu);
    w->runs[cpu] = next;
    if (next == VICTIM)
        victim_in_out(w, cpu, true);
    else if (next == READER)
        in_out(w, &w->reader, true);
}

static void toggle_sampling(struct world *w)
{
    if (w->sampling)
        HalStopProfileInterrupt(ProfileLLCReference, NULL);
    else
        HalStartProfileInterrupt(ProfileLLCReference, NULL);
    w->sampling = !w->sampling;
}

static void one_op(struct world *w, unsigned cpu)
{
    switch (rnd(w, cpu, 6)) {
    case 0: retire_some(w, cpu); break;
    case 1: context_switch(w, cpu); break;
    case 2: in_out(w, &w->sys[cpu], w->sys_in[cpu] = !w->sys_in[cpu]); break;
    case 3:
        if (cpu == 1)
            toggle_sampling(w);
        break;
    case 4:
        if (w->reader_cpu == (int)cpu && w->runs[cpu] == READER)
            reader_reads(w, cpu);
        break;
    default: {
        unsigned row;
        const char *why;
        if (pmc_row_reserve(ProfileBranchMispredictsRetired, PMC_ROW_THREAD, &row, &why) ==
            STATUS_SUCCESS)
            pmc_row_release(row);
    }
    }
}

static void program(unsigned cpu, void *arg)
{
    struct world *w = arg;
    for (unsigned k = 0; k < OPS; k++) {
        one_op(w, cpu);
        model_user_point();
    }
    switch_out(w, cpu);
    if (w->sys_in[cpu])
        in_out(w, &w->sys[cpu], w->sys_in[cpu] = false);
}

static void check(unsigned cpu, void *arg)
{
    struct world *w = arg;
    w->checks++;
    if (model_cr4(cpu) & CR4_PCE)
        for (unsigned i = 0; i < pmc_ncounters; i++)
            w->pce_leaks += !(w->runs[cpu] == READER && w->reader.counter == (int)i) &&
                            counter_value(cpu, i) != 0;
    for (unsigned k = 0; k < 2 && w->r_ref[0] >= 0; k++) {
        int c = w->ref[k][cpu].cpu == (int)cpu ? w->ref[k][cpu].counter : -1;
        w->ref_on_gp += c >= 0 && !(pmc_hw[c].kind == PMC_COUNTER_FIXED && pmc_hw[c].number == 2);
    }
}

static int reserve(KPROFILE_SOURCE s, enum pmc_row_scope scope)
{
    unsigned row;
    const char *why;
    return pmc_row_reserve(s, scope, &row, &why) == STATUS_SUCCESS ? (int)row : -1;
}

static bool setup(struct world *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->reader_cpu = -1;
    for (unsigned c = 0; c < MODEL_MAX_CPUS; c++)
        w->rng[c] = seed * 7919 + c * 104729 + 1;
    w->r_reader = reserve(ProfileLLCMisses, PMC_ROW_THREAD);
    w->r_victim = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    w->r_sys = reserve(ProfileBranchMispredictsRetired, PMC_ROW_SYSTEM);
    w->r_ref[0] = w->r_ref[1] = -1;
    if (supported(ProfileUnhaltedReferenceCycles)) {
        w->r_ref[0] = reserve(ProfileUnhaltedReferenceCycles, PMC_ROW_THREAD);
        w->r_ref[1] = reserve(ProfileUnhaltedReferenceCycles, PMC_ROW_THREAD);
    }
    if (w->r_reader < 0 || w->r_victim < 0 || w->r_sys < 0 || !pmc_row_pin((unsigned)w->r_reader))
        return false;
    pmc_count_init(&w->reader, ProfileLLCMisses, (unsigned)w->r_reader, true);
    for (unsigned c = 0; c < MODEL_MAX_CPUS; c++) {
        pmc_count_init(&w->victim[c], ProfileBranchInstructionRetired, (unsigned)w->r_victim,
                       false);
        pmc_count_init(&w->sys[c], ProfileBranchMispredictsRetired, (unsigned)w->r_sys, false);
        for (unsigned k = 0; k < 2 && w->r_ref[0] >= 0; k++)
            pmc_count_init(&w->ref[k][c], ProfileUnhaltedReferenceCycles, (unsigned)w->r_ref[k],
                           false);
    }
    set_interval(ProfileLLCReference, 1000);
    return true;
}

static void teardown(struct world *w)
{
    if (w->sampling)
        HalStopProfileInterrupt(ProfileLLCReference, NULL);
    int rows[] = {w->r_reader, w->r_victim, w->r_sys, w->r_ref[0], w->r_ref[1]};
    for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++)
        if (rows[k] >= 0)
            pmc_row_release((unsigned)rows[k]);
}

struct tally {
    unsigned runs, bad_setup, pce_leaks, ref_on_gp, rdpmc_wrong, reader_wrong;
    uint64_t masked, misattributed, switches, checks;
};

static void one_run(const struct model_config *m, uint64_t seed, struct tally *t)
{
    static struct world w;
    boot(m);
    if (!setup(&w, seed)) {
        t->bad_setup++;
        finish(m->name);
        return;
    }
    t->switches += model_interleave(seed, program, &w, check, 2000000);
    teardown(&w);
    t->runs++;
    t->pce_leaks += w.pce_leaks;
    t->ref_on_gp += w.ref_on_gp;
    t->rdpmc_wrong += w.rdpmc_wrong;
    t->checks += w.checks;
    t->reader_wrong += w.reader.value != w.reader_expected;
    for (unsigned c = 0; c < m->ncpus; c++) {
        t->masked += model_masked_signals(c);
        t->misattributed += model_misattributed(c);
    }
    finish(m->name);
}

static void interleave(const struct model_config *base, unsigned seeds)
{
    struct model_config m = *base;
    char name[80];
    snprintf(name, sizeof name, "%s, 4 CPUs interleaved", base->name);
    m.name = name;
    m.ncpus = 4;
    m.handler_insns = 40;
    tap_section(name);
    struct tally t = {0};
    for (uint64_t seed = 1; seed <= seeds; seed++)
        one_run(&m, seed, &t);
    tap_ok(t.bad_setup == 0 && t.runs == seeds, "%s: %u runs, %llu switches, %llu ring-3 checks",
           name, t.runs, (unsigned long long)t.switches, (unsigned long long)t.checks);
    tap_eq(t.pce_leaks, 0, "%s: with CR4.PCE set, every counter but the reader's holds 0", name);
    tap_eq(t.rdpmc_wrong, 0, "%s: the reader's rdpmc of every counter: its own value or 0", name);
    tap_eq(t.ref_on_gp, 0, "%s: reference-cycle counts only ever on FIXED_CTR2", name);
    tap_eq(t.reader_wrong, 0, "%s: the migrating reader counted exactly its own events", name);
    tap_eq(t.masked, 0, "%s: no overflow signalled a masked LVTPC while two counters ran", name);
    tap_eq(t.misattributed, 0, "%s: no overflow sampled by an unrelated PMI", name);
}

void test_interleave(void)
{
    struct model_config amd = MODEL_AMD_V2;
    amd.amd_lvtpc_masks = true;
    struct model_config amd_legacy = MODEL_AMD_LEGACY;
    amd_legacy.amd_lvtpc_masks = true;
    interleave(&MODEL_INTEL_V4, 40);
    interleave(&MODEL_INTEL_KVM_V2, 20);
    interleave(&amd, 20);
    interleave(&amd_legacy, 20);
}
