// Counting on the hardware counters (pmc/hal/counts.h) against the model: rows
// reserved per scope beside sampling, values saved and restored across
// context switches and migrations, multiplexing, counter widths, ring-3
// rdpmc, counting through PMIs, and the PMI path's own events.
//
// hal/counts.c runs on "the current CPU with interrupts off": every per-CPU call
// goes through model_on_cpu. Times passed to hal/counts.c are the test's own
// clock, so that the model's MSR costs do not enter the expected figures.
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "pmc/hal/counts.h"
#include "tests.h"

#define UIP 0x401000ull           // where user-mode events retire
#define KIP 0xFFFFFFFF80100000ull // where kernel-mode events retire
#define D   1000000ull            // one scheduling step: 1 ms
#define M47 ((1ull << 47) - 1)
#define M31 0x7FFFFFFFull

// The configs every behaviour is checked on.
static struct model_config v4_fw, kvm_v2_legacy;

static void make_configs(void)
{
    v4_fw = MODEL_INTEL_V4;
    v4_fw.name = "intel-v4-full-width";
    v4_fw.full_width = true;
    kvm_v2_legacy = MODEL_INTEL_KVM_V2;
    kvm_v2_legacy.name = "intel-kvm-v2-legacy-writes";
    kvm_v2_legacy.full_width = false;
}

static const struct model_config *const configs[] = {
    &MODEL_INTEL_V4, &v4_fw, &kvm_v2_legacy, &MODEL_INTEL_V1, &MODEL_AMD_LEGACY, &MODEL_AMD_V2,
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

static const char *name(void)
{
    return model_config()->name;
}

static const char *scope_name(enum pmc_row_scope s)
{
    return s == PMC_ROW_THREAD ? "THREAD" : s == PMC_ROW_SYSTEM ? "SYSTEM" : "FREE";
}

// ---- hal/counts.c's per-CPU operations, run as code on a model CPU ----

enum op { OP_IN, OP_OUT, OP_SYNC, OP_TICK, OP_MUX, OP_PCE };

struct call {
    enum op op;
    struct pmc_count *c;
    uint64_t now;
    bool result;
};

static void on_cpu_fn(void *arg)
{
    struct call *k = arg;
    switch (k->op) {
    case OP_IN: pmc_count_in(k->c, k->now); break;
    case OP_OUT: pmc_count_out(k->c, k->now); break;
    case OP_SYNC: pmc_count_sync(k->now); break;
    case OP_TICK: pmc_count_tick(k->now); break;
    case OP_MUX: k->result = pmc_count_multiplexing(); break;
    case OP_PCE: k->result = (read_cr4() & CR4_PCE) != 0; break;
    }
}

static bool on(unsigned cpu, enum op op, struct pmc_count *c, uint64_t now)
{
    struct call k = {op, c, now, false};
    model_on_cpu(cpu, on_cpu_fn, &k);
    return k.result;
}

static void count_in(unsigned cpu, struct pmc_count *c, uint64_t now)
{
    on(cpu, OP_IN, c, now);
}
static void count_out(unsigned cpu, struct pmc_count *c, uint64_t now)
{
    on(cpu, OP_OUT, c, now);
}
static void count_sync(unsigned cpu, uint64_t now)
{
    on(cpu, OP_SYNC, NULL, now);
}
static void count_tick(unsigned cpu, uint64_t now)
{
    on(cpu, OP_TICK, NULL, now);
}
static bool multiplexing(unsigned cpu)
{
    return on(cpu, OP_MUX, NULL, 0);
}
static bool pce(unsigned cpu)
{
    return on(cpu, OP_PCE, NULL, 0);
}

// ---- reservations ----

static int try_reserve(KPROFILE_SOURCE s, enum pmc_row_scope scope, NTSTATUS *st, const char **why)
{
    unsigned row = 0;
    *why = NULL;
    *st = pmc_row_reserve(s, scope, &row, why);
    return *st == STATUS_SUCCESS ? (int)row : -1;
}

// A reservation expected to succeed (a check); -1 when it did not.
static int reserve(KPROFILE_SOURCE s, enum pmc_row_scope scope)
{
    NTSTATUS st;
    const char *why;
    int row = try_reserve(s, scope, &st, &why);
    if (!STATUS_EQ(st, STATUS_SUCCESS, "%s: reserve a %s row for %s", name(), scope_name(scope),
                   src(s)))
        tap_diag("reason: %s", why ? why : "(none)");
    return row;
}

static void release(int row)
{
    if (row >= 0)
        pmc_row_release((unsigned)row);
}

static unsigned users_of(int row)
{
    unsigned users = 0;
    pmc_row_scope((unsigned)row, &users);
    return users;
}

// True when no row is reserved and every row is free.
static bool all_rows_free(void)
{
    bool free_ = pmc_rows_reserved == 0;
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        unsigned users = 1;
        free_ = free_ && pmc_row_scope(i, &users) == PMC_ROW_FREE && users == 0;
    }
    return free_;
}

// ---- the hardware behind a row, read from the model ----

static const char *row_desc(int row)
{
    static char buf[4][40];
    static unsigned n;
    char *b = buf[n++ % 4];
    if (row < 0)
        snprintf(b, sizeof(buf[0]), "none");
    else
        snprintf(b, sizeof(buf[0]), "row %d (%s%u)", row,
                 pmc_hw[row].kind == PMC_COUNTER_FIXED ? "FIXED_CTR" : "GP", pmc_hw[row].number);
    return b;
}

static uint64_t row_ctr(unsigned cpu, unsigned row)
{
    return pmc_hw[row].kind == PMC_COUNTER_FIXED ? model_fixed_ctr(cpu, pmc_hw[row].number)
                                                 : model_gp_ctr(cpu, pmc_hw[row].number);
}

// The counter's enables (event select EN, or its IA32_FIXED_CTR_CTRL ring bits).
static bool row_enabled(unsigned cpu, unsigned row)
{
    if (pmc_hw[row].kind == PMC_COUNTER_FIXED)
        return (model_fixed_ctrl(cpu) >> (4 * pmc_hw[row].number)) &
               (FIXED_CTR_CTRL_OS | FIXED_CTR_CTRL_USR);
    return (model_gp_ctl(cpu, pmc_hw[row].number) & PERFEVTSEL_EN) != 0;
}

