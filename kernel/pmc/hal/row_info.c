// What each row is, for `pmc info` and NtPmcGetPmcInfo (hal/rows.h's
// description): its class, name and disposition, from the rows' state, the
// counters' and the HAL's started sources.
#include "pmc/hal/rows.h"

#include "lib/kprintf.h"
#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/swevent.h"

#include "pmc/hal/hal.h"
#include "pmc/hal/hal_interface.h"

// A counter's class, by hwpmc's names: IAF and IAP for Intel's fixed and
// programmable counters, K8 for AMD's (FreeBSD sys/sys/pmc.h, PMC_CLASS_*).
static uint32_t counter_class(unsigned i)
{
    if (pmc_hw[i].kind == PMC_COUNTER_FIXED)
        return PMC_CLASS_IAF;
    return halp_profile_interface == &amd64_profile_interface ? PMC_CLASS_K8 : PMC_CLASS_IAP;
}

static const char *class_name(uint32_t cls)
{
    switch (cls) {
    case PMC_CLASS_IAF: return "IAF";
    case PMC_CLASS_IAP: return "IAP";
    case PMC_CLASS_K8: return "K8";
    case PMC_CLASS_TIMER: return "TIMER";
    default: return "SOFT";
    }
}

// The sources a counter of class cls can count (the interface's CountersFor).
static uint64_t counter_events(uint32_t cls)
{
    uint64_t events = 0;
    for (unsigned s = 0; s < ProfileSourceCount && halp_profile_interface->CountersFor; s++) {
        if (s == ProfileTime)
            continue;
        uint32_t fits = halp_profile_interface->CountersFor((KPROFILE_SOURCE)s);
        for (unsigned i = 0; i < pmc_ncounters; i++)
            if ((fits >> i) & 1 && counter_class(i) == cls)
                events |= 1ull << s;
    }
    return events;
}

static unsigned bits(uint64_t mask)
{
    unsigned n = 0;
    for (; mask; mask &= mask - 1)
        n++;
    return n;
}

// Add row's class to out (rows of one class are consecutive).
static void count_class(struct pmc_cpuinfo *out, unsigned row, uint32_t cls)
{
    struct pmc_classinfo *c = &out->classes[out->nclass ? out->nclass - 1 : 0];
    if (out->nclass && c->cls == cls) {
        c->num++;
        return;
    }
    c = &out->classes[out->nclass++];
    *c = (struct pmc_classinfo){.cls = cls, .num = 1, .first_row = row};
    if (cls == PMC_CLASS_TIMER) { // deadlines are 64-bit TSC values (arch/x86/timer.c)
        c->caps = PMC_CAP_INTERRUPT | PMC_CAP_USER | PMC_CAP_SYSTEM;
        c->width = 64;
        c->events = 1ull << ProfileTime;
    } else if (cls == PMC_CLASS_SOFT) { // 64-bit running totals (core/swevent.h)
        c->caps = PMC_CAP_READ | PMC_CAP_WRITE | PMC_CAP_USER | PMC_CAP_SYSTEM;
        c->width = 64;
        c->events = (1ull << PMC_SW_COUNT) - 1;
    } else {
        c->caps = PMC_CAP_INTERRUPT | PMC_CAP_USER | PMC_CAP_SYSTEM | PMC_CAP_READ | PMC_CAP_WRITE;
        c->width = bits(pmc_hw[row].mask);
        c->events = counter_events(cls);
    }
}

void pmc_cpuinfo(struct pmc_cpuinfo *out)
{
    memset(out, 0, sizeof *out);
    out->ncpu = ncpus;
    out->npmc = pmc_row_count();
    snprintf(out->interface, sizeof out->interface, "%s", halp_profile_interface->name);
    for (unsigned r = 0; r < pmc_ncounters; r++)
        count_class(out, r, counter_class(r));
    count_class(out, pmc_row_timer(), PMC_CLASS_TIMER);
    for (unsigned e = 0; e < PMC_SW_COUNT; e++)
        count_class(out, pmc_row_soft((enum pmc_sw_event)e), PMC_CLASS_SOFT);
}

// A counter row: held for counting (every CPU) or sampling on cpu.
static void describe_counter(unsigned cpu, unsigned row, struct pmc_rowinfo *out)
{
    struct pmc_counter_cpu c = *(volatile struct pmc_counter_cpu *)pmc_counter(cpu, row);
    unsigned users = 0;
    enum pmc_row_scope scope = pmc_row_scope(row, &users);
    if (scope != PMC_ROW_FREE) {
        out->disp = scope == PMC_ROW_THREAD ? PMC_DISP_THREAD : PMC_DISP_STANDALONE;
        out->users = users;
    } else if (c.period) {
        struct hal_profile_source_details d;
        out->disp = PMC_DISP_STANDALONE; // the HAL's source, started on every CPU
        out->event = c.source;
        out->reload = c.period;
        out->users = NT_SUCCESS(HalQueryProfileSource((KPROFILE_SOURCE)c.source, &d)) ? d.users : 0;
    }
}

// The timer row: ProfileTime runs on every CPU whose row is enabled.
static void describe_timer(struct pmc_rowinfo *out)
{
    struct hal_profile_source_details d;
    if (NT_SUCCESS(HalQueryProfileSource(ProfileTime, &d)) && d.started && out->enabled) {
        out->disp = PMC_DISP_STANDALONE;
        out->event = ProfileTime;
        out->reload = d.interval; // 100 ns units
        out->users = d.users;
    }
}

void pmc_row_describe(unsigned cpu, unsigned row, struct pmc_rowinfo *out)
{
    *out = (struct pmc_rowinfo){.disp = PMC_DISP_FREE, .event = PMC_EVENT_NONE};
    out->enabled = !pmc_row_off(cpu, row);
    if (row < pmc_ncounters) {
        unsigned n = 0;
        for (unsigned i = 0; i < row; i++)
            n += counter_class(i) == counter_class(row);
        out->cls = counter_class(row);
        snprintf(out->name, sizeof out->name, "%s-%u", class_name(out->cls), n);
        describe_counter(cpu, row, out);
    } else if (row == pmc_row_timer()) {
        out->cls = PMC_CLASS_TIMER;
        snprintf(out->name, sizeof out->name, "TIMER-0");
        describe_timer(out);
    } else {
        out->cls = PMC_CLASS_SOFT;
        snprintf(out->name, sizeof out->name, "SOFT-%s",
                 swevent_name((enum pmc_sw_event)(row - pmc_row_soft(0))));
    }
    if (!out->enabled)
        out->disp = PMC_DISP_STANDALONE; // hwpmc: PMC_MARK_ROW_STANDALONE
}
