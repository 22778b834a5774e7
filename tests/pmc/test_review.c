// The review's defects, one section each ("defect N: ..."), each check
// written to fail on the code before its fix. The model behaviours they need
// (REF_XCLK at the crystal rate, per-MSR faults, the firmware freeze, ...)
// are pmu_model.c's.
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "pmc/hal/counts.h"
#include "tests.h"

#define UIP 0x401000ull // where user-mode events retire

// ---- hal/counts.c's per-CPU calls, run as code on a model CPU ----

struct count_call {
    bool in;
    struct pmc_count *c;
    uint64_t now;
};

static void count_call_fn(void *arg)
{
    struct count_call *k = arg;
    if (k->in)
        pmc_count_in(k->c, k->now);
    else
        pmc_count_out(k->c, k->now);
}

static void count_in(unsigned cpu, struct pmc_count *c, uint64_t now)
{
    struct count_call k = {true, c, now};
    model_on_cpu(cpu, count_call_fn, &k);
}

static void count_out(unsigned cpu, struct pmc_count *c, uint64_t now)
{
    struct count_call k = {false, c, now};
    model_on_cpu(cpu, count_call_fn, &k);
}

static int reserve_row(KPROFILE_SOURCE s, enum pmc_row_scope scope, NTSTATUS *st)
{
    unsigned row = 0;
    const char *why = NULL;
    *st = pmc_row_reserve(s, scope, &row, &why);
    return *st == STATUS_SUCCESS ? (int)row : -1;
}

static bool is_fixed(int row, unsigned number)
{
    return row >= 0 && pmc_hw[row].kind == PMC_COUNTER_FIXED && pmc_hw[row].number == number;
}

// ---- defect 1: reference cycles on a general counter ----

// Two process-scope counts of UnhaltedReferenceCycles: both on FIXED_CTR2,
// never one there and one on a GP counter's 3CH/01H (the crystal clock).
static void defect1_counting(void)
{
    boot(&MODEL_INTEL_V4);
    NTSTATUS s1, s2;
    int r1 = reserve_row(ProfileUnhaltedReferenceCycles, PMC_ROW_THREAD, &s1);
    int r2 = reserve_row(ProfileUnhaltedReferenceCycles, PMC_ROW_THREAD, &s2);
    tap_ok(is_fixed(r1, 2) && is_fixed(r2, 2),
           "defect 1: two THREAD reservations of reference cycles both use FIXED_CTR2 (rows %d, "
           "%d)",
           r1, r2);
    struct pmc_count a, b;
    uint64_t got[2] = {0, 0};
    struct pmc_count *cs[2] = {&a, &b};
    for (unsigned k = 0; k < 2 && r1 >= 0 && r2 >= 0; k++) {
        pmc_count_init(cs[k], ProfileUnhaltedReferenceCycles, (unsigned)(k ? r2 : r1), false);
        count_in(0, cs[k], 0);
        model_retire(0, EV_REF_CYCLES, 1080000, UIP, true);
        count_out(0, cs[k], 1000);
        got[k] = cs[k]->value;
    }
    tap_ok(got[0] == 1080000 && got[1] == 1080000,
           "defect 1: each count reads the 1,080,000 reference cycles retired (%llu, %llu): no "
           "count on the crystal clock",
           (unsigned long long)got[0], (unsigned long long)got[1]);
    const char *why = NULL;
    STATUS_EQ(HalStartProfileInterrupt(ProfileUnhaltedReferenceCycles, &why),
              STATUS_INSUFFICIENT_RESOURCES,
              "defect 1: sampling reference cycles while counting holds FIXED_CTR2: no counter");
    if (r1 >= 0)
        pmc_row_release((unsigned)r1);
    if (r2 >= 0)
        pmc_row_release((unsigned)r2);
    finish("defect 1 counting");
}

