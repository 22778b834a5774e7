// The Emon interface's register programming: event selects, fixed counters,
// global enables, period loading under each width rule, counter exhaustion.
#include <string.h>
#include "tests.h"

#define SEL_SAMPLE 0x00500000u // PERFEVTSEL INT | EN added to the Emon table's selects
#define M48        ((1ull << 48) - 1)
#define M40        ((1ull << 40) - 1)

static void check_kvm_v2(void)
{
    tap_section("emon on kvm-v2: GP, fixed and global programming on every CPU");
    boot(&MODEL_INTEL_KVM_V2);
    tap_ok(ALL_CPUS(model_lvtpc(cpu) == 0xE1),
           "InitializeProfiling: LVTPC = VEC_PMI, fixed, unmasked, every CPU");
    tap_ok(ALL_CPUS(model_global_ctrl(cpu) == 0),
           "InitializeProfiling: GLOBAL_CTRL 0 (reset value was 0xff)");

    start_ok(ProfileLLCMisses);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 0) == (0x0003412Eu | SEL_SAMPLE)),
           "LLCMisses: PERFEVTSEL0 = 0x0053412E on every CPU");
    tap_ok(ALL_CPUS(model_gp_ctr(cpu, 0) == ((0 - 1000000ull) & M48)),
           "LLCMisses: PMC0 = -1,000,000 (48 bits, via IA32_A_PMC0) on every CPU");
    tap_ok(ALL_CPUS(model_global_ctrl(cpu) == 0x1), "LLCMisses: GLOBAL_CTRL = PMC0");

    set_interval(ProfileInstructionRetired, 123457);
    start_ok(ProfileInstructionRetired);
    tap_ok(ALL_CPUS(model_fixed_ctrl(cpu) == 0xB),
           "InstructionRetired: FIXED_CTR_CTRL = 0xB (OS USR PMI)");
    tap_ok(ALL_CPUS(model_fixed_ctr(cpu, 0) == ((0 - 123457ull) & M48)),
           "InstructionRetired: FIXED_CTR0 = -123457");
    tap_ok(ALL_CPUS(model_global_ctrl(cpu) == (0x1 | 1ull << 32)), "GLOBAL_CTRL = PMC0 | FIXED0");

    start_ok(ProfileTotalIssues); // instructions too: FIXED_CTR0 is taken, so a GP counter
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 1) == (0x000300C0u | SEL_SAMPLE)),
           "TotalIssues with FIXED_CTR0 busy: PERFEVTSEL1 = 0x005300C0");
    start_ok(ProfileUnhaltedCoreCycles);
    start_ok(ProfileUnhaltedReferenceCycles);
    tap_ok(ALL_CPUS(model_fixed_ctrl(cpu) == 0xBBB),
           "core and reference cycles on FIXED_CTR1/2: ctrl 0xBBB");
    start_ok(ProfileTotalCycles);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 2) == (0x0003003Cu | SEL_SAMPLE)),
           "TotalCycles with FIXED_CTR1 busy: PERFEVTSEL2 = 0x0053003C");
    tap_ok(ALL_CPUS(model_global_ctrl(cpu) == (0x7 | 7ull << 32)),
           "GLOBAL_CTRL = PMC0-2 | FIXED0-2");

    stop_ok(ProfileUnhaltedCoreCycles);
    tap_ok(ALL_CPUS(model_fixed_ctrl(cpu) == 0xB0B && model_global_ctrl(cpu) == (0x7 | 5ull << 32)),
           "stop core cycles: FIXED1 field and global bit cleared, the others untouched");
    stop_ok(ProfileLLCMisses);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 0) == 0 && model_gp_ctl(cpu, 1) != 0),
           "stop LLCMisses: PERFEVTSEL0 = 0, PERFEVTSEL1 still set");
    stop_ok(ProfileTotalIssues);
    stop_ok(ProfileInstructionRetired);
    stop_ok(ProfileUnhaltedReferenceCycles);
    stop_ok(ProfileTotalCycles);
    tap_ok(ALL_CPUS(model_global_ctrl(cpu) == 0 && model_fixed_ctrl(cpu) == 0 &&
                    model_gp_ctl(cpu, 0) == 0 && model_gp_ctl(cpu, 1) == 0 &&
                    model_gp_ctl(cpu, 2) == 0),
           "all stopped: every CPU's event selects, fixed ctrl and global ctrl are 0");
    tap_ok(ALL_CPUS(pmc_counter_find(cpu, ProfileLLCMisses) < 0),
           "all stopped: counter state freed");
    finish("kvm-v2 programming");
}

