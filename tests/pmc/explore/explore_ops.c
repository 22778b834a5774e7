// The explorer's steps: drawing them from a seed, and naming them.
#include <stdio.h>
#include "explore.h"
#include "lib/abi/profile.h"

// Instructions, branches and mispredicted branches: events every PMU here
// counts on a general counter (instructions also on Intel's FIXED_CTR0).
static const KPROFILE_SOURCE sources[EX_SOURCES] = {ProfileTotalIssues, ProfileBranchInstructions,
                                                    ProfileBranchMispredictions};
static const enum model_event events[EX_SOURCES] = {EV_INSTRUCTIONS, EV_BRANCHES, EV_BRANCH_MISSES};

KPROFILE_SOURCE ex_source(unsigned i)
{
    return sources[i % EX_SOURCES];
}

enum model_event ex_event(unsigned i)
{
    return events[i % EX_SOURCES];
}

// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators").
uint64_t ex_rand(struct ex_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

unsigned ex_below(struct ex_rng *r, unsigned n)
{
    return n ? (unsigned)(ex_rand(r) % n) : 0;
}

// How often each kind is drawn: events and switches most, so that counts move.
static const uint8_t weight[OP_KINDS] = {
    [OP_ALLOC] = 10,    [OP_ATTACH] = 8,   [OP_DETACH] = 2,     [OP_START] = 8,
    [OP_STOP] = 3,      [OP_READ] = 4,     [OP_WRITE] = 1,      [OP_RELEASE] = 4,
    [OP_HAL_START] = 7, [OP_HAL_STOP] = 3, [OP_HAL_PERIOD] = 2, [OP_CSW_START] = 2,
    [OP_CSW_STOP] = 1,  [OP_TRACE_ON] = 2, [OP_TRACE_OFF] = 1,  [OP_ROW_ADMIN] = 1,
    [OP_SWITCH] = 12,   [OP_EXIT] = 1,     [OP_TICK] = 5,       [OP_RETIRE] = 16,
    [OP_PMI] = 3,       [OP_NMI] = 2,      [OP_HOOK] = 4,
};

// Swarm testing (Groce, Zhang, Eide, Chen and Regehr, "Swarm Testing", ISSTA
// 2012): each sequence draws its steps from a random subset of the kinds, so
// that some sequences never stop, detach or switch and pile up state that an
// even mix keeps undoing (five counts on four counters, a row released under
// another's count). One sequence in three keeps every kind. Allocation and
// retiring events are always in. The PMC modes a sequence allocates are
// drawn the same way (SWARM_MODES: bits above the kinds), so that some
// sequences have only system-scope counts contending for one scope's rows.
// SWARM_ONE_SOURCE: every step of the sequence uses its favourite source, so
// that counts, samplers and loggers all want the same counters.
#define SWARM_MODES      24
#define SWARM_ONE_SOURCE (1u << 28)
_Static_assert(OP_KINDS <= SWARM_MODES, "the kinds and the modes share the swarm word");

static uint32_t draw_swarm(struct ex_rng *r)
{
    uint32_t all = (1u << OP_KINDS) - 1, modes = 1 + ex_below(r, 15);
    if (ex_below(r, 3) == 0)
        return all | 15u << SWARM_MODES;
    uint32_t one = ex_below(r, 2) ? SWARM_ONE_SOURCE : 0;
    return ((uint32_t)ex_rand(r) & all) | 1u << OP_ALLOC | 1u << OP_RETIRE | modes << SWARM_MODES |
           one;
}

// The mode of an allocation: SC and TC three times as often as SS and TS
// when all four are in, else one of the sequence's modes.
static uint8_t draw_mode(struct ex_rng *r, uint32_t swarm)
{
    unsigned modes = (swarm >> SWARM_MODES) & 15, pick[4], n = 0;
    if (modes == 15)
        return (uint8_t)(ex_below(r, 4) ? 1 + 2 * ex_below(r, 2) : 2 * ex_below(r, 2));
    for (unsigned m = 0; m < 4; m++)
        if ((modes >> m) & 1)
            pick[n++] = m;
    return (uint8_t)pick[ex_below(r, n)];
}

static unsigned draw_kind(struct ex_rng *r, uint32_t swarm)
{
    unsigned sum = 0;
    for (unsigned k = 0; k < OP_KINDS; k++)
        sum += (swarm >> k) & 1 ? weight[k] : 0;
    unsigned x = ex_below(r, sum);
    for (unsigned k = 0; k < OP_KINDS; k++) {
        unsigned w = (swarm >> k) & 1 ? weight[k] : 0;
        if (x < w)
            return k;
        x -= w;
    }
    return OP_RETIRE;
}

// Events per retire: mostly small, sometimes enough to overflow a period.
static uint32_t draw_events(struct ex_rng *r)
{
    static const uint32_t scale[4] = {10, 1000, 20000, 300000};
    return 1 + ex_below(r, scale[ex_below(r, 4)]);
}

// A live slot (or any, when none is), so that most steps act on a PMC.
static uint8_t pick_slot(struct ex_rng *r, bool live)
{
    unsigned c[EX_SLOTS], n = 0;
    for (unsigned i = 0; i < EX_SLOTS; i++)
        if (ex_ref.pmc[i].live == live)
            c[n++] = i;
    return (uint8_t)(n ? c[ex_below(r, n)] : ex_below(r, EX_SLOTS));
}

// Sources: one favourite per sequence most of the time (always, in a
// one-source swarm), so that counts, samplers and loggers contend for the
// same counters.
static uint8_t pick_source(struct ex_rng *r, unsigned favourite, uint32_t swarm)
{
    if (swarm & SWARM_ONE_SOURCE)
        return (uint8_t)favourite;
    return (uint8_t)(ex_below(r, 3) ? favourite : ex_below(r, EX_SOURCES));
}

static uint8_t logger_list(struct ex_rng *r, unsigned favourite, uint32_t swarm)
{
    unsigned a = 0;
    for (unsigned i = 0; i < 4; i++)
        a |= (unsigned)pick_source(r, favourite, swarm) << (2 * i);
    return (uint8_t)a;
}

static struct ex_op draw(struct ex_rng *r, unsigned favourite, uint32_t swarm)
{
    struct ex_op op = {.kind = (uint8_t)draw_kind(r, swarm)};
    unsigned ncpus = ex_ref.ncpus ? ex_ref.ncpus : 1;
    op.a = pick_slot(r, op.kind != OP_ALLOC);
    op.b = (uint8_t)ex_below(r, 256);
    op.c = pick_source(r, favourite, swarm);
    op.n = draw_events(r);
    switch (op.kind) {
    case OP_ALLOC:
        op.b = draw_mode(r, swarm);                          // mode_names' order
        op.n = ex_below(r, 4) == 0 ? 1 + ex_below(r, 2) : 0; // mostly both levels
        break;
    case OP_HAL_START:
    case OP_HAL_STOP:
    case OP_HAL_PERIOD:
        op.a = pick_source(r, favourite, swarm);
        op.n = ex_below(r, 4) ? 500 + ex_below(r, 8000) : 0; // short periods: overflows
        break;
    case OP_CSW_START:
    case OP_TRACE_ON:
        op.a = logger_list(r, favourite, swarm);
        op.c = (uint8_t)(ex_below(r, 2) ? 3 : ex_below(r, 16)); // mostly CSwitch and profile
        break;
    case OP_ROW_ADMIN:
    case OP_SWITCH:
    case OP_TICK:
    case OP_NMI:
    case OP_HOOK: op.a = (uint8_t)ex_below(r, ncpus); break;
    case OP_RETIRE:
        op.a = (uint8_t)ex_below(r, ncpus);
        op.b = op.c;
        op.c = (uint8_t)ex_below(r, 2);
        break;
    default: break;
    }
    return op;
}

// Step i of a sequence drawn as it runs, from the reference's state then.
void ex_draw(struct ex_rng *r, struct ex_seq *s, unsigned i)
{
    if (i == 0) {
        s->favourite = (uint8_t)ex_below(r, EX_SOURCES);
        s->swarm = draw_swarm(r);
    }
    s->ops[i] = draw(r, s->favourite, s->swarm);
}

static const char *const kind_names[OP_KINDS] = {
    "alloc",    "attach",   "detach",    "start",     "stop",       "read",
    "write",    "release",  "hal-start", "hal-stop",  "hal-period", "csw-start",
    "csw-stop", "trace-on", "trace-off", "row-admin", "switch",     "exit",
    "tick",     "retire",   "pmi",       "nmi",
};

static const char *const mode_names[4] = {"SS", "SC", "TS", "TC"};

// What a step does, in words (the operands as ex_apply reduces them).
void ex_describe(const struct ex_op *op, char *buf, unsigned size)
{
    unsigned slot = op->a % EX_SLOTS, s = op->c % EX_SOURCES;
    const char *k = op->kind < OP_KINDS ? kind_names[op->kind] : "?";
    switch (op->kind) {
    case OP_ALLOC:
        snprintf(buf, size, "%s P%u %s source %u rings %u", k, slot, mode_names[op->b % 4], s,
                 op->n % 3);
        break;
    case OP_ATTACH:
    case OP_DETACH: snprintf(buf, size, "%s P%u proc %u", k, slot, 1 + op->b % 3); break;
    case OP_WRITE: snprintf(buf, size, "%s P%u %u", k, slot, op->n); break;
    case OP_HAL_START:
    case OP_HAL_STOP: snprintf(buf, size, "%s source %u", k, op->a % EX_SOURCES); break;
    case OP_HAL_PERIOD: snprintf(buf, size, "%s source %u %u", k, op->a % EX_SOURCES, op->n); break;
    case OP_CSW_START:
    case OP_TRACE_ON:
        snprintf(buf, size, "%s events 0x%x n %u hooks 0x%x", k, op->a, 1 + op->b % 4, op->c % 16);
        break;
    case OP_ROW_ADMIN:
        snprintf(buf, size, "%s cpu %u row %u %s", k, op->a, op->b % 8, op->c & 1 ? "off" : "on");
        break;
    case OP_SWITCH: snprintf(buf, size, "%s cpu %u thread %u", k, op->a, op->b % EX_PROCS); break;
    case OP_EXIT: snprintf(buf, size, "%s proc %u", k, 1 + op->b % 3); break;
    case OP_RETIRE:
        snprintf(buf, size, "%s cpu %u source %u %s %u", k, op->a, op->b % EX_SOURCES,
                 op->c & 1 ? "user" : "kernel", op->n);
        break;
    case OP_TICK:
    case OP_NMI: snprintf(buf, size, "%s cpu %u", k, op->a); break;
    case OP_HOOK:
        snprintf(buf, size, "%s cpu %u %s", k, op->a, op->b & 1 ? "page fault" : "system call");
        break;
    default: snprintf(buf, size, "%s P%u", k, slot); break;
    }
}