static void defect1_sampling(void)
{
    boot(&MODEL_INTEL_V4);
    set_interval(ProfileUnhaltedReferenceCycles, 100000);
    start_ok(ProfileUnhaltedReferenceCycles);
    start_ok(ProfileTotalCycles); // takes GP0: FIXED_CTR1 goes to the first core-cycles source
    model_retire(0, EV_REF_CYCLES, 1000000, UIP, true);
    tap_eq(samples.count[0][ProfileUnhaltedReferenceCycles], 10,
           "defect 1: 1,000,000 reference cycles at interval 100,000: 10 samples on FIXED_CTR2");
    stop_ok(ProfileTotalCycles);
    stop_ok(ProfileUnhaltedReferenceCycles);
    finish("defect 1 sampling");

    // No FIXED_CTR2 (version 1): reference cycles are not offered at all.
    boot(&MODEL_INTEL_V1);
    struct hal_profile_source_details d;
    HalQueryProfileSource(ProfileUnhaltedReferenceCycles, &d);
    tap_ok(!d.supported && d.reason && d.reason[0],
           "defect 1: version 1 (no FIXED_CTR2): reference cycles unsupported (\"%s\")",
           d.reason ? d.reason : "");
    finish("defect 1 v1");
}

// ---- defect 7: fixed-counter enumeration ----

// The fixed counters a boot described, as a bitmap of their numbers.
static unsigned fixed_described(void)
{
    unsigned m = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        if (pmc_hw[i].kind == PMC_COUNTER_FIXED)
            m |= 1u << pmc_hw[i].number;
    return m;
}

static void defect7_bitmap_only(void)
{
    // Version 5 (SDM vol. 2A, CPUID leaf 0AH): fixed counter i exists when
    // ECX[i] is set or EDX[4:0] > i. Here EDX[4:0] = 0 and ECX = 0x7.
    struct model_config m = MODEL_INTEL_V5;
    m.name = "intel-v5-ecx-only";
    m.fixed = 0;
    m.fixed_ecx = 0x7;
    boot(&m);
    tap_eq(fixed_described(), 0x7,
           "defect 7: v5, EDX[4:0] = 0, ECX = 0x7: fixed counters 0-2 described");
    tap_ok(supported(ProfileUnhaltedReferenceCycles),
           "defect 7: v5, EDX[4:0] = 0, ECX = 0x7: reference cycles supported (FIXED_CTR2)");
    finish(m.name);

    // ECX = 0x5 with EDX[4:0] = 0: counters 0 and 2, not 1.
    m.name = "intel-v5-ecx-gap";
    m.fixed_ecx = 0x5;
    boot(&m);
    tap_eq(fixed_described(), 0x5, "defect 7: v5, ECX = 0x5: fixed counters 0 and 2, not 1");
    start_ok(ProfileUnhaltedCoreCycles);
    int i = pmc_counter_find(0, ProfileUnhaltedCoreCycles);
    tap_ok(i >= 0 && pmc_hw[i].kind == PMC_COUNTER_GENERAL,
           "defect 7: no FIXED_CTR1: core cycles sample on a GP counter");
    stop_ok(ProfileUnhaltedCoreCycles);
    finish(m.name);
}

