// Drawing a sequence's steps (each from the state the earlier ones left, so
// that most act on something live), describing them, and the text REPLAY=
// reads back: "NCPUS.NMI;KIND.CPU.A.B.N,...". A step whose operands name
// nothing live does nothing, so a shrunk sequence still replays.
#define _POSIX_C_SOURCE 200809L // strtok_r
#include <stdio.h>
#include <string.h>

#include "kx.h"

#include "../xorshift.h"

// How often each kind of step is drawn (among those of the sequence's swarm).
static const unsigned weights[KX_KINDS] = {
    [KX_RUN] = 30,   [KX_SAMPLE] = 20, [KX_CREATE] = 6, [KX_START] = 9,     [KX_STOP] = 7,
    [KX_CLOSE] = 3,  [KX_REPLACE] = 2, [KX_QUERY] = 2,  [KX_SWITCH] = 9,    [KX_MIGRATE] = 3,
    [KX_EXIT] = 1,   [KX_SPAWN] = 1,   [KX_IDLE] = 2,   [KX_PMC_START] = 1, [KX_PMC_STOP] = 1,
    [KX_ATTACH] = 1, [KX_DETACH] = 1,  [KX_NOMEM] = 2,  [KX_TRACE] = 1,     [KX_TICK] = 2,
};

static unsigned below(uint64_t *r, unsigned n)
{
    return (unsigned)(xorshift64(r) % n);
}

// One of the CPUs for which want() holds, or any.
static unsigned cpu_where(uint64_t *r, unsigned ncpus, bool (*want)(unsigned cpu))
{
    unsigned first = below(r, ncpus);
    for (unsigned i = 0; i < ncpus; i++)
        if (want((first + i) % ncpus))
            return (first + i) % ncpus;
    return first;
}

// A profile slot in the state wanted (0 none, 1 created, 2 started), or any.
static unsigned slot_where(uint64_t *r, int state)
{
    unsigned first = below(r, KX_SLOTS);
    for (unsigned i = 0; i < KX_SLOTS; i++)
        if (kx_profile_state((first + i) % KX_SLOTS) == state)
            return (first + i) % KX_SLOTS;
    return first;
}

static unsigned kind_of(uint64_t *r, uint32_t swarm)
{
    unsigned total = 0;
    for (unsigned k = 0; k < KX_KINDS; k++)
        total += (swarm >> k & 1) * weights[k];
    unsigned x = below(r, total);
    for (unsigned k = 0;; k++) {
        unsigned w = (swarm >> k & 1) * weights[k];
        if (x < w)
            return k;
        x -= w;
    }
}

// A sample: often where interrupts are off (inside a switch, a spinlock),
// of a source a profile counts.
static void draw_sample(uint64_t *r, struct kx_seq *s, struct kx_step *st)
{
    st->cpu = (uint8_t)(below(r, 2) ? cpu_where(r, s->ncpus, kx_cpu_irqs_off)
                                    : cpu_where(r, s->ncpus, kx_cpu_busy));
    KPROFILE_SOURCE src = kx_profile_source(below(r, 4) ? slot_where(r, 2) : below(r, KX_SLOTS));
    for (unsigned i = 0; i < KX_SOURCES; i++)
        if (kx_sources[i] == src)
            st->a = (uint8_t)i;
    st->b = (uint8_t)below(r, KX_ADDRS);
}

static void draw_operands(uint64_t *r, struct kx_seq *s, struct kx_step *st)
{
    st->cpu = (uint8_t)below(r, s->ncpus);
    st->a = (uint8_t)below(r, 8);
    st->b = (uint8_t)below(r, 8);
    switch (st->kind) {
    case KX_RUN:
        st->cpu = (uint8_t)cpu_where(r, s->ncpus, kx_cpu_busy);
        st->n = below(r, 10) < 4 ? 1 : below(r, 3) ? 0 : 2 + below(r, 5);
        break;
    case KX_SAMPLE: draw_sample(r, s, st); break;
    case KX_CREATE:
    case KX_REPLACE:
        st->a = (uint8_t)slot_where(r, st->kind == KX_CREATE ? 0 : 2);
        st->n = (uint32_t)xorshift64(r) & 0x7FF;
        st->n = (st->n & ~3u) | (below(r, 3) ? 1 + below(r, KX_PROCS) : 0); // mostly a process
        break;
    case KX_START: st->a = (uint8_t)slot_where(r, 1); break;
    case KX_STOP: st->a = (uint8_t)slot_where(r, 2); break;
    default: break;
    }
}

// What another CPU does while a probe's sample is held: an operation that
// frees or unmaps what a sample reads, then all of it.
static void draw_rival(uint64_t *r, struct kx_seq *s, unsigned cpu, struct kx_step *p)
{
    static const uint8_t rivals[] = {KX_STOP,   KX_STOP,     KX_CLOSE, KX_REPLACE,
                                     KX_DETACH, KX_PMC_STOP, KX_EXIT,  KX_SWITCH};
    p[0] = (struct kx_step){.kind = rivals[below(r, sizeof rivals)], .cpu = (uint8_t)cpu};
    draw_operands(r, s, &p[0]);
    p[0].cpu = (uint8_t)cpu;
    p[1] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)cpu};
}

