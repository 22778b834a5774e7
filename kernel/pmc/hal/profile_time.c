// ProfileTime: a periodic timer slot on every CPU's LAPIC timer, independent of
// the scheduler tick (timer.h multiplexes the two), that samples the
// interrupted instruction pointer.
#include "arch/x86/percpu.h"
#include "arch/x86/timer.h"

#include "core/smp.h"

#include "pmc/hal/deliver.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/profile_time.h"
#include "pmc/hal/rows.h"

uint64_t profile_time_interval = PROFILE_TIME_DEFAULT;

uint64_t profile_time_clamp(uint64_t interval)
{
    if (interval < PROFILE_TIME_MIN)
        return PROFILE_TIME_MIN;
    return interval > PROFILE_TIME_MAX ? PROFILE_TIME_MAX : interval;
}

static void profile_time_tick(const struct intr_frame *f, void *arg)
{
    UNUSED(arg);
    halp_deliver_sample(ProfileTime, f);
}

// A CPU whose timer row NtPmcAdmin disabled takes no ProfileTime tick
// (hal_timer_admin disables it only while ProfileTime is stopped).
static void start_on_cpu(void *arg)
{
    uint64_t interval = *(const uint64_t *)arg;
    if (pmc_row_off(cpu_id(), pmc_row_timer()))
        return;
    timer_periodic_start(TIMER_SLOT_PROFILE, interval * 100, profile_time_tick, NULL);
}

static void stop_on_cpu(void *arg)
{
    UNUSED(arg);
    timer_periodic_stop(TIMER_SLOT_PROFILE);
}

// (Re)start the timer on every CPU at the current interval.
void profile_time_start(void)
{
    uint64_t interval = READ_ONCE(profile_time_interval);
    smp_call_all(start_on_cpu, &interval);
}

struct start_one {
    unsigned cpu;
    uint64_t interval;
};

static void start_one_cpu(void *arg)
{
    const struct start_one *one = arg;
    if (cpu_id() == one->cpu)
        start_on_cpu((void *)&one->interval);
}

void profile_time_start_cpu(unsigned cpu)
{
    struct start_one one = {cpu, READ_ONCE(profile_time_interval)};
    smp_call_all(start_one_cpu, &one);
}

void profile_time_stop(void)
{
    smp_call_all(stop_on_cpu, NULL);
}