// The counter's PMI enable (event select INT, or the fixed field's PMI bit).
static bool row_interrupts(unsigned cpu, unsigned row)
{
    if (pmc_hw[row].kind == PMC_COUNTER_FIXED)
        return (model_fixed_ctrl(cpu) >> (4 * pmc_hw[row].number)) & FIXED_CTR_CTRL_PMI;
    return (model_gp_ctl(cpu, pmc_hw[row].number) & PERFEVTSEL_INT) != 0;
}

static bool has_global(const struct model_config *m)
{
    return (m->vendor == MODEL_INTEL && m->version >= 2) ||
           (m->vendor == MODEL_AMD && m->perfmon_v2);
}

// The counter's bit in IA32_PERF_GLOBAL_CTRL (PMCn at bit n, FIXED_CTRn at
// bit 32 + n: Intel SDM vol. 3B, 21.2.2) or AMD's PerfCntrGlobalCtl (PERF_CTRn
// at bit n: AMD APM vol. 2, 13.2, PerfMonV2).
static bool row_global_on(unsigned cpu, unsigned row)
{
    unsigned bit =
        pmc_hw[row].kind == PMC_COUNTER_FIXED ? 32 + pmc_hw[row].number : pmc_hw[row].number;
    return (model_global_ctrl(cpu) >> bit) & 1;
}

// Width of the counter behind row, from the machine's description.
static unsigned row_width(unsigned row)
{
    const struct model_config *m = model_config();
    if (m->vendor == MODEL_AMD)
        return 48; // APM vol. 2, 13.2.1: PERF_CTRn are 48 bits
    return pmc_hw[row].kind == PMC_COUNTER_FIXED ? m->fixed_width : m->gp_width;
}

// The low bits of a count a counter is loaded with: 31 with legacy Intel
// writes (bit 31 sign-extends, SDM vol. 3B, 21.2.6), else 47.
static uint64_t load_mask(void)
{
    const struct model_config *m = model_config();
    return m->vendor == MODEL_INTEL && !m->full_width ? M31 : M47;
}

// GP counters: every one counts any architectural event (Intel) or any of the
// events used here (AMD).
static unsigned gp_rows(const struct model_config *m)
{
    if (m->vendor == MODEL_AMD)
        return m->perfmon_v2 && m->v2_counters ? m->v2_counters : m->perfctr_core ? 6 : 4;
    return m->gp;
}

// ---- a. save and restore across switches and migrations ----

struct tally {
    uint64_t a, b, idle, cpu[2];
};

// Retire n instructions on cpu (two thirds in ring 3, a third in ring 0) for
// whoever runs there, and branches, which no count here counts.
static void run(struct tally *t, unsigned cpu, uint64_t n, uint64_t *who)
{
    model_retire(cpu, EV_INSTRUCTIONS, n - n / 3, UIP, true);
    model_retire(cpu, EV_INSTRUCTIONS, n / 3, KIP, false);
    model_retire(cpu, EV_BRANCHES, n / 5 + 1, UIP, true);
    *who += n;
    t->cpu[cpu] += n;
}

// A section titled "what: machine", on a freshly booted model of m.
static void begin(const char *what, const struct model_config *m)
{
    char title[128];
    snprintf(title, sizeof(title), "%s: %s", what, m->name);
    tap_section(title);
    boot(m);
}

static void check_switches(const struct model_config *m)
{
    begin("counts across context switches and migrations", m);
    // A's and B's process-scope counts and a system-scope count on each CPU,
    // all of instructions. With two GP rows (v1) B shares A's THREAD row.
    int ra = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    int rs = reserve(ProfileInstructionRetired, PMC_ROW_SYSTEM);
    int rb = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    if (ra < 0 || rs < 0 || rb < 0)
        goto out;
    tap_ok(rs != ra && rs != rb, "%s: the SYSTEM row (%s) is neither THREAD row (%s, %s)", name(),
           row_desc(rs), row_desc(ra), row_desc(rb));
    struct pmc_count a, b, sys[2];
    pmc_count_init(&a, ProfileInstructionRetired, (unsigned)ra, false);
    pmc_count_init(&b, ProfileInstructionRetired, (unsigned)rb, false);
    for (unsigned c = 0; c < 2; c++)
        pmc_count_init(&sys[c], ProfileInstructionRetired, (unsigned)rs, false);

    struct tally t = {0};
    uint64_t now = 5 * D;
    count_in(0, &sys[0], now);
    count_in(1, &sys[1], now);
    // 1: A runs on cpu0; cpu1 idle.
    count_in(0, &a, now);
    run(&t, 0, 100003, &t.a);
    run(&t, 1, 7001, &t.idle);
    now += D;
    // 2: B replaces A on cpu0; A migrates to cpu1.
    count_out(0, &a, now);
    count_in(0, &b, now);
    count_in(1, &a, now);
    run(&t, 0, 200011, &t.b);
    run(&t, 1, 300017, &t.a);
    now += D;
    // 3: B sleeps: cpu0 idle.
    count_out(0, &b, now);
    tap_ok(b.cpu == -1 && b.counter == -1 && b.value == t.b,
           "%s: B switched out: wanted nowhere, unloaded, value %llu = its events", name(),
           (unsigned long long)b.value);
    run(&t, 0, 50021, &t.idle);
    run(&t, 1, 30029, &t.a);
    now += D;
    // 4: A migrates back to cpu0, B wakes on cpu1.
    count_out(1, &a, now);
    count_in(1, &b, now);
    count_in(0, &a, now);
    tap_ok(a.cpu == 0 && a.counter >= 0 && b.cpu == 1 && b.counter >= 0,
           "%s: after the migration A is loaded on cpu0 and B on cpu1", name());
    run(&t, 0, 400031, &t.a);
    run(&t, 1, 500041, &t.b);
    now += D;
    // 5: both sleep.
    count_out(0, &a, now);
    count_out(1, &b, now);
    run(&t, 0, 60037, &t.idle);
    run(&t, 1, 70043, &t.idle);
    now += D;
    count_sync(0, now);
    count_sync(1, now);

    tap_eq(a.value, t.a, "%s: A counted exactly the instructions retired while it ran", name());
    tap_eq(b.value, t.b, "%s: B counted exactly the instructions retired while it ran", name());
    tap_ok(sys[0].value == t.cpu[0] && sys[1].value == t.cpu[1],
           "%s: each CPU's system count has every instruction retired there (%llu, %llu)", name(),
           (unsigned long long)sys[0].value, (unsigned long long)sys[1].value);
    tap_eq(a.value + b.value + t.idle, sys[0].value + sys[1].value,
           "%s: A + B + idle = the sum of the system counts", name());
    tap_ok(a.enabled_ns == 4 * D && a.running_ns == 4 * D && b.enabled_ns == 2 * D &&
               b.running_ns == 2 * D,
           "%s: A enabled and running 4 ms, B 2 ms (A %llu/%llu, B %llu/%llu ns)", name(),
           (unsigned long long)a.enabled_ns, (unsigned long long)a.running_ns,
           (unsigned long long)b.enabled_ns, (unsigned long long)b.running_ns);
    tap_ok(sys[0].enabled_ns == 5 * D && sys[0].running_ns == 5 * D && sys[1].running_ns == 5 * D,
           "%s: the system counts ran all 5 ms", name());
    tap_ok(ALL_CPUS(!row_enabled(cpu, (unsigned)ra) && !row_enabled(cpu, (unsigned)rb)),
           "%s: with A and B out, their rows' counters are stopped on every CPU", name());
    tap_ok(ALL_CPUS(cpu >= 2 || (row_enabled(cpu, (unsigned)rs) &&
                                 (!has_global(m) || row_global_on(cpu, (unsigned)rs)) &&
                                 pmc_counters_loaded[cpu] == 1u << rs)),
           "%s: the system rows still count, and only they (pmc_counters_loaded)", name());
    count_out(0, &sys[0], now);
    count_out(1, &sys[1], now);
    tap_ok(ALL_CPUS(!row_enabled(cpu, (unsigned)rs) && pmc_counters_loaded[cpu] == 0 &&
                    (!has_global(m) || model_global_ctrl(cpu) == 0)),
           "%s: everything out: no counter counts, global enables 0", name());
out:
    release(ra);
    release(rs);
    release(rb);
    tap_ok(all_rows_free(), "%s: every reservation released: all rows PMC_ROW_FREE", name());
    finish(m->name);
}

