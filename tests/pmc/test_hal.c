// The HAL face: HalSetProfileInterval, Hal{Set,Query}SystemInformation and
// start/stop status codes and reasons.
#include <string.h>
#include "tests.h"

static void check_profile_interval(void)
{
    tap_section("HalSetProfileInterval");
    boot(&MODEL_INTEL_KVM_V2);
    HAL_PROFILE_SOURCE_INFORMATION info = {.ProfileSource = ProfileTime};
    uint32_t len = 0;
    HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), &info, &len);
    tap_ok(info.Supported && info.Interval == 78125,
           "ProfileTime default interval 78,125 (7.8125 ms)");
    static const struct {
        uint64_t in, out;
    } cases[] = {
        {0, 1221},
        {1, 1221},
        {1220, 1221},
        {1221, 1221},
        {1222, 1222},
        {10000, 10000},
        {78125, 78125},
        {9999999, 9999999},
        {10000000, 10000000},
        {10000001, 10000000},
        {UINT64_MAX, 10000000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        tap_eq(HalSetProfileInterval(cases[i].in), cases[i].out,
               "HalSetProfileInterval(%llu) = %llu", (unsigned long long)cases[i].in,
               (unsigned long long)cases[i].out);
    HalSetProfileInterval(5000);
    HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), &info, &len);
    tap_eq(info.Interval, 5000, "the query reports the interval in force");
    tap_eq(set_interval(ProfileTime, 12), 1221,
           "HalProfileSourceInterval for ProfileTime clamps the same way");
    finish("HalSetProfileInterval");
}

static void check_set_information(void)
{
    tap_section("HalSetSystemInformation");
    boot(&MODEL_INTEL_KVM_V2);
    HAL_PROFILE_SOURCE_INTERVAL in = {.ProfileSource = ProfileLLCMisses, .Interval = 5000};
    STATUS_EQ(HalSetSystemInformation((HAL_SET_INFORMATION_CLASS)7, sizeof(in), &in),
              STATUS_INVALID_INFO_CLASS, "unknown class: STATUS_INVALID_INFO_CLASS");
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), NULL),
              STATUS_INVALID_PARAMETER, "NULL buffer: STATUS_INVALID_PARAMETER");
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterval, sizeof(in) - 1, &in),
              STATUS_INFO_LENGTH_MISMATCH, "short buffer: STATUS_INFO_LENGTH_MISMATCH");
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterval, sizeof(in) + 1, &in),
              STATUS_INFO_LENGTH_MISMATCH, "long buffer: STATUS_INFO_LENGTH_MISMATCH");
    in.ProfileSource = ProfileSourceCount;
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in),
              STATUS_INVALID_PARAMETER, "source 0x20: STATUS_INVALID_PARAMETER");
    in.ProfileSource = ProfileDcacheMisses;
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in),
              STATUS_NOT_SUPPORTED, "unsupported source: STATUS_NOT_SUPPORTED");
    in = (HAL_PROFILE_SOURCE_INTERVAL){.ProfileSource = ProfileLLCMisses, .Interval = 1};
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in), STATUS_SUCCESS,
              "LLCMisses interval 1: success");
    tap_eq(in.Interval, 1000, "... and the buffer gets the interval actually used (1,000)");
    in.Interval = 5000;
    HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in);
    HAL_PROFILE_SOURCE_INFORMATION info = {.ProfileSource = ProfileLLCMisses};
    HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), &info, NULL);
    tap_eq(info.Interval, 5000, "the query returns the set interval (ReturnedLength may be NULL)");

    HAL_PROFILE_INTERRUPT_HANDLER h = NULL;
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof(h) - 1, &h),
              STATUS_INFO_LENGTH_MISMATCH,
              "handler of the wrong size: STATUS_INFO_LENGTH_MISMATCH");
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof(h), NULL),
              STATUS_INVALID_PARAMETER, "handler buffer NULL: STATUS_INVALID_PARAMETER");
    STATUS_EQ(HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof(h), &h),
              STATUS_SUCCESS, "NULL handler: success (unregisters)");
    set_interval(ProfileLLCMisses, 1000);
    start_ok(ProfileLLCMisses);
    model_retire(0, EV_LLC_MISSES, 10000, 0x1000, false);
    struct pmc_pmi_stats st;
    pmc_pmi_stats(0, &st);
    tap_ok(samples.total == 0 && st.samples == 10,
           "without a handler, overflows are counted but not reported");
    finish("HalSetSystemInformation");
}