static void defect7_ebx_gates_gp_only(void)
{
    // Lakefield's leaf 0AH (InstLatx64 GenuineIntel00806A1_Lakefield_CPUID.txt:
    // 07300405-00000004-00000007-00008603): EBX bit 2, the GP event 3CH/01H,
    // is unavailable; FIXED_CTR2 exists.
    struct model_config m = MODEL_INTEL_V5;
    m.name = "intel-v5-ebx-bit2";
    m.gp = 4;
    m.ebx_length = 7;
    m.ebx = 0x4;
    m.fixed = 3;
    m.fixed_ecx = 0x7;
    boot(&m);
    tap_ok(supported(ProfileUnhaltedReferenceCycles),
           "defect 7: EBX bit 2 set, FIXED_CTR2 present: reference cycles supported");
    finish(m.name);

    // EBX bit 1 (instructions retired as a GP event) set: FIXED_CTR0 still counts.
    m.name = "intel-v5-ebx-bit1";
    m.ebx = 0x2;
    boot(&m);
    tap_ok(supported(ProfileInstructionRetired),
           "defect 7: EBX bit 1 set, FIXED_CTR0 present: instructions supported");
    NTSTATUS s1, s2;
    int r1 = reserve_row(ProfileInstructionRetired, PMC_ROW_THREAD, &s1);
    int r2 = reserve_row(ProfileInstructionRetired, PMC_ROW_THREAD, &s2);
    tap_ok(is_fixed(r1, 0) && r2 == r1,
           "defect 7: EBX bit 1 set: instructions count only on FIXED_CTR0 (rows %d, %d)", r1, r2);
    if (r1 >= 0)
        pmc_row_release((unsigned)r1);
    if (r2 >= 0)
        pmc_row_release((unsigned)r2);
    finish(m.name);
}

// ---- defect 2: ring-3 rdpmc reads only the reader's count or zero ----

// Every rdpmc index that names a counter on this machine.
static unsigned rdpmc_indexes(const struct model_config *m, uint32_t *out)
{
    unsigned n = 0;
    unsigned gp = m->vendor == MODEL_AMD ? (m->perfctr_core ? 6 : 4) : m->gp;
    for (unsigned i = 0; i < gp; i++)
        out[n++] = i;
    for (unsigned j = 0; m->vendor == MODEL_INTEL && j < m->fixed; j++)
        out[n++] = (1u << 30) | j;
    return n;
}

// A ring-3 rdpmc on cpu as the reader runs it: the instruction, or, when it
// raises #GP (CR4.PCE clear), the kernel's #GP path emulating it
// (model_user_rdpmc). False if the reader would be killed.
static bool reader_rdpmc(unsigned cpu, uint32_t ecx, uint64_t *v)
{
    return model_rdpmc(cpu, ecx, true, v) || model_user_rdpmc(cpu, ecx, v);
}

// How many indexes a ring-3 reader on cpu0 sees a value at that is neither
// its own count (own_ecx, value own modulo the load mask) nor zero.
static unsigned leaks(const struct model_config *m, uint32_t own_ecx, uint64_t own,
                      const char *when)
{
    uint32_t idx[16];
    unsigned n = rdpmc_indexes(m, idx), bad = 0;
    uint64_t lm = m->vendor == MODEL_INTEL && !m->full_width ? 0x7FFFFFFFull : (1ull << 47) - 1;
    for (unsigned k = 0; k < n; k++) {
        uint64_t v = 0;
        bool ok = reader_rdpmc(0, idx[k], &v);
        bool fine = ok && (idx[k] == own_ecx ? (v & lm) == (own & lm) : v == 0);
        if (!fine && bad++ < 3)
            tap_diag("%s: %s: rdpmc 0x%x %s 0x%llx", m->name, when, idx[k],
                     ok ? "reads" : "kills the reader", (unsigned long long)v);
    }
    return bad;
}