// ---- b. row reservation ----

static void check_rows_v4(void)
{
    tap_section("row reservation beside sampling (intel-v4: GP0-3, FIXED_CTR0-2)");
    boot(&MODEL_INTEL_V4);
    NTSTATUS st;
    const char *why;

    // Instructions can count on FIXED_CTR0 or any GP counter: the fixed
    // counter's row leaves the GP rows to the events only they can count.
    int ri = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    tap_ok(ri >= 0 && pmc_hw[ri].kind == PMC_COUNTER_FIXED && pmc_hw[ri].number == 0,
           "instructions reserve FIXED_CTR0's row while it is free (got %s)", row_desc(ri));
    unsigned users = 0;
    tap_ok(ri >= 0 && pmc_row_scope((unsigned)ri, &users) == PMC_ROW_THREAD && users == 1 &&
               ((pmc_rows_reserved >> ri) & 1),
           "the row is THREAD with one user, and marked reserved");
    release(ri);
    tap_ok(all_rows_free(), "released: the row is PMC_ROW_FREE, nothing reserved");
    // Seven events, three of which a fixed counter can count, on four GP and
    // three fixed counters: each fits on a row of its own.
    static const KPROFILE_SOURCE seven[] = {
        ProfileInstructionRetired,
        ProfileUnhaltedCoreCycles,
        ProfileUnhaltedReferenceCycles,
        ProfileBranchInstructionRetired,
        ProfileBranchMispredictsRetired,
        ProfileLLCReference,
        ProfileLLCMisses,
    };
    int r7[7];
    unsigned own = 0;
    for (unsigned i = 0; i < 7; i++)
        r7[i] = try_reserve(seven[i], PMC_ROW_THREAD, &st, &why);
    for (unsigned i = 0; i < 7; i++)
        own += r7[i] >= 0 && users_of(r7[i]) == 1;
    tap_ok(own == 7,
           "seven THREAD events (instructions, core and reference cycles first) on 4 GP + 3 "
           "fixed counters: each gets a row of its own (%u do)",
           own);
    for (unsigned i = 0; i < 7; i++)
        if (r7[i] >= 0 && users_of(r7[i]) != 1)
            tap_diag("%s: %s, %u users", src(seven[i]), row_desc(r7[i]), users_of(r7[i]));
    for (unsigned i = 0; i < 7; i++)
        release(r7[i]);
    tap_ok(all_rows_free(), "released: nothing reserved");

    // Sampling takes every free counter it needs and no reserved one.
    int rt = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    if (rt < 0)
        goto out;
    start_ok(ProfileLLCMisses);
    int k = pmc_counter_find(0, ProfileLLCMisses);
    tap_ok(ALL_CPUS(pmc_counter_find(cpu, ProfileLLCMisses) == k) && k >= 0 && k != rt,
           "sampling LLCMisses takes %s, not the reserved %s", row_desc(k), row_desc(rt));
    tap_ok(ALL_CPUS(pmc_counter(cpu, (unsigned)rt)->period == 0 && !row_enabled(cpu, (unsigned)rt)),
           "the reserved row is not programmed by sampling on any CPU");
    int rs1 = reserve(ProfileBranchMispredictsRetired, PMC_ROW_SYSTEM);
    int rs2 = reserve(ProfileBranchMispredictsRetired, PMC_ROW_SYSTEM);
    tap_ok(rs1 >= 0 && rs2 >= 0 && rs1 != k && rs2 != k && rs1 != rt && rs2 != rt && rs1 != rs2 &&
               pmc_hw[rs1].kind == PMC_COUNTER_GENERAL && pmc_hw[rs2].kind == PMC_COUNTER_GENERAL,
           "two SYSTEM reservations take the two GP rows left (%s, %s): not the sampling one",
           row_desc(rs1), row_desc(rs2));
    why = NULL;
    st = HalStartProfileInterrupt(ProfileBranchInstructionRetired, &why);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
              "sampling branches (GP only) with every GP row reserved or sampling: "
              "STATUS_INSUFFICIENT_RESOURCES");
    tap_ok(ALL_CPUS(pmc_counter_find(cpu, ProfileBranchInstructionRetired) < 0 &&
                    !row_enabled(cpu, (unsigned)rt)),
           "the failed start left no counter to branches and the reserved rows alone");
    // A GP-only THREAD reservation now shares the THREAD row.
    int rt2 = reserve(ProfileLLCReference, PMC_ROW_THREAD);
    tap_ok(rt2 == rt && users_of(rt) == 2,
           "a second THREAD GP event, no free GP row: it shares the THREAD row (%s, %u users)",
           row_desc(rt2), users_of(rt));
    tap_ok(!pmc_row_pin((unsigned)rt), "pmc_row_pin on a row with two users: false");
    release(rt2);
    tap_ok(users_of(rt) == 1 && pmc_row_pin((unsigned)rt), "one user again: pmc_row_pin succeeds");
    int rt3 = try_reserve(ProfileLLCReference, PMC_ROW_THREAD, &st, &why);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
              "the only THREAD GP row is pinned: a THREAD GP event gets "
              "STATUS_INSUFFICIENT_RESOURCES");
    tap_ok(why && why[0], "... with a reason (\"%s\")", why ? why : "");
    release(rt3);

    // Sampling instructions takes FIXED_CTR0 (free): then counting cannot.
    start_ok(ProfileInstructionRetired);
    int f0 = pmc_counter_find(0, ProfileInstructionRetired);
    tap_ok(f0 >= 0 && pmc_hw[f0].kind == PMC_COUNTER_FIXED && pmc_hw[f0].number == 0,
           "sampling instructions takes FIXED_CTR0 (%s)", row_desc(f0));
    int rs3 = try_reserve(ProfileInstructionRetired, PMC_ROW_SYSTEM, &st, &why);
    tap_ok(st == STATUS_SUCCESS && rs3 != f0 && rs3 != k && (rs3 == rs1 || rs3 == rs2),
           "a SYSTEM count of instructions: not the sampling rows; it shares a SYSTEM row (%s)",
           row_desc(rs3));
    int rt4 = try_reserve(ProfileInstructionRetired, PMC_ROW_THREAD, &st, &why);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
              "a THREAD count of instructions: FIXED_CTR0 samples, the THREAD row is pinned, "
              "the rest is SYSTEM or sampling: STATUS_INSUFFICIENT_RESOURCES");
    release(rt4);
    stop_ok(ProfileInstructionRetired);
    int rt5 = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    tap_ok(rt5 == f0 && users_of(rt5) == 1,
           "once sampling stops, FIXED_CTR0's row can be reserved (%s)", row_desc(rt5));
    st = HalStartProfileInterrupt(ProfileInstructionRetired, &why);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
              "and sampling instructions now finds no counter: STATUS_INSUFFICIENT_RESOURCES");
    release(rt5);
    release(rs3);
    release(rs1);
    release(rs2);
    stop_ok(ProfileLLCMisses);