// All twelve supported PMC sources on 8 GP + 3 fixed counters: the twelfth fails.
static void check_exhaustion_kvm(void)
{
    tap_section("counters exhausted");
    boot(&MODEL_INTEL_KVM_V2);
    unsigned ok = 0, no_counter = 0, other = 0;
    for (unsigned s = 1; s < ProfileSourceCount; s++) {
        if (!supported((KPROFILE_SOURCE)s))
            continue;
        const char *why = NULL;
        NTSTATUS st = HalStartProfileInterrupt((KPROFILE_SOURCE)s, &why);
        if (st == STATUS_SUCCESS)
            ok++;
        else if (st == STATUS_INSUFFICIENT_RESOURCES && why && strcmp(why, "no free counter") == 0)
            no_counter++;
        else
            other++;
    }
    tap_ok(ok == 11 && no_counter == 1 && other == 0,
           "kvm-v2: 11 sources start on 8 GP + 3 fixed counters, the 12th gets "
           "STATUS_INSUFFICIENT_RESOURCES \"no free counter\" (%u/%u/%u)",
           ok, no_counter, other);
    tap_ok(ALL_CPUS(model_global_ctrl(cpu) == (0xFF | 7ull << 32)),
           "kvm-v2: every counter enabled");
    finish("kvm-v2 exhaustion");
}

static void check_v1(void)
{
    tap_section("emon v1: two 40-bit GP counters, legacy sign-extending writes");
    boot(&MODEL_INTEL_V1);
    set_interval(ProfileBranchInstructionRetired, 100000);
    start_ok(ProfileBranchInstructionRetired);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 0) == (0x000300C4u | SEL_SAMPLE)),
           "v1: PERFEVTSEL0 = 0x005300C4");
    tap_ok(ALL_CPUS(model_gp_ctr(cpu, 0) == 0xFFFFFE7960ull),
           "v1: PMC0 write of -100000 sign-extends from bit 31 to 40 bits (0xFFFFFE7960)");
    start_ok(ProfileTotalIssues); // no fixed counters on v1
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 1) == (0x000300C0u | SEL_SAMPLE)),
           "v1: instructions on PERFEVTSEL1");

    const char *why = NULL;
    NTSTATUS st = HalStartProfileInterrupt(ProfileLLCReference, &why);
    STATUS_EQ(st, STATUS_INSUFFICIENT_RESOURCES, "v1: third source: STATUS_INSUFFICIENT_RESOURCES");
    tap_streq(why, "no free counter", "v1: third source: reason");
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 0) == (0x000300C4u | SEL_SAMPLE) &&
                    model_gp_ctl(cpu, 1) == (0x000300C0u | SEL_SAMPLE) &&
                    pmc_counter_find(cpu, ProfileLLCReference) < 0),
           "v1: the failed start left every CPU as it was");
    struct hal_profile_source_details d;
    HalQueryProfileSource(ProfileLLCReference, &d);
    tap_ok(!d.started, "v1: the failed source is not marked started");
    stop_ok(ProfileTotalIssues);
    start_ok(ProfileLLCReference);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 1) == (0x00034F2Eu | SEL_SAMPLE)),
           "v1: after a stop, the freed counter takes LLCReference (0x00534F2E)");
    tap_ok(ALL_CPUS(model_gp_ctr(cpu, 1) == ((0 - 1000000ull) & M40)),
           "v1: default interval 1,000,000");
    finish("v1 programming");
}

