// Software-event accounting at context switches, and reading the totals.
#include "core/swevent.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"

static const char *const names[PMC_SW_COUNT] = {
    [PMC_SW_TASK_CLOCK] = "task-clock",         [PMC_SW_CONTEXT_SWITCHES] = "context-switches",
    [PMC_SW_CPU_MIGRATIONS] = "cpu-migrations", [PMC_SW_PAGE_FAULTS] = "page-faults",
    [PMC_SW_SYSCALLS] = "system-calls",         [PMC_SW_PROFILE_INTERRUPTS] = "profile-interrupts",
    [PMC_SW_PROFILE_TICKS] = "profile-ticks",
};

const char *swevent_name(enum pmc_sw_event e)
{
    return (unsigned)e < PMC_SW_COUNT ? names[e] : "?";
}

uint64_t (*swevent_profile_ticks)(unsigned cpu);
struct swevent_cpu swevent_cpus[MAX_CPUS];

// PMIs and ProfileTime ticks taken on c since its last switch (*seen_*: the
// counts now). Both counts only grow, each one store by c: another CPU's
// reader never sees one go back. (The timer's own expiry count restarts with
// the source, and is two fields, deadline and missed, that a reader could
// meet half updated.)
static void pending(unsigned cpu, uint64_t *pmis, uint64_t *ticks, uint64_t *seen_pmis,
                    uint64_t *seen_ticks)
{
    const struct swevent_cpu *sc = &swevent_cpus[cpu];
    uint64_t p = READ_ONCE(sc->pmis);
    uint64_t (*profile_ticks)(unsigned) = READ_ONCE(swevent_profile_ticks);
    uint64_t t = profile_ticks ? profile_ticks(cpu) : 0;
    *pmis = p - READ_ONCE(sc->pmis_seen);
    *ticks = t - READ_ONCE(sc->ticks_seen);
    *seen_pmis = p;
    *seen_ticks = t;
}

// Interrupts c took since its last switch, not yet charged to anyone: a read
// of a running thread's or of a CPU's total includes them.
static uint64_t uncharged(unsigned cpu, enum pmc_sw_event e)
{
    uint64_t pmis, ticks, p, t;
    if (e != PMC_SW_PROFILE_TICKS && e != PMC_SW_PROFILE_INTERRUPTS)
        return 0;
    pending(cpu, &pmis, &ticks, &p, &t);
    return e == PMC_SW_PROFILE_TICKS ? ticks : pmis + ticks;
}

void swevent_switch(struct cpu *c, struct thread *cur, struct thread *next, uint64_t ran_ns)
{
    struct swevent_cpu *sc = &swevent_cpus[c->id];
    uint64_t pmis, ticks, *sw = sc->count;
    pending(c->id, &pmis, &ticks, &sc->pmis_seen, &sc->ticks_seen);
    cur->sw[PMC_SW_PROFILE_INTERRUPTS] += pmis + ticks;
    cur->sw[PMC_SW_PROFILE_TICKS] += ticks;
    sw[PMC_SW_PROFILE_INTERRUPTS] += pmis + ticks;
    sw[PMC_SW_PROFILE_TICKS] += ticks;
    cur->sw[PMC_SW_CONTEXT_SWITCHES]++;
    sw[PMC_SW_CONTEXT_SWITCHES]++;
    if (cur != c->idle)
        sw[PMC_SW_TASK_CLOCK] += ran_ns; // the CPU's task-clock is its busy time
    if (next->cpu >= 0 && (unsigned)next->cpu != c->id && next != c->idle) {
        next->sw[PMC_SW_CPU_MIGRATIONS]++;
        sw[PMC_SW_CPU_MIGRATIONS]++;
    }
}

uint64_t swevent_thread_value(const struct thread *t, enum pmc_sw_event e)
{
    if (e != PMC_SW_TASK_CLOCK) {
        uint64_t v = READ_ONCE(t->sw[e]);
        int cpu = READ_ONCE(t->cpu);
        if (READ_ONCE(t->state) == T_RUNNING && cpu >= 0 && READ_ONCE(cpus[cpu].current) == t)
            v += uncharged((unsigned)cpu, e);
        return v;
    }
    uint64_t ns = READ_ONCE(t->cpu_ns), start = READ_ONCE(t->run_start_ns);
    if (READ_ONCE(t->state) == T_RUNNING) {
        uint64_t now = clock_ns();
        ns += now > start ? now - start : 0;
    }
    return ns;
}

uint64_t swevent_cpu_value(unsigned cpu, enum pmc_sw_event e)
{
    struct cpu *c = &cpus[cpu];
    uint64_t v = READ_ONCE(swevent_cpus[cpu].count[e]) + uncharged(cpu, e);
    if (e == PMC_SW_TASK_CLOCK) {
        struct thread *t = READ_ONCE(c->current);
        if (t && t != c->idle) {
            uint64_t now = clock_ns(), start = READ_ONCE(t->run_start_ns);
            v += now > start ? now - start : 0;
        }
    }
    return v;
}

bool swevent_has_levels(enum pmc_sw_event e)
{
    return e == PMC_SW_TASK_CLOCK;
}

// Ring-3 TSC ticks: *total, and while the CPU's stamp says its thread is in
// user mode, the time since. The stamp is read before and after: an entry or a
// return in between (each changes it: the TSC only grows) makes the reader
// try again, so a total and a stamp of different moments are never added.
static uint64_t user_ticks(const volatile uint64_t *total, const struct cpu *c,
                           const struct thread *t)
{
    for (;;) {
        uint64_t s1 = c ? c->user_since : 0, v = *total, now = rdtsc();
        uint64_t s2 = c ? c->user_since : 0;
        if (t && READ_ONCE(c->current) != t) // switched out: its total is whole
            c = NULL, t = NULL;
        else if (s1 == s2)
            return v + (s1 && now > s1 ? now - s1 : 0);
    }
}

// All of it, or one level of task-clock: user mode's time, or the rest.
static uint64_t split(uint64_t all, uint64_t user_ns, unsigned levels)
{
    if ((levels & SWEVENT_LEVELS_ALL) == SWEVENT_LEVELS_ALL)
        return all;
    if (levels & SWEVENT_LEVEL_USER)
        return MIN(user_ns, all);
    return all > user_ns ? all - user_ns : 0;
}

uint64_t swevent_thread_value_levels(const struct thread *t, enum pmc_sw_event e, unsigned levels)
{
    uint64_t all = swevent_thread_value(t, e);
    if (!swevent_has_levels(e) || (levels & SWEVENT_LEVELS_ALL) == SWEVENT_LEVELS_ALL)
        return all;
    int cpu = READ_ONCE(t->cpu);
    const struct cpu *c = cpu >= 0 ? &cpus[cpu] : NULL;
    bool on = c && READ_ONCE(t->state) == T_RUNNING && READ_ONCE(c->current) == t;
    return split(all, tsc_to_ns(user_ticks(&t->user_tsc, on ? c : NULL, on ? t : NULL)), levels);
}

uint64_t swevent_cpu_value_levels(unsigned cpu, enum pmc_sw_event e, unsigned levels)
{
    uint64_t all = swevent_cpu_value(cpu, e);
    if (!swevent_has_levels(e) || (levels & SWEVENT_LEVELS_ALL) == SWEVENT_LEVELS_ALL)
        return all;
    const struct cpu *c = &cpus[cpu];
    return split(all, tsc_to_ns(user_ticks(&c->cpu_user_tsc, c, NULL)), levels);
}