out:
    release(rt);
    tap_ok(all_rows_free(), "every reservation released: all rows PMC_ROW_FREE");
    start_ok(ProfileBranchInstructionRetired);
    tap_ok(ALL_CPUS(pmc_counter_find(cpu, ProfileBranchInstructionRetired) == 0),
           "released rows are sampling's again: branches sample on GP0");
    stop_ok(ProfileBranchInstructionRetired);
    finish("rows on intel-v4");
}

// Every GP row SYSTEM: a THREAD count of a GP-only event has nowhere to go;
// sixteen SYSTEM reservations share the rows evenly and the seventeenth is refused.
static void check_rows_scopes(const struct model_config *m)
{
    begin("rows held by the other scope, the 16-per-scope limit", m);
    NTSTATUS st;
    const char *why;
    unsigned n = gp_rows(m);
    int rows[PMC_ROW_MAX_RESERVED + 1];
    unsigned held = 0;
    bool distinct = true;
    for (unsigned i = 0; i < n; i++) {
        rows[held] = try_reserve(ProfileBranchInstructionRetired, PMC_ROW_SYSTEM, &st, &why);
        distinct = distinct && rows[held] >= 0 && users_of(rows[held]) == 1;
        held += rows[held] >= 0;
    }
    tap_ok(distinct && held == n, "%s: %u SYSTEM reservations of branches take %u rows, one each",
           name(), n, n);
    int r = try_reserve(ProfileBranchMispredictsRetired, PMC_ROW_THREAD, &st, &why);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
              "%s: every GP row SYSTEM: a THREAD count of mispredicts gets "
              "STATUS_INSUFFICIENT_RESOURCES",
              name());
    tap_ok(r < 0 && why && why[0], "%s: ... and a reason (\"%s\")", name(), why ? why : "");
    release(r);
    st = HalStartProfileInterrupt(ProfileLLCMisses, &why);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
              "%s: sampling LLCMisses: STATUS_INSUFFICIENT_RESOURCES", name());
    tap_ok(ALL_CPUS(pmc_counter_find(cpu, ProfileLLCMisses) < 0), "%s: ... on every CPU", name());
    r = try_reserve(ProfileInstructionRetired, PMC_ROW_THREAD, &st, &why);
    if (m->vendor == MODEL_INTEL && m->version >= 2 && m->fixed > 0)
        tap_ok(st == STATUS_SUCCESS && pmc_hw[r].kind == PMC_COUNTER_FIXED && pmc_hw[r].number == 0,
               "%s: THREAD instructions still find FIXED_CTR0 (%s)", name(), row_desc(r));
    else
        STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES,
                  "%s: no fixed counters: THREAD instructions get STATUS_INSUFFICIENT_RESOURCES",
                  name());
    release(r);
    while (held < PMC_ROW_MAX_RESERVED) {
        rows[held] = try_reserve(ProfileBranchInstructionRetired, PMC_ROW_SYSTEM, &st, &why);
        if (rows[held] < 0)
            break;
        held++;
    }
    unsigned lo = ~0u, hi = 0, sum = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        unsigned users = 0;
        if (pmc_row_scope(i, &users) != PMC_ROW_SYSTEM)
            continue;
        lo = users < lo ? users : lo;
        hi = users > hi ? users : hi;
        sum += users;
    }
    tap_ok(held == PMC_ROW_MAX_RESERVED && sum == held && hi - lo <= 1,
           "%s: 16 SYSTEM reservations on %u rows, shared evenly (%u to %u users)", name(), n, lo,
           hi);
    rows[held] = try_reserve(ProfileBranchInstructionRetired, PMC_ROW_SYSTEM, &st, &why);
    STATUS_EQ(st, STATUS_PMC_TOO_MANY_RUNNING,
              "%s: the 17th SYSTEM reservation: STATUS_PMC_TOO_MANY_RUNNING", name());
    tap_ok(why && why[0], "%s: ... with a reason (\"%s\")", name(), why ? why : "");
    release(rows[held]);
    for (unsigned i = 0; i < held; i++)
        release(rows[i]);
    tap_ok(all_rows_free(), "%s: all released: every row PMC_ROW_FREE", name());
    start_ok(ProfileLLCMisses);
    stop_ok(ProfileLLCMisses);
    finish(m->name);
}