static void defect2_rdpmc(const struct model_config *m)
{
    boot(m);
    NTSTATUS st;
    int rv = reserve_row(ProfileBranchInstructionRetired, PMC_ROW_THREAD, &st);
    int rr = reserve_row(ProfileLLCMisses, PMC_ROW_THREAD, &st);
    int rs = reserve_row(ProfileBranchMispredictsRetired, PMC_ROW_SYSTEM, &st);
    bool pinned = rr >= 0 && pmc_row_pin((unsigned)rr);
    tap_ok(rv >= 0 && pinned && rs >= 0, "defect 2: %s: victim, reader (pinned) and system rows",
           m->name);
    if (rv < 0 || !pinned || rs < 0) {
        finish(m->name);
        return;
    }
    struct pmc_count victim, reader, sys;
    pmc_count_init(&victim, ProfileBranchInstructionRetired, (unsigned)rv, false);
    pmc_count_init(&reader, ProfileLLCMisses, (unsigned)rr, true);
    pmc_count_init(&sys, ProfileBranchMispredictsRetired, (unsigned)rs, false);
    uint32_t own = pmc_count_rdpmc_index((unsigned)rr);
    // The victim runs and counts, then the reader runs.
    count_in(0, &victim, 0);
    model_retire(0, EV_BRANCHES, 12345, UIP, true);
    count_out(0, &victim, 10);
    count_in(0, &reader, 10);
    model_retire(0, EV_LLC_MISSES, 77, UIP, true);
    tap_eq(leaks(m, own, 77, "after the victim"), 0,
           "defect 2: %s: after a victim counted, the reader reads its own 77 or zero", m->name);
    count_out(0, &reader, 20);
    // A system-scope count is live while the reader runs.
    count_in(0, &sys, 20);
    model_retire(0, EV_BRANCH_MISSES, 4242, UIP, true);
    count_in(0, &reader, 30);
    tap_eq(leaks(m, own, 77, "system count live"), 0,
           "defect 2: %s: a system-scope count live: the reader reads its own or zero", m->name);
    count_out(0, &reader, 40);
    count_out(0, &sys, 40);
    // Sampling live, then stopped, while the reader runs.
    start_ok(ProfileLLCReference);
    model_retire(0, EV_LLC_REFS, 999, UIP, true);
    count_in(0, &reader, 50);
    tap_eq(leaks(m, own, 77, "sampling live"), 0,
           "defect 2: %s: a sampling counter live: the reader reads its own or zero", m->name);
    stop_ok(ProfileLLCReference);
    tap_eq(leaks(m, own, 77, "sampling stopped"), 0,
           "defect 2: %s: sampling stopped while the reader runs: its counter reads zero", m->name);
    count_out(0, &reader, 60);
    pmc_row_release((unsigned)rv);
    pmc_row_release((unsigned)rr);
    pmc_row_release((unsigned)rs);
    finish(m->name);
}

// ---- defect 4: every PMU MSR probed fault-safe ----

// What a boot with one faulting MSR must end in.
struct one_fault {
    const struct model_config *base;
    uint32_t msr;
    const char *line; // the boot line's reason, after "pmc: interface "
};

// Sample every supported source through PMIs on two CPUs and count one
// event across a switch: every register the interface uses is touched.
static void workout(void)
{
    static const enum model_event evs[] = {EV_INSTRUCTIONS, EV_CORE_CYCLES, EV_REF_CYCLES,
                                           EV_LLC_REFS,     EV_LLC_MISSES,  EV_BRANCHES,
                                           EV_BRANCH_MISSES};
    bool started[ProfileSourceCount] = {false};
    for (unsigned s = 1; s < ProfileSourceCount; s++)
        if (supported((KPROFILE_SOURCE)s)) {
            set_interval((KPROFILE_SOURCE)s, 1000);
            started[s] = HalStartProfileInterrupt((KPROFILE_SOURCE)s, NULL) == STATUS_SUCCESS;
        }
    for (unsigned cpu = 0; cpu < 2; cpu++)
        for (size_t e = 0; e < sizeof(evs) / sizeof(evs[0]); e++)
            model_retire(cpu, evs[e], 5500, UIP, true);
    for (unsigned s = 1; s < ProfileSourceCount; s++)
        if (started[s])
            HalStopProfileInterrupt((KPROFILE_SOURCE)s, NULL);
    NTSTATUS st;
    int r = reserve_row(ProfileBranchInstructionRetired, PMC_ROW_THREAD, &st);
    if (r >= 0) {
        struct pmc_count c;
        pmc_count_init(&c, ProfileBranchInstructionRetired, (unsigned)r, false);
        count_in(0, &c, 0);
        model_retire(0, EV_BRANCHES, 777, UIP, true);
        count_out(0, &c, 10);
        pmc_row_release((unsigned)r);
    }
}