// A probe: an operation on one CPU (mostly a context switch) held after a
// few slices, a sample taken there, held in turn after a few slices while
// (half the time) another CPU runs a whole operation, then the first CPU
// runs on. Random steps alone seldom stop exactly there.
static void draw_probe(uint64_t *r, struct kx_seq *s, struct kx_step *st)
{
    unsigned a = below(r, s->ncpus), w = (a + 1 + below(r, s->ncpus - 1)) % s->ncpus, n = 0;
    struct kx_step *p = s->pending;
    *st = (struct kx_step){.kind = KX_SWITCH, .cpu = (uint8_t)a, .a = (uint8_t)below(r, 4)};
    if (below(r, 3) == 0) {
        st->kind = (uint8_t)(KX_CREATE + below(r, KX_QUERY - KX_CREATE + 1));
        draw_operands(r, s, st);
        st->cpu = (uint8_t)a;
    }
    p[n++] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)a, .n = 1 + below(r, 8)};
    p[n] = (struct kx_step){.kind = KX_SAMPLE};
    draw_sample(r, s, &p[n]);
    p[n++].cpu = (uint8_t)a;
    p[n++] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)a, .n = 1 + below(r, 5)};
    if (below(r, 2)) {
        draw_rival(r, s, w, &p[n]);
        n += 2;
    }
    p[n++] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)a};
    s->npending = n;
}

static bool runs_profiled(unsigned cpu)
{
    const struct process *p = kx_running(cpu);
    return p && kx_profile_started_on(p) >= 0;
}

static uint8_t source_index(KPROFILE_SOURCE source)
{
    for (unsigned i = 0; i < KX_SOURCES; i++)
        if (kx_sources[i] == source)
            return (uint8_t)i;
    return 0;
}

// A probe of a context switch: a CPU that runs a profiled process takes a
// sample (its plan is kept), switches away and is held a few slices into the
// switch, where a sample lands and is held in turn while (mostly) another CPU
// stops the profile or does something else whole; then all runs on.
static void draw_switch_probe(uint64_t *r, struct kx_seq *s, struct kx_step *st)
{
    unsigned a = cpu_where(r, s->ncpus, runs_profiled), n = 0;
    unsigned w = (a + 1 + below(r, s->ncpus - 1)) % s->ncpus;
    const struct process *p = kx_running(a);
    int slot = p ? kx_profile_started_on(p) : -1;
    uint8_t src = slot >= 0 ? source_index(kx_profile_source((unsigned)slot)) : 0;
    struct kx_step *q = s->pending;
    *st = (struct kx_step){.kind = KX_SAMPLE, .cpu = (uint8_t)a, .a = src, .b = 0};
    q[n++] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)a};
    q[n++] = (struct kx_step){.kind = KX_SWITCH,
                              .cpu = (uint8_t)a,
                              .a = (uint8_t)(below(r, 2) ? 0 : below(r, KX_PROCS + 1))};
    q[n++] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)a, .n = 1 + below(r, 6)};
    q[n++] = (struct kx_step){
        .kind = KX_SAMPLE, .cpu = (uint8_t)a, .a = src, .b = (uint8_t)below(r, KX_ADDRS)};
    q[n++] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)a, .n = 1 + below(r, 5)};
    if (below(r, 4)) {
        draw_rival(r, s, w, &q[n]);
        if (slot >= 0 && below(r, 2))
            q[n] = (struct kx_step){.kind = KX_STOP, .cpu = (uint8_t)w, .a = (uint8_t)slot};
        n += 2;
    }
    q[n++] = (struct kx_step){.kind = KX_RUN, .cpu = (uint8_t)a};
    s->npending = n;
}

void kx_draw(uint64_t *r, struct kx_seq *s, unsigned i)
{
    struct kx_step *st = &s->steps[i];
    if (i == 0) {
        s->swarm = 1u << KX_RUN | 1u << KX_SAMPLE; // and each other kind with odds 3 in 4
        for (unsigned k = 0; k < KX_KINDS; k++)
            if (below(r, 4))
                s->swarm |= 1u << k;
        s->npending = 0;
    }
    if (s->npending) {
        *st = s->pending[0];
        memmove(&s->pending[0], &s->pending[1], --s->npending * sizeof s->pending[0]);
        return;
    }
    memset(st, 0, sizeof *st);
    if (below(r, 6) == 0) {
        if (below(r, 2))
            draw_probe(r, s, st);
        else
            draw_switch_probe(r, s, st);
        return;
    }
    st->kind = (uint8_t)kind_of(r, s->swarm);
    draw_operands(r, s, st);
}

static const char *const source_names[KX_SOURCES] = {"ProfileTime", "ProfileTotalIssues",
                                                     "ProfileUnhaltedCoreCycles"};