// Pinning: a pinned row is not shared; only a row with one user can be pinned.
static void check_pin(void)
{
    tap_section("pmc_row_pin (intel-v1: two GP rows)");
    boot(&MODEL_INTEL_V1);
    int r0 = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    tap_ok(r0 >= 0 && pmc_row_pin((unsigned)r0), "one user: pinned");
    int r1 = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    int r2 = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    int r3 = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    tap_ok(r1 >= 0 && r1 != r0 && r2 == r1 && r3 == r1 && users_of(r1) == 3 && users_of(r0) == 1,
           "later reservations take the free row, then share it, never the pinned one");
    tap_ok(!pmc_row_pin((unsigned)r1), "three users: pmc_row_pin fails");
    release(r0);
    tap_ok(users_of(r0) == 0 && pmc_row_scope((unsigned)r0, &(unsigned){0}) == PMC_ROW_FREE,
           "the pinned reservation released: its row is free");
    int r4 = reserve(ProfileBranchInstructionRetired, PMC_ROW_SYSTEM);
    tap_ok(r4 == r0, "... and reservable by the other scope");
    release(r4);
    release(r1);
    release(r2);
    release(r3);
    tap_ok(all_rows_free(), "all released");
    finish("pin on intel-v1");
}

static void check_unsupported(void)
{
    tap_section("sources that cannot be counted");
    NTSTATUS st;
    const char *why;
    boot(&MODEL_TCG_INTEL);
    int r = try_reserve(ProfileInstructionRetired, PMC_ROW_THREAD, &st, &why);
    STATUS_EQ(st, STATUS_NOT_SUPPORTED, "tcg-intel (no PMU): STATUS_NOT_SUPPORTED");
    tap_ok(r < 0 && why && why[0], "tcg-intel: with a reason (\"%s\")", why ? why : "");
    tap_eq(pmc_rows_reserved, 0, "tcg-intel: nothing reserved");
    finish("count on tcg-intel");

    boot(&MODEL_INTEL_V4);
    r = try_reserve(ProfileTime, PMC_ROW_SYSTEM, &st, &why);
    tap_ok(st == STATUS_NOT_SUPPORTED && r < 0 && why && why[0],
           "intel-v4: ProfileTime: STATUS_NOT_SUPPORTED (\"%s\")", why ? why : "");
    r = try_reserve(ProfileAlignmentFixup, PMC_ROW_THREAD, &st, &why);
    tap_ok(st == STATUS_NOT_SUPPORTED && r < 0 && why && why[0],
           "intel-v4: AlignmentFixup (no architectural event): STATUS_NOT_SUPPORTED (\"%s\")",
           why ? why : "");
    tap_ok(all_rows_free(), "intel-v4: nothing reserved");
    finish("unsupported on intel-v4");
}

// ---- c. multiplexing ----

#define MUX_MAX (PMC_ROW_MAX_RESERVED)

static KPROFILE_SOURCE mux_source(unsigned k)
{
    return k % 2 ? ProfileLLCMisses : ProfileBranchInstructionRetired;
}

// Uniform retirement: e of each event per tick on cpu0.
static void retire_both(uint64_t e)
{
    model_retire(0, EV_BRANCHES, e, UIP, true);
    model_retire(0, EV_LLC_MISSES, e, KIP, false);
}

// After whole rotation cycles with the same events retired in every tick: each
// of the n counts ran rows/n of its enabled time, and value x enabled /
// running is exactly the `events` retired.
static void check_shares(const char *what, const struct pmc_count *c, unsigned n, unsigned rows,
                         uint64_t events)
{
    unsigned share = 0, estimate = 0;
    for (unsigned k = 0; k < n; k++) {
        share += c[k].running_ns * n == c[k].enabled_ns * rows;
        estimate += c[k].running_ns && c[k].value * c[k].enabled_ns == events * c[k].running_ns;
    }
    tap_ok(share == n, "%s: %s: each count ran exactly %u/%u of its enabled time (%u of %u)",
           name(), what, rows, n, share, n);
    if (share != n)
        for (unsigned k = 0; k < n; k++)
            tap_diag("count %u: running %llu of enabled %llu ns", k,
                     (unsigned long long)c[k].running_ns, (unsigned long long)c[k].enabled_ns);
    tap_ok(estimate == n,
           "%s: %s: value x enabled / running = the events retired, exactly (%u of %u)", name(),
           what, estimate, n);
}

static void check_multiplexing(const struct model_config *m)
{
    begin("multiplexing GP-only events", m);
    const unsigned rows = gp_rows(m), n = rows + 2;
    const uint64_t e = 1000003, tick = 4000000; // events of each kind, ns, per tick
    int row[MUX_MAX];
    struct pmc_count c[MUX_MAX];
    bool ok = true;
    for (unsigned k = 0; k < n; k++) {
        NTSTATUS st;
        const char *why;
        row[k] = try_reserve(mux_source(k), PMC_ROW_SYSTEM, &st, &why);
        ok = ok && row[k] >= 0 && (k >= rows || users_of(row[k]) == 1);
    }
    tap_ok(ok,
           "%s: %u SYSTEM reservations of branches and LLC misses: the first %u have a row "
           "each, the rest share",
           name(), n, rows);
    if (!ok)
        goto out;

    // Without ticks: the first `rows` counts are loaded, the others wait.
    uint64_t now = 10 * D;
    for (unsigned k = 0; k < n; k++) {
        pmc_count_init(&c[k], mux_source(k), (unsigned)row[k], false);
        count_in(0, &c[k], now);
    }
    tap_ok(multiplexing(0) && !multiplexing(1),
           "%s: %u counts on %u rows: cpu0 multiplexes, cpu1 (nothing wanted) does not", name(), n,
           rows);
    retire_both(e);
    now += tick;
    count_sync(0, now);
    unsigned loaded = 0, right = 0;
    for (unsigned k = 0; k < n; k++) {
        loaded += c[k].counter >= 0;
        right += c[k].enabled_ns == tick &&
                 (c[k].counter >= 0 ? c[k].running_ns == tick && c[k].value == e
                                    : c[k].running_ns == 0 && c[k].value == 0);
    }
    tap_ok(loaded == rows && right == n,
           "%s: no tick: %u loaded count every event and run all the time; the %u waiting have "
           "running_ns 0 and value 0 (%u loaded, %u right)",
           name(), rows, n - rows, loaded, right);
    for (unsigned k = 0; k < n; k++)
        count_out(0, &c[k], now);
    tap_ok(!multiplexing(0) && pmc_counters_loaded[0] == 0,
           "%s: all out: nothing waits, nothing counts", name());

    // With ticks: whole rotation cycles of n ticks.
    for (unsigned k = 0; k < n; k++) {
        pmc_count_init(&c[k], mux_source(k), (unsigned)row[k], false);
        count_in(0, &c[k], now);
    }
    const unsigned cycles = 3, ticks = cycles * n;
    unsigned mux_seen = 0;
    for (unsigned i = 0; i < ticks; i++) {
        retire_both(e);
        now += tick;
        mux_seen += multiplexing(0);
        count_tick(0, now);
    }
    count_sync(0, now);
    unsigned enabled = 0;
    for (unsigned k = 0; k < n; k++)
        enabled += c[k].enabled_ns == ticks * tick;
    tap_ok(mux_seen == ticks, "%s: pmc_count_multiplexing true before every tick", name());
    tap_ok(enabled == n, "%s: every count was enabled all %u ticks", name(), ticks);
    check_shares("after whole rotation cycles", c, n, rows, ticks * e);
    // Two out: the counts fit the rows again.
    count_out(0, &c[0], now);
    tap_ok(multiplexing(0), "%s: one count out: one still waits", name());
    count_out(0, &c[1], now);
    loaded = 0;
    for (unsigned k = 2; k < n; k++)
        loaded += c[k].counter >= 0;
    tap_ok(!multiplexing(0) && loaded == rows,
           "%s: two out: %u counts on %u rows, all loaded, nothing waits", name(), rows, rows);
    for (unsigned k = 2; k < n; k++)
        count_out(0, &c[k], now);
out:
    for (unsigned k = 0; k < n; k++)
        release(row[k]);
    tap_ok(all_rows_free(), "%s: all released", name());
    finish(m->name);
}