static void defect4_probe(void)
{
    static struct model_config v2_fw, amd_v2, amd_leg;
    v2_fw = MODEL_INTEL_KVM_V2;
    amd_v2 = MODEL_AMD_V2;
    amd_leg = MODEL_AMD_LEGACY;
    static const struct one_fault cases[] = {
        {&v2_fw, MSR_IA32_A_PMC0,
         "emon: version 2, 8 GP counters x 48 bits (IA32_A_PMC0 raises #GP: legacy writes), "
         "3 fixed x 48 bits"},
        {&v2_fw, MSR_IA32_A_PMC0 + 7,
         "emon: version 2, 8 GP counters x 48 bits (IA32_A_PMC7 raises #GP: legacy writes), "
         "3 fixed x 48 bits"},
        {&v2_fw, MSR_IA32_PERF_CAPABILITIES, // PDCM says it exists: legacy writes, no fault
         "emon: version 2, 8 GP counters x 48 bits, 3 fixed x 48 bits"},
        {&v2_fw, MSR_IA32_PMC0 + 7, "none: IA32_PMC7 raises #GP on wrmsr"},
        {&v2_fw, MSR_IA32_PERFEVTSEL0 + 7, "none: IA32_PERFEVTSEL7 raises #GP on rdmsr"},
        {&v2_fw, MSR_IA32_FIXED_CTR0, "none: IA32_FIXED_CTR0 raises #GP on wrmsr"},
        {&v2_fw, MSR_IA32_FIXED_CTR0 + 2, "none: IA32_FIXED_CTR2 raises #GP on wrmsr"},
        {&v2_fw, MSR_IA32_FIXED_CTR_CTRL, "none: IA32_FIXED_CTR_CTRL raises #GP on rdmsr"},
        {&v2_fw, MSR_IA32_PERF_GLOBAL_CTRL, "none: IA32_PERF_GLOBAL_CTRL raises #GP on rdmsr"},
        {&v2_fw, MSR_IA32_PERF_GLOBAL_STATUS, "none: IA32_PERF_GLOBAL_STATUS raises #GP on rdmsr"},
        {&v2_fw, MSR_IA32_PERF_GLOBAL_OVF_CTRL,
         "none: IA32_PERF_GLOBAL_OVF_CTRL raises #GP on wrmsr"},
        {&amd_v2, MSR_F15H_PERF_CTL0 + 10, "none: F15H_PERF_CTL5 raises #GP on rdmsr"},
        {&amd_v2, MSR_F15H_PERF_CTR0 + 10, "none: F15H_PERF_CTR5 raises #GP on wrmsr"},
        {&amd_v2, MSR_AMD_PERF_GLOBAL_CTL, "none: AMD_PERF_GLOBAL_CTL raises #GP on rdmsr"},
        {&amd_v2, MSR_AMD_PERF_GLOBAL_STATUS, "none: AMD_PERF_GLOBAL_STATUS raises #GP on rdmsr"},
        {&amd_v2, MSR_AMD_PERF_GLOBAL_STATUS_CLR,
         "none: AMD_PERF_GLOBAL_STATUS_CLR raises #GP on wrmsr"},
        {&amd_leg, MSR_K7_PERF_CTR0 + 3, "none: K7_PERF_CTR3 raises #GP on wrmsr"},
    };
    amd_v2.hypervisor = v2_fw.hypervisor = NULL; // keep the boot lines short
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct model_config m = *cases[k].base;
        char name[64], want[200];
        snprintf(name, sizeof(name), "%s, MSR 0x%x faults", m.name, cases[k].msr);
        m.name = name;
        m.fault_msrs[0] = cases[k].msr;
        boot(&m);
        snprintf(want, sizeof(want), "pmc: interface %s", cases[k].line);
        tap_streq(console_last_line(), want, "defect 4: %s: boot line", name);
        workout();
        finish(name); // a plain rdmsr/wrmsr of the faulting MSR: "#GP", a failed check
    }
}

