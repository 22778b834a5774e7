// The AMD64 interface's register programming.
#include <string.h>
#include "tests.h"

#define CTL_SAMPLE 0x00530000ull // USR | OS | INT | EN
#define M48        ((1ull << 48) - 1)

static void check_machine(const struct model_config *m, unsigned counters)
{
    boot(m);
    tap_ok(ALL_CPUS(model_lvtpc(cpu) == 0xE1), "%s: LVTPC = VEC_PMI on every CPU", m->name);
    start_ok(ProfileTotalCycles);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 0) == (CTL_SAMPLE | 0x76)),
           "%s: PERF_CTL0 = 0x00530076 (cycles)", m->name);
    tap_ok(ALL_CPUS(model_gp_ctr(cpu, 0) == ((0 - 1000000ull) & M48)),
           "%s: PERF_CTR0 = -1,000,000 in 48 bits", m->name);
    start_ok(ProfileLLCReference);
    tap_ok(ALL_CPUS(model_gp_ctl(cpu, 1) == (CTL_SAMPLE | 0x077D)),
           "%s: PERF_CTL1 = 0x0053077D (cache refs)", m->name);
    if (m->perfmon_v2)
        tap_ok(ALL_CPUS(model_global_ctrl(cpu) == 0x3), "%s: PerfMonV2 GLOBAL_CTL = CTR0 | CTR1",
               m->name);

    const char *why = NULL;
    STATUS_EQ(HalStartProfileInterrupt(ProfileUnhaltedReferenceCycles, &why), STATUS_NOT_SUPPORTED,
              "%s: no reference-cycles event", m->name);
    tap_streq(why, "no AMD event for this source", "%s: its reason", m->name);

    static const KPROFILE_SOURCE more[] = {ProfileInstructionRetired,
                                           ProfileBranchInstructionRetired,
                                           ProfileBranchMispredictsRetired,
                                           ProfileLLCMisses,
                                           ProfileTotalIssues,
                                           ProfileCacheMisses};
    unsigned ok = 2, no_counter = 0;
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
        NTSTATUS st = HalStartProfileInterrupt(more[i], &why);
        ok += st == STATUS_SUCCESS;
        no_counter += st == STATUS_INSUFFICIENT_RESOURCES && strcmp(why, "no free counter") == 0;
    }
    tap_ok(ok == counters && no_counter == 8 - counters,
           "%s: %u sources start, the rest get \"no free counter\"", m->name, counters);
    tap_eq(set_interval(ProfileLLCMisses, 1ull << 60), (1ull << 47) - 1,
           "%s: 48-bit counters: max 2^47-1", m->name);

    for (unsigned s = 1; s < ProfileSourceCount; s++)
        HalStopProfileInterrupt((KPROFILE_SOURCE)s, NULL);
    tap_ok(ALL_CPUS(({
               bool clear_ = !m->perfmon_v2 || model_global_ctrl(cpu) == 0;
               for (unsigned i = 0; i < counters; i++)
                   clear_ = clear_ && model_gp_ctl(cpu, i) == 0;
               clear_;
           })),
           "%s: all stopped: every PERF_CTL (and GLOBAL_CTL) is 0 on every CPU", m->name);
    finish(m->name);
}

void test_amd(void)
{
    tap_section("amd64 programming");
    check_machine(&MODEL_AMD_LEGACY, 4);
    check_machine(&MODEL_AMD_EXT, 6);
    check_machine(&MODEL_AMD_V2, 6);
}