// The running process's count and the system counts are wanted on one CPU
// together; only the system counts outnumber their rows. Each system count
// must get an equal share of them.
static void check_multiplexing_mixed(const struct model_config *m)
{
    begin("multiplexing beside a process count", m);
    int rt = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    int rs[MUX_MAX];
    unsigned ns = 0, rows = 0;
    while (ns < MUX_MAX) { // SYSTEM reservations until one shares a row
        NTSTATUS st;
        const char *why;
        rs[ns] = try_reserve(ProfileBranchInstructionRetired, PMC_ROW_SYSTEM, &st, &why);
        if (rs[ns] < 0)
            break;
        ns++;
        if (users_of(rs[ns - 1]) > 1)
            break;
        rows++;
    }
    tap_ok(rt >= 0 && ns == rows + 1 && rows >= 1,
           "%s: a THREAD row, %u SYSTEM rows and %u SYSTEM reservations", name(), rows, ns);
    if (rt < 0 || ns != rows + 1)
        goto out;
    struct pmc_count t, s[MUX_MAX];
    uint64_t now = D;
    for (unsigned k = 0; k < ns; k++) {
        pmc_count_init(&s[k], ProfileBranchInstructionRetired, (unsigned)rs[k], false);
        count_in(0, &s[k], now);
    }
    pmc_count_init(&t, ProfileBranchInstructionRetired, (unsigned)rt, false);
    count_in(0, &t, now); // the process switched in
    const uint64_t e = 5003, tick = 4000000;
    const unsigned ticks = 2 * ns * (ns + 1); // whole cycles of ns and of ns + 1
    for (unsigned i = 0; i < ticks; i++) {
        model_retire(0, EV_BRANCHES, e, UIP, true);
        now += tick;
        count_tick(0, now);
    }
    count_sync(0, now);
    tap_ok(t.counter >= 0 && t.running_ns == t.enabled_ns && t.value == ticks * e,
           "%s: the process count (alone on its row) ran all the time and counted every branch",
           name());
    check_shares("the system counts beside a process count", s, ns, rows, ticks * e);
    count_out(0, &t, now);
    for (unsigned k = 0; k < ns; k++)
        count_out(0, &s[k], now);
out:
    release(rt);
    for (unsigned k = 0; k < ns; k++)
        release(rs[k]);
    finish(m->name);
}

// ---- d. widths ----

static void check_widths(const struct model_config *m)
{
    begin("values wider than the counter loads", m);
    int r = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    if (r < 0)
        goto out;
    struct pmc_count c;
    pmc_count_init(&c, ProfileInstructionRetired, (unsigned)r, false);
    uint64_t now = D, want = (3ull << 30) + 12345; // above 2^31, bit 31 set
    count_in(0, &c, now);
    model_retire(0, EV_INSTRUCTIONS, want, UIP, true);
    now += D;
    count_out(0, &c, now);
    tap_eq(c.value, want, "%s: 3*2^30 + 12345 instructions counted", name());
    count_in(1, &c, now);
    tap_eq(row_ctr(1, (unsigned)r), want & load_mask(),
           "%s: migrated to cpu1, %s is loaded with the value's low %s bits", name(), row_desc(r),
           load_mask() == M31 ? "31" : "47");
    model_retire(1, EV_INSTRUCTIONS, 1001, KIP, false);
    count_out(1, &c, now + D);
    want += 1001;
    tap_eq(c.value, want, "%s: after out and in, counting goes on exactly from 3*2^30 + 12345",
           name());

    // Wrap the counter itself: 11 chunks of 3/32 of its range, a sync after each.
    unsigned w = row_width((unsigned)r);
    uint64_t chunk = 3ull << (w - 5), base = c.value;
    count_in(0, &c, now);
    uint64_t start = row_ctr(0, (unsigned)r);
    for (unsigned i = 0; i < 11; i++) {
        model_retire(0, EV_INSTRUCTIONS, chunk, UIP, true);
        count_sync(0, now);
    }
    model_retire(0, EV_INSTRUCTIONS, 777, UIP, true);
    uint64_t after = start + 11 * chunk + 777;
    tap_ok(after >> w != 0 && row_ctr(0, (unsigned)r) == (after & ((1ull << w) - 1)),
           "%s: %s (%u bits) wrapped: loaded 0x%llx, reads 0x%llx", name(), row_desc(r), w,
           (unsigned long long)start, (unsigned long long)row_ctr(0, (unsigned)r));
    count_out(0, &c, now + D);
    tap_eq(c.value, base + 11 * chunk + 777,
           "%s: the count stays exact across the wrap of its %u-bit counter", name(), w);
out:
    release(r);
    finish(m->name);
}

// ---- e. self-monitoring: CR4.PCE and ring-3 rdpmc ----