// ---- defect 5: firmware's freeze on PMI ----

// Five periods of instructions on cpu0, sampled on FIXED_CTR0 and on a GP
// counter (TotalIssues): ten samples, not one per counter.
static void five_periods(const char *what)
{
    set_interval(ProfileInstructionRetired, 1000);
    set_interval(ProfileTotalIssues, 1000);
    start_ok(ProfileInstructionRetired);
    start_ok(ProfileTotalIssues);
    for (unsigned k = 0; k < 50; k++)
        model_retire(0, EV_INSTRUCTIONS, 100, UIP, true);
    tap_eq(samples.count[0][ProfileInstructionRetired] + samples.count[0][ProfileTotalIssues], 10,
           "defect 5: %s: 5,000 instructions at interval 1,000 on two counters: 10 samples", what);
    stop_ok(ProfileTotalIssues);
    stop_ok(ProfileInstructionRetired);
}

static void defect5_freeze(void)
{
    struct model_config m = MODEL_INTEL_V4;
    m.name = "intel-v4, firmware's FREEZE_PERFMON_ON_PMI";
    m.firmware_freeze = true;
    boot(&m);
    tap_ok(ALL_CPUS((model_debugctl(cpu) & DEBUGCTL_FREEZE_PERFMON_ON_PMI) == 0),
           "defect 5: IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI cleared on every CPU");
    tap_contains(console_last_line(), "IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI",
                 "defect 5: the boot line says firmware left the freeze set");
    five_periods(m.name);
    finish(m.name);

    // A hypervisor that ignores the DEBUGCTL write: each PMI sets CTR_Frz,
    // which the handler clears through IA32_PERF_GLOBAL_STATUS_RESET.
    m.name = "intel-v4, freeze kept (DEBUGCTL write ignored)";
    m.debugctl_ignored = true;
    boot(&m);
    five_periods(m.name);
    tap_ok(ALL_CPUS((model_global_status(cpu) & PERF_GLOBAL_STATUS_CTR_FRZ) == 0),
           "defect 5: CTR_Frz left clear");
    finish(m.name);

    // Version 2: the freeze clears GLOBAL_CTRL, which the thaw writes again.
    m = MODEL_INTEL_KVM_V2;
    m.name = "intel-v2, freeze kept";
    m.firmware_freeze = m.debugctl_ignored = true;
    boot(&m);
    five_periods(m.name);
    finish(m.name);

    // CondChgd set with every overflow: acknowledged, never taken for a stuck status.
    m = MODEL_INTEL_V4;
    m.name = "intel-v4, CondChgd";
    m.cond_chgd = true;
    boot(&m);
    five_periods(m.name);
    struct pmc_pmi_stats ps;
    pmc_pmi_stats(0, &ps);
    tap_ok(ps.stuck == 0 && (model_global_status(0) & PERF_GLOBAL_STATUS_COND_CHG) == 0,
           "defect 5: CondChgd acknowledged, no stuck status (%llu)", (unsigned long long)ps.stuck);
    finish(m.name);
}

// ---- defect 6: the LVTPC unmask with several counters ----

// Two sampling counters both counting the handler's own instructions and
// cycles: every overflow is sampled once, by the PMI it raised or the one it
// happened in (so with the IP where it happened, skid aside), and none
// signals a masked LVTPC once the handler could have unmasked it.
struct defect6_tally {
    uint64_t masked, misattributed, overflows, samples, lost;
    unsigned runs;
};