static void check_query_information(void)
{
    tap_section("HalQuerySystemInformation");
    boot(&MODEL_INTEL_KVM_V2);
    HAL_PROFILE_SOURCE_INFORMATION info = {.ProfileSource = ProfileLLCMisses};
    uint32_t len = 99;
    STATUS_EQ(HalQuerySystemInformation((HAL_QUERY_INFORMATION_CLASS)0, sizeof(info), &info, &len),
              STATUS_INVALID_INFO_CLASS, "unknown class: STATUS_INVALID_INFO_CLASS");
    tap_eq(len, 0, "... ReturnedLength 0");
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), NULL, &len),
              STATUS_INVALID_PARAMETER, "NULL buffer: STATUS_INVALID_PARAMETER");
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info) - 1, &info, &len),
              STATUS_INFO_LENGTH_MISMATCH, "short buffer: STATUS_INFO_LENGTH_MISMATCH");
    tap_eq(len, sizeof(info), "... ReturnedLength says the size needed");
    uint8_t big[64] = {0};
    memcpy(big, &info, sizeof(info));
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceInformation, sizeof(big), big, &len),
              STATUS_SUCCESS, "larger buffer: success");
    memcpy(&info, big, sizeof(info));
    tap_ok(len == sizeof(info) && info.Supported && info.Interval == 1000000,
           "LLCMisses: Supported, default interval 1,000,000, ReturnedLength = sizeof");
    info = (HAL_PROFILE_SOURCE_INFORMATION){
        .ProfileSource = ProfileSourceCount, .Supported = true, .Interval = 7};
    STATUS_EQ(HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), &info, &len),
              STATUS_SUCCESS, "source 0x20: success ...");
    tap_ok(!info.Supported && info.Interval == 0, "... with Supported FALSE and Interval 0");
    info =
        (HAL_PROFILE_SOURCE_INFORMATION){.ProfileSource = ProfileIcacheMisses, .Supported = true};
    HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), &info, &len);
    tap_ok(!info.Supported && info.Interval == 0, "unsupported IcacheMisses: FALSE, 0");
    set_interval(ProfileLLCMisses, 1ull << 40);
    info = (HAL_PROFILE_SOURCE_INFORMATION){.ProfileSource = ProfileLLCMisses};
    HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), &info, &len);
    tap_eq(info.Interval, UINT32_MAX, "an interval above 32 bits saturates in the NT structure");
    finish("HalQuerySystemInformation");
}

// One counter on every CPU while source runs, none when it does not.
static bool counting_everywhere(KPROFILE_SOURCE s, bool running)
{
    return ALL_CPUS((pmc_counter_find(cpu, s) >= 0) == running);
}

// The HAL counts the users of a source: the first start starts it, the last
// stop stops it, and the calls in between only count.
static void check_users(void)
{
    const char *why = NULL;
    struct hal_profile_source_details d;
    start_ok(ProfileLLCMisses);
    STATUS_EQ(HalStartProfileInterrupt(ProfileLLCMisses, &why), STATUS_SUCCESS,
              "second start: a second user");
    tap_streq(why, "", "... reason empty");
    HalQueryProfileSource(ProfileLLCMisses, &d);
    tap_ok(d.started && d.users == 2 && counting_everywhere(ProfileLLCMisses, true),
           "two users, one counter on every CPU (users %u)", d.users);
    stop_ok(ProfileLLCMisses);
    HalQueryProfileSource(ProfileLLCMisses, &d);
    samples_clear();
    model_retire(1, EV_LLC_MISSES, 1000000, 0x1000, false);
    tap_ok(d.started && d.users == 1 && counting_everywhere(ProfileLLCMisses, true) &&
               samples.count[1][ProfileLLCMisses] == 1,
           "first stop: one user left, still sampling (users %u)", d.users);
    stop_ok(ProfileLLCMisses);
    HalQueryProfileSource(ProfileLLCMisses, &d);
    tap_ok(!d.started && d.users == 0 && counting_everywhere(ProfileLLCMisses, false),
           "the last user's stop stops it on every CPU");
    STATUS_EQ(HalStopProfileInterrupt(ProfileLLCMisses, &why), STATUS_PROFILING_NOT_STARTED,
              "a stop without a user: STATUS_PROFILING_NOT_STARTED");
    tap_streq(why, "not started", "... reason");
    HalQueryProfileSource(ProfileLLCMisses, &d);
    tap_ok(d.users == 0, "... and the count stays at 0");
    STATUS_EQ(HalStartProfileInterrupt(ProfilePipelineDry, NULL), STATUS_NOT_SUPPORTED,
              "a start that fails ...");
    HalQueryProfileSource(ProfilePipelineDry, &d);
    tap_ok(d.users == 0 && !d.started, "... adds no user");
}