// A ring-3 rdpmc of the count's counter on cpu: true when it reads the value
// modulo what the counter was loaded with.
static bool rdpmc_reads(unsigned cpu, uint32_t ecx, uint64_t value, uint64_t *got)
{
    *got = 0;
    return model_rdpmc(cpu, ecx, true, got) && (*got & load_mask()) == (value & load_mask());
}

static void check_rdpmc(const struct model_config *m)
{
    begin("self-monitoring with rdpmc", m);
    int r = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    int ro = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    if (r < 0 || ro < 0)
        goto out;
    tap_ok(pmc_row_pin((unsigned)r), "%s: the row is pinned (one user)", name());
    uint32_t ecx = pmc_count_rdpmc_index((unsigned)r);
    uint32_t want_ecx =
        pmc_hw[r].kind == PMC_COUNTER_FIXED ? (1u << 30) | pmc_hw[r].number : pmc_hw[r].number;
    tap_eq(ecx, want_ecx, "%s: rdpmc index of %s", name(), row_desc(r));
    struct pmc_count c, other;
    pmc_count_init(&c, ProfileInstructionRetired, (unsigned)r, true);
    pmc_count_init(&other, ProfileBranchInstructionRetired, (unsigned)ro, false);
    uint64_t v, now = D;
    unsigned faults = model_rdpmc_faults();
    tap_ok(!pce(0) && !model_rdpmc(0, ecx, true, &v) && model_rdpmc_faults() == faults + 1,
           "%s: nothing loaded: CR4.PCE clear, a ring-3 rdpmc raises #GP", name());

    count_in(0, &other, now);
    tap_ok(!pce(0), "%s: a count without user_read loaded: CR4.PCE stays clear", name());
    count_in(0, &c, now);
    tap_ok(pce(0) && !pce(1), "%s: user_read count loaded on cpu0: CR4.PCE set there only", name());
    uint64_t want = (3ull << 30) + 99; // beyond 2^31
    model_retire(0, EV_INSTRUCTIONS, want, UIP, true);
    bool read = rdpmc_reads(0, ecx, want, &v);
    tap_ok(read, "%s: ring-3 rdpmc on cpu0 reads the count: 0x%llx vs 0x%llx", name(),
           (unsigned long long)v, (unsigned long long)want);
    count_out(0, &c, now + D);
    faults = model_rdpmc_faults();
    tap_ok(!pce(0) && !model_rdpmc(0, ecx, true, &v) && model_rdpmc_faults() == faults + 1,
           "%s: switched out (the other count still loaded): CR4.PCE clear, ring-3 rdpmc #GP",
           name());
    tap_ok(model_rdpmc(0, ecx, false, &v), "%s: ring 0 may still rdpmc", name());
    count_out(0, &other, now + D);

    count_in(1, &c, now + D);
    tap_ok(pce(1) && !pce(0), "%s: switched in on cpu1: CR4.PCE set on cpu1 only", name());
    read = rdpmc_reads(1, ecx, c.value, &v);
    tap_ok(read, "%s: ring-3 rdpmc on cpu1 reads the count right after the load (0x%llx)", name(),
           (unsigned long long)v);
    model_retire(1, EV_INSTRUCTIONS, 4321, KIP, false);
    want += 4321;
    read = rdpmc_reads(1, ecx, want, &v);
    tap_ok(read, "%s: ... and after 4321 more (0x%llx vs 0x%llx)", name(), (unsigned long long)v,
           (unsigned long long)want);
    count_out(1, &c, now + 2 * D);
    tap_eq(c.value, want, "%s: the count's value is exact", name());
    faults = model_rdpmc_faults();
    tap_ok(!pce(1) && !model_rdpmc(1, ecx, true, &v) && model_rdpmc_faults() == faults + 1,
           "%s: out on cpu1: CR4.PCE clear, ring-3 rdpmc #GP", name());

    // Counters that do not exist fault at any CPL.
    faults = model_rdpmc_faults();
    unsigned bad = m->vendor == MODEL_INTEL ? 2 : 1;
    bool f1 = !model_rdpmc(0, gp_rows(m), false, &v);
    bool f2 = m->vendor != MODEL_INTEL || !model_rdpmc(0, (1u << 30) | 3, false, &v);
    tap_ok(f1 && f2 && model_rdpmc_faults() == faults + bad,
           "%s: rdpmc of a counter that does not exist raises #GP", name());
out:
    release(r);
    release(ro);
    finish(m->name);
}

// A pinned row's count is read from ring 3 at its row's counter index: no
// other count may be loaded on that counter, before or after a rotation.
static void check_pinned_row_kept(void)
{
    tap_section("a pinned row is kept to its count (intel-v1: two GP rows)");
    boot(&MODEL_INTEL_V1);
    int rz = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    bool pinned = rz >= 0 && pmc_row_pin((unsigned)rz);
    int rx = reserve(ProfileBranchInstructionRetired, PMC_ROW_THREAD);
    int ry = reserve(ProfileLLCMisses, PMC_ROW_THREAD);
    tap_ok(pinned && rx >= 0 && rx != rz && ry == rx,
           "one process: a pinned user_read count of instructions, two counts sharing the other "
           "THREAD row");
    if (!pinned || rx < 0 || ry != rx)
        goto out;
    struct pmc_count z, x, y;
    pmc_count_init(&z, ProfileInstructionRetired, (unsigned)rz, true);
    pmc_count_init(&x, ProfileBranchInstructionRetired, (unsigned)rx, false);
    pmc_count_init(&y, ProfileLLCMisses, (unsigned)ry, false);
    uint64_t now = D;
    // The process switches in: its counts come in the order it attached them.
    count_in(0, &x, now);
    count_in(0, &y, now);
    count_in(0, &z, now);
    tap_ok(z.counter == rz && x.counter != rz && y.counter != rz,
           "switch-in: the pinned count is on its row, no other count is (z %d, x %d, y %d)",
           z.counter, x.counter, y.counter);
    uint32_t ecx = pmc_count_rdpmc_index((unsigned)rz);
    model_retire(0, EV_INSTRUCTIONS, 1000, UIP, true);
    model_retire(0, EV_LLC_MISSES, 5, UIP, true);
    uint64_t v = 0;
    bool read = model_rdpmc(0, ecx, true, &v);
    tap_ok(read && v == z.value + 1000,
           "ring-3 rdpmc at the pinned row's index reads the pinned count (%s, 0x%llx)",
           read ? "read" : "#GP", (unsigned long long)v);
    count_out(0, &x, now);
    count_out(0, &y, now);
    count_out(0, &z, now);
    // In another order, then a rotation.
    count_in(0, &z, now);
    count_in(0, &x, now);
    count_in(0, &y, now);
    count_tick(0, now + D);
    tap_ok(x.counter != rz && y.counter != rz && (z.counter == rz || z.counter < 0),
           "after a tick no other count is loaded on the pinned row (z %d, x %d, y %d)", z.counter,
           x.counter, y.counter);
    count_out(0, &x, now + D);
    count_out(0, &y, now + D);
    count_out(0, &z, now + D);
out:
    release(rz);
    release(rx);
    release(ry);
    finish("pinned row on intel-v1");
}