static void defect6_run(const struct model_config *base, unsigned skid, struct defect6_tally *t)
{
    struct model_config m = *base;
    m.handler_insns = 150;
    m.skid = skid;
    boot(&m);
    set_interval(ProfileTotalIssues, 1000);
    set_interval(ProfileTotalCycles, 1300);
    start_ok(ProfileTotalIssues);
    start_ok(ProfileTotalCycles);
    for (unsigned k = 0; k < 40; k++) {
        for (unsigned j = 0; j < 10; j++) {
            model_retire(0, EV_INSTRUCTIONS, 97, UIP + 16 * k, true);
            model_retire(0, EV_CORE_CYCLES, 89, UIP + 16 * k, true);
        }
        model_advance_time(200000);
    }
    stop_ok(ProfileTotalCycles);
    stop_ok(ProfileTotalIssues);
    struct pmc_pmi_stats ps;
    pmc_pmi_stats(0, &ps);
    t->masked += model_masked_signals(0);
    t->misattributed += model_misattributed(0);
    t->overflows += model_int_overflows(0);
    t->samples += samples.count[0][ProfileTotalIssues] + samples.count[0][ProfileTotalCycles];
    t->lost += ps.throttled + ps.lost;
    t->runs++;
    finish(m.name);
}

static void defect6_unmask(void)
{
    struct model_config amd_masks = MODEL_AMD_LEGACY, amd_v2_masks = MODEL_AMD_V2;
    amd_masks.name = "amd-legacy, LVTPC masked on delivery";
    amd_masks.amd_lvtpc_masks = true;
    amd_v2_masks.name = "amd-perfmon-v2, LVTPC masked on delivery";
    amd_v2_masks.amd_lvtpc_masks = true;
    const struct model_config *cfgs[] = {&MODEL_INTEL_V1, &amd_masks,          &MODEL_AMD_LEGACY,
                                         &MODEL_INTEL_V4, &MODEL_INTEL_KVM_V2, &amd_v2_masks};
    for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
        struct defect6_tally t = {0};
        for (unsigned skid = 0; skid < 400; skid += 23)
            defect6_run(cfgs[i], skid, &t);
        tap_eq(t.masked, 0,
               "defect 6: %s: no overflow signalled a masked LVTPC while two counters ran "
               "(%u runs)",
               cfgs[i]->name, t.runs);
        tap_eq(t.misattributed, 0,
               "defect 6: %s: no overflow sampled by a later, unrelated PMI (wrong IP)",
               cfgs[i]->name);
        // Periods can still be lost: with a large skid the handler's own
        // events carry a version-1 counter more than a period past its wrap.
        tap_ok(t.samples == t.overflows,
               "defect 6: %s: %llu overflows, %llu samples (%llu periods lost or throttled)",
               cfgs[i]->name, (unsigned long long)t.overflows, (unsigned long long)t.samples,
               (unsigned long long)t.lost);
    }
}

// ---- a hypervisor's event filter: counters that never count ----

// Nothing can tell a filtered counter from an idle one (Linux does not try
// either): the filtered sources give no sample and count 0, the others work,
// and nothing faults, hangs or loses state.
static void filtered_events(const struct model_config *base)
{
    struct model_config m = *base;
    char name[80];
    snprintf(name, sizeof name, "%s, LLC misses filtered", base->name);
    m.name = name;
    m.filtered_events = 1u << EV_LLC_MISSES;
    boot(&m);
    set_interval(ProfileLLCMisses, 1000);
    set_interval(ProfileBranchInstructionRetired, 1000);
    start_ok(ProfileLLCMisses);
    start_ok(ProfileBranchInstructionRetired);
    NTSTATUS st;
    int r = reserve_row(ProfileLLCMisses, PMC_ROW_THREAD, &st);
    struct pmc_count c;
    if (r >= 0) {
        pmc_count_init(&c, ProfileLLCMisses, (unsigned)r, false);
        count_in(0, &c, 0);
    }
    model_retire(0, EV_LLC_MISSES, 10000, UIP, true);
    model_retire(0, EV_BRANCHES, 10000, UIP, true);
    if (r >= 0)
        count_out(0, &c, 1000);
    tap_ok(samples.count[0][ProfileLLCMisses] == 0 &&
               samples.count[0][ProfileBranchInstructionRetired] == 10,
           "filter: %s: no sample of the filtered event, 10 of the other", base->name);
    tap_ok(r >= 0 && c.value == 0 && c.running_ns == 1000,
           "filter: %s: the filtered count reads 0 over its 1,000 ns loaded", base->name);
    if (r >= 0)
        pmc_row_release((unsigned)r);
    stop_ok(ProfileBranchInstructionRetired);
    stop_ok(ProfileLLCMisses);
    finish(name);
}

