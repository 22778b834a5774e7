// ProfileTime on every CPU's periodic timer slot.
#include "tests.h"

static void check_profile_time(const struct model_config *m)
{
    boot(m);
    unsigned n = m->ncpus, ok = 0;
    start_ok(ProfileTime);
    for (unsigned cpu = 0; cpu < n; cpu++) {
        const struct model_timer *t = model_timer(cpu, TIMER_SLOT_PROFILE);
        ok += t->running && t->period_ns == 7812500 && t->starts == 1;
    }
    tap_eq(ok, n, "%s: every CPU's TIMER_SLOT_PROFILE runs at 78,125 x 100 ns", m->name);
    tap_ok(!model_timer(0, TIMER_SLOT_SCHED)->running &&
               model_timer(0, TIMER_SLOT_SCHED)->starts == 0,
           "%s: the scheduler slot is not touched", m->name);
    for (unsigned cpu = 0; cpu < n; cpu++)
        for (unsigned i = 0; i <= cpu; i++)
            model_timer_fire(cpu, TIMER_SLOT_PROFILE, 0x401000 + cpu, cpu & 1);
    ok = 0;
    for (unsigned cpu = 0; cpu < n; cpu++)
        ok += samples.count[cpu][ProfileTime] == cpu + 1;
    tap_ok(ok == n && samples.last_ip == 0x401000 + n - 1 && samples.last_source == ProfileTime,
           "%s: each tick reports (ProfileTime, IP, mode, CPU)", m->name);

    HalSetProfileInterval(1221);
    ok = 0;
    for (unsigned cpu = 0; cpu < n; cpu++) {
        const struct model_timer *t = model_timer(cpu, TIMER_SLOT_PROFILE);
        ok += t->running && t->period_ns == 122100 && t->starts == 2;
    }
    tap_eq(ok, n, "%s: HalSetProfileInterval(1221) while running reprograms every CPU", m->name);

    if (supported(ProfileInstructionRetired)) {
        set_interval(ProfileInstructionRetired, 1000);
        start_ok(ProfileInstructionRetired);
        model_retire(0, EV_INSTRUCTIONS, 10000, 0x2000, false);
        model_timer_fire(0, TIMER_SLOT_PROFILE, 0x3000, false);
        tap_ok(samples.count[0][ProfileInstructionRetired] == 10 &&
                   samples.count[0][ProfileTime] == 2,
               "%s: ProfileTime and a PMC source run side by side", m->name);
    }

    stop_ok(ProfileTime);
    ok = 0;
    for (unsigned cpu = 0; cpu < n; cpu++)
        ok += !model_timer(cpu, TIMER_SLOT_PROFILE)->running;
    tap_eq(ok, n, "%s: stop: the slot is stopped on every CPU", m->name);
    HalSetProfileInterval(5000);
    tap_eq(model_timer(0, TIMER_SLOT_PROFILE)->starts, 2,
           "%s: setting the interval while stopped starts nothing", m->name);
    start_ok(ProfileTime);
    tap_eq(model_timer(1, TIMER_SLOT_PROFILE)->period_ns, 500000,
           "%s: the next start uses the new interval", m->name);
    finish(m->name);
}

void test_time(void)
{
    tap_section("ProfileTime");
    check_profile_time(&MODEL_TCG_INTEL);
    check_profile_time(&MODEL_INTEL_KVM_V2);
    check_profile_time(&MODEL_AMD_V2);
}