// ---- f. counting beside sampling through PMIs ----

static void check_with_sampling(const struct model_config *m)
{
    begin("counting beside sampling PMIs", m);
    int r = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    if (r < 0)
        goto out;
    struct pmc_count c;
    pmc_count_init(&c, ProfileInstructionRetired, (unsigned)r, false);
    uint64_t now = D, ins = 0;
    count_in(0, &c, now);
    set_interval(ProfileBranchInstructionRetired, 1000);
    start_ok(ProfileBranchInstructionRetired);
    int k = pmc_counter_find(0, ProfileBranchInstructionRetired);
    tap_ok(k >= 0 && k != r && row_enabled(0, (unsigned)r) && row_global_on(0, (unsigned)r),
           "%s: sampling started on %s; the counting %s still enabled", m->name, row_desc(k),
           row_desc(r));
    // 100 PMIs; the counting counter also wraps its 48 bits once (its
    // overflow status bit is set, it has no PMI enable).
    unsigned w = row_width((unsigned)r);
    for (unsigned i = 0; i < 100; i++) {
        model_retire(0, EV_BRANCHES, 1000, UIP, true);
        uint64_t n = i % 10 == 9 ? (1ull << (w - 3)) + 77 : 777;
        model_retire(0, EV_INSTRUCTIONS, n, UIP, i % 2);
        ins += n;
        if (i % 10 == 9)
            count_sync(0, now);
    }
    tap_eq(model_pmis_delivered(0), 100, "%s: 100 PMIs, one per 1000 branches", m->name);
    tap_ok(row_enabled(0, (unsigned)r) && row_global_on(0, (unsigned)r) &&
               !row_interrupts(0, (unsigned)r),
           "%s: after the PMIs' freeze and thaw the counting counter is enabled in GLOBAL_CTRL, "
           "without PMI enable",
           m->name);
    count_sync(0, now);
    tap_ok(ins > 1ull << w, "%s: the counting counter wrapped (%llu instructions)", m->name,
           (unsigned long long)ins);
    tap_eq(c.value, ins, "%s: the count is exact through 100 PMIs and a wrap", m->name);
    tap_ok(samples.total == 100 && samples.count[0][ProfileBranchInstructionRetired] == 100 &&
               samples.count[0][ProfileInstructionRetired] == 0,
           "%s: 100 samples, all branches; the counting counter produced none (%llu total)",
           m->name, (unsigned long long)samples.total);
    tap_ok(!row_enabled(1, (unsigned)r) && !row_global_on(1, (unsigned)r),
           "%s: cpu1, where the count is not loaded: the row is off", m->name);
    stop_ok(ProfileBranchInstructionRetired);
    tap_ok(row_enabled(0, (unsigned)r) && row_global_on(0, (unsigned)r),
           "%s: sampling stopped: the counting counter is still enabled", m->name);
    model_retire(0, EV_INSTRUCTIONS, 100, UIP, true);
    count_out(0, &c, now + D);
    tap_eq(c.value, ins + 100, "%s: and still counts", m->name);
out:
    release(r);
    finish(m->name);
}

// ---- g. the PMI path's own events ----

static void check_handler_events(const struct model_config *base)
{
    struct model_config m = *base;
    char nm[64], title[128];
    snprintf(nm, sizeof(nm), "%s-handler-300", base->name);
    m.name = nm;
    m.msr_cost_ns = MODEL_COST_KVM_NS;
    m.handler_insns = 300;
    snprintf(title, sizeof(title), "the PMI path's instructions are counted: %s", nm);
    tap_section(title);
    boot(&m);
    int r = reserve(ProfileInstructionRetired, PMC_ROW_THREAD);
    if (r < 0)
        goto out;
    struct pmc_count c;
    pmc_count_init(&c, ProfileInstructionRetired, (unsigned)r, false);
    uint64_t now = D, ins = 0;
    count_in(1, &c, now);
    set_interval(ProfileBranchInstructionRetired, 1000);
    start_ok(ProfileBranchInstructionRetired);
    for (unsigned i = 0; i < 200; i++) {
        model_retire(1, EV_BRANCHES, 1000, UIP, true);
        model_retire(1, EV_INSTRUCTIONS, 500, UIP, true);
        model_advance_time(20000);
        ins += 500;
    }
    count_out(1, &c, now + D);
    uint64_t pmis = model_pmis_delivered(1);
    tap_ok(pmis > 0, "%s: %llu PMIs on cpu1", nm, (unsigned long long)pmis);
    tap_eq(c.value, model_counted(1, EV_INSTRUCTIONS),
           "%s: the count equals every instruction the model counted on cpu1", nm);
    tap_ok(c.value > ins && (c.value - ins) % 300 == 0,
           "%s: that is the program's %llu and %llu of the PMI path (multiples of 300)", nm,
           (unsigned long long)ins, (unsigned long long)(c.value - ins));
out:
    release(r);
    finish(nm);
}

void test_counting(void)
{
    make_configs();
    for (size_t i = 0; i < NCONFIGS; i++)
        check_switches(configs[i]);
    check_rows_v4();
    for (size_t i = 0; i < NCONFIGS; i++)
        check_rows_scopes(configs[i]);
    check_pin();
    check_unsupported();
    for (size_t i = 0; i < NCONFIGS; i++)
        check_multiplexing(configs[i]);
    check_multiplexing_mixed(&MODEL_INTEL_V1);
    check_multiplexing_mixed(&MODEL_AMD_LEGACY);
    for (size_t i = 0; i < NCONFIGS; i++)
        check_widths(configs[i]);
    for (size_t i = 0; i < NCONFIGS; i++)
        check_rdpmc(configs[i]);
    check_pinned_row_kept();
    check_with_sampling(&MODEL_INTEL_V4);
    check_with_sampling(&v4_fw);
    check_handler_events(&MODEL_INTEL_KVM_V2);
    check_handler_events(&MODEL_AMD_V2);
    check_handler_events(&MODEL_AMD_LEGACY);
}