static void check_start_stop_status(void)
{
    tap_section("start/stop status codes");
    boot(&MODEL_INTEL_KVM_V2);
    const char *why = NULL;
    STATUS_EQ(HalStartProfileInterrupt(ProfileSourceCount, &why), STATUS_INVALID_PARAMETER,
              "start 0x20: invalid");
    tap_streq(why, "unknown profile source", "... reason");
    STATUS_EQ(HalStartProfileInterrupt((KPROFILE_SOURCE)-1, NULL), STATUS_INVALID_PARAMETER,
              "start -1: invalid (reason pointer may be NULL)");
    STATUS_EQ(HalStartProfileInterrupt(ProfilePipelineDry, &why), STATUS_NOT_SUPPORTED,
              "start PipelineDry: not supported");
    tap_streq(why, "no architectural event", "... reason");
    check_users();
    STATUS_EQ(HalStopProfileInterrupt(ProfileSourceCount, &why), STATUS_INVALID_PARAMETER,
              "stop 0x20: invalid");
    start_ok(ProfileLLCMisses);
    tap_ok(why != NULL, "reason set on success");

    struct hal_profile_source_details d;
    STATUS_EQ(HalQueryProfileSource(ProfileSourceCount, &d), STATUS_INVALID_PARAMETER,
              "details of 0x20: invalid");
    STATUS_EQ(HalQueryProfileSource(ProfileTime, NULL), STATUS_INVALID_PARAMETER,
              "details into NULL: invalid");
    HalQueryProfileSource(ProfileTime, &d);
    tap_ok(d.supported && d.kind == PMC_COUNTER_TIMER && d.default_interval == 78125 &&
               d.min_interval == 1221 && d.max_interval == 10000000 &&
               strcmp(d.description, "Time") == 0,
           "ProfileTime details: timer, 78,125 in [1,221, 10,000,000]");
    HalQueryProfileSource(ProfileLLCMisses, &d);
    tap_ok(d.supported && d.started && d.kind == PMC_COUNTER_GENERAL &&
               d.default_interval == 1000000 && d.min_interval == 1000 &&
               d.max_interval == (1ull << 47) - 1 && *d.reason == '\0',
           "LLCMisses details: general, started, 1,000,000 in [1,000, 2^47-1]");
    HalQueryProfileSource(ProfileInstructionRetired, &d);
    tap_ok(d.kind == PMC_COUNTER_FIXED && !d.started, "InstructionRetired details: fixed counter");
    finish("start/stop status");
}

// Each profile source may be started by user or kernel: both levels count.
static void check_rings(void)
{
    tap_section("user and kernel mode");
    boot(&MODEL_INTEL_KVM_V2);
    set_interval(ProfileBranchInstructionRetired, 1000);
    start_ok(ProfileBranchInstructionRetired);
    model_retire(3, EV_BRANCHES, 5000, 0x400123, true);
    model_retire(3, EV_BRANCHES, 3000, 0xFFFFFFFF80200000ull, false);
    tap_ok(samples.count[3][ProfileBranchInstructionRetired] == 8 && samples.user == 5 &&
               samples.last_ip == 0xFFFFFFFF80200000ull && samples.last_cpu == 3,
           "USR and OS both counted; the callback gets the mode, IP and CPU");
    finish("rings");
}

void test_hal(void)
{
    check_profile_interval();
    check_set_information();
    check_query_information();
    check_start_stop_status();
    check_rings();
}