// ---- defect 9: shutdown with live counting PMCs ----

// A count loaded when pmc_shutdown runs: its value is saved then, and the
// switch-out that comes later (the profile layer's, after the interface is
// the no-PMU one) neither calls the no-PMU interface's missing StopCounting
// nor touches the counter.
static void defect9_shutdown(const struct model_config *cfg)
{
    boot(cfg);
    NTSTATUS st;
    int r = reserve_row(ProfileInstructionRetired, PMC_ROW_THREAD, &st);
    STATUS_EQ(st, STATUS_SUCCESS, "defect 9: %s: reserve a THREAD row", cfg->name);
    if (r < 0) {
        finish(cfg->name);
        return;
    }
    struct pmc_count c;
    pmc_count_init(&c, ProfileInstructionRetired, (unsigned)r, false);
    count_in(1, &c, 0);
    model_retire(1, EV_INSTRUCTIONS, 5000, UIP, true);
    unsigned writes = model_msr_writes();
    pmc_shutdown();
    tap_ok(c.counter < 0 && c.value == 5000,
           "defect 9: %s: pmc_shutdown unloads the live count and saves its 5,000 (counter %d, "
           "value %llu)",
           cfg->name, c.counter, (unsigned long long)c.value);
    writes = model_msr_writes();
    count_out(1, &c, 1000); // the target's switch-out after the shutdown
    count_in(1, &c, 2000);  // and a switch-in: nothing to load onto
    count_out(1, &c, 3000);
    tap_ok(c.cpu < 0 && c.counter < 0 && c.value == 5000 && model_msr_writes() == writes,
           "defect 9: %s: switches after the shutdown touch no MSR and keep the value", cfg->name);
    pmc_row_release((unsigned)r); // the PMC's release, after the shutdown: nothing to free
    tap_eq(model_heap_in_use(), 0, "defect 9: %s: no heap left", cfg->name);
    tap_eq(model_gp_faults(), 0, "defect 9: %s: no #GP", cfg->name);
}

void test_review(void)
{
    tap_section("defect 1: reference cycles only on FIXED_CTR2 (the TSC rate)");
    defect1_counting();
    defect1_sampling();
    tap_section("defect 7: fixed counters by the version's rule; EBX gates GP events only");
    defect7_bitmap_only();
    defect7_ebx_gates_gp_only();
    tap_section("defect 2: a self-monitoring reader's rdpmc of every counter");
    defect2_rdpmc(&MODEL_INTEL_V4);
    defect2_rdpmc(&MODEL_INTEL_KVM_V2);
    defect2_rdpmc(&MODEL_AMD_LEGACY);
    defect2_rdpmc(&MODEL_AMD_V2);
    tap_section("defect 4: one faulting PMU MSR at a time");
    defect4_probe();
    tap_section("defect 5: IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI and CTR_Frz");
    defect5_freeze();
    tap_section("defect 6: the LVTPC unmask with two counters running");
    defect6_unmask();
    tap_section("a hypervisor's event filter");
    filtered_events(&MODEL_INTEL_KVM_V2);
    filtered_events(&MODEL_AMD_V2);
    tap_section("defect 9: pmc_shutdown with counts loaded");
    defect9_shutdown(&MODEL_INTEL_V4);
    defect9_shutdown(&MODEL_AMD_LEGACY);
}
