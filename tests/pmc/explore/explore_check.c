// The invariants the explorer checks after every step, against the reference.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "explore.h"
#include "arch/x86/msr.h"
#include "ke_host.h"
#include "pmc/hal/counts.h"
#include "pmc/hal/pmi.h"
#include "pmc/hwpmc/pmc.h"
#include "tests.h"

static bool fail(char *msg, unsigned size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(char *msg, unsigned size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return false;
}

// Events of source s retired on cpu so far; inside a retire, those before the
// overflow whose PMI is running (every event of it is counted by the counter
// that overflowed, so the model's count of it moves with the retire).
uint64_t ex_truth(unsigned cpu, unsigned s)
{
    uint64_t t = ex_ref.total[cpu][s];
    if (ex_ref.retiring && ex_ref.r_cpu == cpu && ex_ref.r_src == s) {
        t += model_counted(cpu, ex_event(s)) - ex_ref.r_counted;
        if (ex_event(s) == EV_INSTRUCTIONS) // the PMI path's own, counted by the same counters
            t -= model_handler_retired(cpu) - ex_ref.r_handler;
    }
    return t;
}

// ---- one owner per counter ----

static bool counter_enabled(unsigned cpu, unsigned i)
{
    const struct pmc_counter_hw *hw = &pmc_hw[i];
    if (hw->kind == PMC_COUNTER_GENERAL)
        return model_gp_ctl(cpu, hw->number) & PERFEVTSEL_EN;
    return (model_fixed_ctrl(cpu) >> (4 * hw->number)) & 3;
}

static bool check_owners(char *msg, unsigned size)
{
    for (unsigned cpu = 0; cpu < ex_ref.ncpus; cpu++)
        for (unsigned i = 0; i < pmc_ncounters; i++) {
            bool counting = pmc_counters_loaded[cpu] >> i & 1;
            bool sampling = pmc_counter(cpu, i)->period != 0;
            if (counting && sampling)
                return fail(msg, size,
                            "two owners: counter %u on cpu %u holds a loaded count and "
                            "samples source %u",
                            i, cpu, (unsigned)pmc_counter(cpu, i)->source);
            if (counter_enabled(cpu, i) && !counting && !sampling)
                return fail(msg, size, "no owner: counter %u on cpu %u counts for nobody", i, cpu);
        }
    return true;
}

// ---- counts: exact, or short when multiplexed, never backwards ----

static bool check_count(unsigned slot, char *msg, unsigned size)
{
    struct ex_pmc *m = &ex_ref.pmc[slot];
    struct pmc_value v = {0};
    if (!NT_SUCCESS(pmc_read(m->p, &v)))
        return fail(msg, size, "read: P%u refused a read", slot);
    ex_note_handler(); // the read may have let a latched PMI in
    bool exact = !m->mux || v.time_enabled == v.time_running;
    uint64_t got = v.value, want = m->expect, last = m->last;
    m->last = got;
    if (ex_verbose)
        printf("    P%u: read %llu, reference %llu%s (enabled %llu ns, running %llu ns)\n", slot,
               (unsigned long long)got, (unsigned long long)want,
               m->mux ? ", may be multiplexed" : "", (unsigned long long)v.time_enabled,
               (unsigned long long)v.time_running);
    if (v.time_running > v.time_enabled)
        return fail(msg, size, "times: P%u ran %llu ns of %llu ns enabled", slot,
                    (unsigned long long)v.time_running, (unsigned long long)v.time_enabled);
    if (got < last)
        return fail(msg, size, "backwards: P%u read %llu after %llu", slot, (unsigned long long)got,
                    (unsigned long long)last);
    if (got > want + m->slack)
        return fail(msg, size, "count: P%u counted %llu, more than its targets retired, %llu", slot,
                    (unsigned long long)got, (unsigned long long)want);
    if (exact && (got < want || got > want + m->slack))
        return fail(msg, size,
                    "count: P%u counted %llu, its targets retired %llu (not multiplexed: "
                    "enabled %llu ns, running %llu ns)",
                    slot, (unsigned long long)got, (unsigned long long)want,
                    (unsigned long long)v.time_enabled, (unsigned long long)v.time_running);
    return true;
}

// ---- samples: none without an overflow, every one reported ----

static uint64_t allowed(unsigned cpu, unsigned s)
{
    uint64_t a = ex_ref.budget[cpu][s];
    if (ex_ref.hal_on[s])
        a += ex_ref.window[cpu][s] / ex_ref.hal_interval[s];
    return a;
}

static bool check_samples(char *msg, unsigned size)
{
    for (unsigned cpu = 0; cpu < ex_ref.ncpus; cpu++) {
        uint64_t periods = 0, got = 0;
        for (unsigned s = 0; s < EX_SOURCES; s++) {
            uint64_t a = allowed(cpu, s);
            periods += a;
            got += ex_ref.samples[cpu][s];
            if (ex_ref.samples[cpu][s] > a)
                return fail(msg, size,
                            "sample without an overflow: cpu %u, source %u: %llu samples, "
                            "%llu periods retired",
                            cpu, s, (unsigned long long)ex_ref.samples[cpu][s],
                            (unsigned long long)a);
        }
        struct pmc_pmi_stats st;
        pmc_pmi_stats(cpu, &st);
        if (st.samples != got)
            return fail(msg, size, "delivered: cpu %u: the PMI reported %llu samples, %llu arrived",
                        cpu, (unsigned long long)st.samples, (unsigned long long)got);
        if (st.samples + st.lost > periods)
            return fail(msg, size,
                        "lost: cpu %u: %llu samples + %llu lost periods, %llu periods retired", cpu,
                        (unsigned long long)st.samples, (unsigned long long)st.lost,
                        (unsigned long long)periods);
    }
    return true;
}

// ---- logger records: deltas are the events between them ----

static bool check_record(struct ex_logger *l, unsigned cpu, const uint64_t *value, unsigned n,
                         const char *what, char *msg, unsigned size)
{
    if (!l->on || cpu >= ex_ref.ncpus || n != l->n)
        return true;
    uint64_t handler = model_handler_retired(cpu), extra = handler - l->handler[cpu];
    for (unsigned i = 0; i < l->n; i++) {
        uint64_t truth = ex_truth(cpu, l->src[i]);
        uint64_t moved = value[i] - l->value[cpu][i], want = truth - l->truth[cpu][i];
        // The PMI path's instructions: those between the two records, give
        // or take the rest of one PMI's (each record is read partway into it).
        uint64_t slack = ex_event(l->src[i]) == EV_INSTRUCTIONS
                             ? extra + 64 * (uint64_t)model_config()->handler_insns
                             : 0;
        if (l->have[cpu] && (moved < want || moved > want + slack))
            return fail(msg, size,
                        "logger: %s record on cpu %u, counter %u (source %u) moved %llu, "
                        "%llu events retired (%s)",
                        what, cpu, i, l->src[i], (unsigned long long)moved,
                        (unsigned long long)want, moved < want ? "short" : "ahead");
        l->value[cpu][i] = value[i];
        l->truth[cpu][i] = truth;
    }
    l->handler[cpu] = handler;
    l->have[cpu] = true;
    return true;
}

bool ex_check_records(char *msg, unsigned size)
{
    bool ok = true;
    size_t off = 0;
    while (ok && off + sizeof(struct pmclog_header) <= ke_host_log.nbytes) {
        const struct pmclog_header *h = (const void *)(ke_host_log.bytes + off);
        if (h->size == 0)
            break;
        if (h->type == PMCLOG_CSWITCH) {
            const struct pmclog_cswitch *r = (const void *)h;
            ok = check_record(&ex_ref.log[0], h->cpu, r->value, r->nevents, "CSwitch", msg, size);
        } else if (h->type == PMCLOG_HOOK) {
            const struct pmclog_hook *r = (const void *)h;
            ok = check_record(&ex_ref.log[1], h->cpu, r->value, r->ncounters, "hook", msg, size);
        }
        off += h->size;
    }
    ke_host_log.nbytes = 0;
    return ok;
}

bool ex_check(char *msg, unsigned size)
{
    if (!check_owners(msg, size) || !check_samples(msg, size) || !ex_check_records(msg, size))
        return false;
    for (unsigned i = 0; i < EX_SLOTS; i++)
        if (ex_ref.pmc[i].live && ex_ref.pmc[i].counting && !check_count(i, msg, size))
            return false;
    return true;
}

// Once everything is released: no row reserved, no counter owned or counting.
bool ex_check_idle(char *msg, unsigned size)
{
    if (pmc_rows_reserved)
        return fail(msg, size, "idle: rows 0x%x still reserved after every release",
                    (unsigned)pmc_rows_reserved);
    for (unsigned cpu = 0; cpu < ex_ref.ncpus; cpu++)
        for (unsigned i = 0; i < pmc_ncounters; i++)
            if ((pmc_counters_loaded[cpu] >> i & 1) || pmc_counter(cpu, i)->period ||
                counter_enabled(cpu, i))
                return fail(msg, size, "idle: counter %u on cpu %u still %s after every release", i,
                            cpu,
                            pmc_counter(cpu, i)->period         ? "sampling"
                            : pmc_counters_loaded[cpu] >> i & 1 ? "counting"
                                                                : "enabled");
    return true;
}

// A read as a step (the check reads every count too, with no NMI injected).
bool ex_read_step(unsigned slot, char *msg, unsigned size)
{
    if (!ex_ref.pmc[slot].live || !ex_ref.pmc[slot].counting)
        return true;
    return check_count(slot, msg, size);
}