// A start that fails on one CPU must leave no CPU counting. Allocation is the
// same everywhere, so make CPU 2 differ by hand: its PMC1 is already owned.
static void check_rollback(void)
{
    tap_section("a start that fails on one CPU is undone on all");
    struct model_config m = MODEL_INTEL_V1;
    m.name = "v1-3cpu";
    m.ncpus = 3;
    boot(&m);
    start_ok(ProfileLLCMisses);
    *pmc_counter(2, 1) =
        (struct pmc_counter_cpu){.period = 1000, .source = ProfileBranchInstructions};
    const char *why = NULL;
    STATUS_EQ(HalStartProfileInterrupt(ProfileTotalIssues, &why), STATUS_INSUFFICIENT_RESOURCES,
              "CPU 2 has no free counter: the start fails");
    tap_ok(model_gp_ctl(0, 1) == 0 && model_gp_ctl(1, 1) == 0 &&
               pmc_counter_find(0, ProfileTotalIssues) < 0 &&
               pmc_counter_find(1, ProfileTotalIssues) < 0,
           "CPUs 0 and 1, which succeeded, were rolled back");
    tap_ok(model_gp_ctl(0, 0) == (0x0003412Eu | SEL_SAMPLE),
           "the source already running is untouched");
    struct hal_profile_source_details d;
    HalQueryProfileSource(ProfileTotalIssues, &d);
    tap_ok(!d.started && d.users == 0, "the failed start added no user");
    STATUS_EQ(HalStopProfileInterrupt(ProfileTotalIssues, NULL), STATUS_PROFILING_NOT_STARTED,
              "... so a stop finds none");
    *pmc_counter(2, 1) = (struct pmc_counter_cpu){0};
    finish(m.name);
}

static void check_width_rules(void)
{
    tap_section("period width rules");
    boot(&MODEL_INTEL_V4);
    tap_eq(set_interval(ProfileLLCMisses, 1ull << 40), 0x7FFFFFFF,
           "v4 legacy writes: interval clamped to 2^31-1");
    tap_eq(set_interval(ProfileLLCMisses, 999), 1000, "interval 999 -> minimum 1,000 events");
    tap_eq(set_interval(ProfileLLCMisses, 0), 1000, "interval 0 -> minimum 1,000 events");
    set_interval(ProfileLLCMisses, 0x7FFFFFFF);
    start_ok(ProfileLLCMisses);
    tap_ok(ALL_CPUS(model_gp_ctr(cpu, 0) == 0xFFFF80000001ull),
           "v4: -(2^31-1) through legacy PMC0 reads back 0xFFFF80000001");
    tap_eq(set_interval(ProfileInstructionRetired, 1ull << 40), 0x7FFFFFFF,
           "v4 without full-width writes: fixed counters limited to 2^31-1 too");
    finish("v4 width");

    boot(&MODEL_INTEL_KVM_V2);
    tap_eq(set_interval(ProfileLLCMisses, 1ull << 40), 1ull << 40,
           "full-width writes: 2^40 accepted");
    tap_eq(set_interval(ProfileLLCMisses, 1ull << 60), (1ull << 47) - 1,
           "full-width writes: clamped to 2^47-1");
    start_ok(ProfileLLCMisses);
    tap_ok(ALL_CPUS(model_gp_ctr(cpu, 0) == (1ull << 47) + 1),
           "full width: -(2^47-1) loads as 0x800000000001");
    finish("kvm-v2 width");

    boot(&MODEL_INTEL_V5);
    start_ok(ProfileUnhaltedReferenceCycles);
    tap_ok(ALL_CPUS(model_fixed_ctrl(cpu) == 0xB00),
           "v5: reference cycles on FIXED_CTR2 (from the ECX bitmap)");
    finish("v5 fixed");
}

void test_emon(void)
{
    check_kvm_v2();
    check_exhaustion_kvm();
    check_v1();
    check_rollback();
    check_width_rules();
}