static void describe_profile(const struct kx_step *st, char *buf, unsigned size)
{
    unsigned n = st->n, scope = kx_param_scope(n), range = kx_param_range(n);
    char who[24] = "system-wide";
    if (scope)
        snprintf(who, sizeof who, "process slot %u", scope - 1);
    snprintf(buf, size, "cpu%u: %s profile %u: %s, %s, range %u (%s), CPUs %#x%s", st->cpu,
             st->kind == KX_CREATE ? "create" : "close, create and start", st->a % KX_SLOTS, who,
             source_names[kx_param_source(n)], range, kx_range_names[range], kx_param_affinity(n),
             kx_param_affinity(n) ? "" : " (all)");
}

void kx_describe(const struct kx_step *st, char *buf, unsigned size)
{
    unsigned c = st->cpu, slot = st->a % KX_SLOTS, t = st->a % KX_PROCS, m = st->a % KX_PMCS;
    switch (st->kind) {
    case KX_RUN:
        if (st->n)
            snprintf(buf, size, "cpu%u runs %u slice%s", c, st->n, st->n > 1 ? "s" : "");
        else
            snprintf(buf, size, "cpu%u runs until it is idle or waits", c);
        return;
    case KX_SAMPLE:
        snprintf(buf, size, "cpu%u: a sample of %s at %#llx", c, source_names[st->a % KX_SOURCES],
                 (unsigned long long)kx_addrs[st->b % KX_ADDRS]);
        return;
    case KX_CREATE:
    case KX_REPLACE: describe_profile(st, buf, size); return;
    case KX_START: snprintf(buf, size, "cpu%u: start profile %u", c, slot); return;
    case KX_STOP: snprintf(buf, size, "cpu%u: stop profile %u", c, slot); return;
    case KX_QUERY: snprintf(buf, size, "cpu%u: query profile %u", c, slot); return;
    case KX_CLOSE:
        snprintf(buf, size, "cpu%u: close profile %u (%s)", c, slot,
                 st->b & 1 ? "its destroy stops it" : "stopped first");
        return;
    case KX_SWITCH:
        if (st->a % (KX_PROCS + 1))
            snprintf(buf, size, "cpu%u: switch to process slot %u", c, st->a % (KX_PROCS + 1) - 1);
        else
            snprintf(buf, size, "cpu%u: switch to the idle thread", c);
        return;
    case KX_MIGRATE: snprintf(buf, size, "cpu%u: process slot %u migrates here", c, t); return;
    case KX_EXIT:
        snprintf(buf, size, "process slot %u exits (where it runs, or on cpu%u)", t, c);
        return;
    case KX_SPAWN:
        snprintf(buf, size, "process slot %u: reaped if it exited, a new one", t);
        return;
    case KX_IDLE: snprintf(buf, size, "cpu%u: a pass through the idle loop", c); return;
    case KX_PMC_START: snprintf(buf, size, "cpu%u: start PMC %u", c, m); return;
    case KX_PMC_STOP: snprintf(buf, size, "cpu%u: stop PMC %u", c, m); return;
    case KX_ATTACH:
    case KX_DETACH:
        snprintf(buf, size, "cpu%u: %s PMC %u %s process slot %u", c,
                 st->kind == KX_ATTACH ? "attach" : "detach", m,
                 st->kind == KX_ATTACH ? "to" : "from", st->b % KX_PROCS);
        return;
    case KX_NOMEM: snprintf(buf, size, "cpu%u: its next kmalloc fails", c); return;
    case KX_TRACE: snprintf(buf, size, "pmc trace turned on or off"); return;
    case KX_TICK: snprintf(buf, size, "cpu%u: the scheduler tick (from ring 3)", c); return;
    default: snprintf(buf, size, "cpu%u: grace step %u", c, st->a); return;
    }
}

void kx_format(const struct kx_seq *s, char *buf, unsigned size)
{
    int n = snprintf(buf, size, "%u.%u;", s->ncpus, s->nmi);
    for (unsigned i = 0; i < s->nsteps && n > 0 && (unsigned)n < size; i++) {
        const struct kx_step *st = &s->steps[i];
        n += snprintf(buf + n, size - (unsigned)n, "%s%u.%u.%u.%u.%u", i ? "," : "", st->kind,
                      st->cpu, st->a, st->b, st->n);
    }
}

bool kx_parse(const char *text, struct kx_seq *s)
{
    char buf[KX_MAX_STEPS * 40 + 32], *save = NULL;
    memset(s, 0, sizeof *s);
    snprintf(buf, sizeof buf, "%s", text);
    const char *head = strtok_r(buf, ";", &save);
    if (!head || sscanf(head, "%u.%u", &s->ncpus, &s->nmi) != 2 || s->ncpus < 1 ||
        s->ncpus > KX_CPUS)
        return false;
    for (const char *step; (step = strtok_r(NULL, ",", &save));) {
        unsigned v[5];
        if (s->nsteps == KX_MAX_STEPS ||
            sscanf(step, "%u.%u.%u.%u.%u", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5 ||
            v[0] >= KX_KINDS)
            return false;
        s->steps[s->nsteps++] =
            (struct kx_step){(uint8_t)v[0], (uint8_t)v[1], (uint8_t)v[2], (uint8_t)v[3], v[4]};
    }
    return true;
}
