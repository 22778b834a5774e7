// The calls of a sequence: each one drawn from (seed, index) alone.
#include "fuzz_state.h"
#include <stdio.h>

// Sequence j of a fuzzing process. Bit 0 says whether the process that runs
// it holds the privilege, so that a replay runs it the same way.
uint64_t seq_seed(uint64_t fuzzer_seed, uint64_t j, bool privileged)
{
    return (mix64(fuzzer_seed * 0x100000001B3ull + j) & ~1ull) | (privileged ? 1 : 0);
}

unsigned seq_len(uint64_t seed)
{
    return SEQ_MIN + (unsigned)(mix64(seed ^ 0x5EC) % (SEQ_MAX - SEQ_MIN + 1));
}

// How often each operation is drawn.
static const uint8_t weight[OP_COUNT] = {
    [OP_PROF_CREATE] = 6, [OP_PROF_CREATE_EX] = 3, [OP_PROF_START] = 6,   [OP_PROF_STOP] = 4,
    [OP_PROF_STATS] = 4,  [OP_INTERVAL_QUERY] = 2, [OP_INTERVAL_SET] = 2, [OP_PROF_REMAP] = 1,
    [OP_PMC_ALLOC] = 7,   [OP_PMC_ATTACH] = 5,     [OP_PMC_DETACH] = 3,   [OP_PMC_SET_COUNT] = 3,
    [OP_PMC_START] = 6,   [OP_PMC_STOP] = 4,       [OP_PMC_READ] = 3,     [OP_PMC_WRITE] = 2,
    [OP_PMC_QUERY] = 2,   [OP_PMC_GET_MSR] = 1,    [OP_PMC_ROWS] = 2,     [OP_LOG_CONFIGURE] = 4,
    [OP_LOG_RELEASE] = 2, [OP_LOG_FLUSH] = 2,      [OP_LOG_READ] = 4,     [OP_LOG_WRITE] = 2,
    [OP_LOG_STATS] = 2,   [OP_SPAWN] = 4,          [OP_RESUME] = 2,       [OP_KILL] = 2,
    [OP_WAIT] = 2,        [OP_OPEN] = 2,           [OP_CLOSE] = 6,        [OP_PROCESS_ID] = 1,
    [OP_BURN] = 4,        [OP_SLEEP] = 1,
};

// A sequence's theme, from its seed: which calls open it (resources the
// rest use, made with valid arguments) and which operations it draws more.
enum theme { THEME_MIXED, THEME_LOG, THEME_PROFILE, THEME_COUNT };

static enum theme theme_of(uint64_t seed)
{
    unsigned t = (unsigned)(mix64(seed ^ 0x7E) % 100);
    return t < 40 ? THEME_MIXED : t < 70 ? THEME_LOG : t < 85 ? THEME_PROFILE : THEME_COUNT;
}

// The opening calls of each theme, and the operations it draws three times as often.
struct theme_calls {
    uint8_t nopen, open[4];
    uint8_t nboost, boost[6];
};
static const struct theme_calls themes[] = {
    [THEME_MIXED] = {0, {0}, 0, {0}},
    [THEME_LOG] = {4,
                   {OP_LOG_CONFIGURE, OP_PMC_ALLOC, OP_PMC_ATTACH, OP_PMC_START},
                   6,
                   {OP_BURN, OP_LOG_READ, OP_LOG_STATS, OP_PMC_STOP, OP_PMC_START, OP_SPAWN}},
    [THEME_PROFILE] = {2,
                       {OP_PROF_CREATE, OP_PROF_START},
                       6,
                       {OP_BURN, OP_PROF_STATS, OP_PROF_STOP, OP_PROF_START, OP_INTERVAL_SET,
                        OP_SPAWN}},
    [THEME_COUNT] = {2,
                     {OP_PMC_ALLOC, OP_PMC_START},
                     6,
                     {OP_BURN, OP_PMC_READ, OP_PMC_QUERY, OP_PMC_WRITE, OP_PMC_STOP, OP_SLEEP}},
};

// The first calls of a mixed sequence make resources, so that later ones have some.
static const uint8_t makers[] = {OP_PROF_CREATE,   OP_PMC_ALLOC, OP_SPAWN,
                                 OP_LOG_CONFIGURE, OP_PMC_ALLOC, OP_PROF_CREATE_EX};

#define MUTATE_ONE_IN 5 // one call in five has one argument mutated

static unsigned op_weight(enum theme t, unsigned op)
{
    for (unsigned i = 0; i < themes[t].nboost; i++)
        if (themes[t].boost[i] == op)
            return 3u * weight[op];
    return weight[op];
}

static unsigned draw_op(enum theme t, uint64_t r)
{
    unsigned total = 0;
    for (unsigned i = 0; i < OP_COUNT; i++)
        total += op_weight(t, i);
    unsigned x = (unsigned)(r % total);
    for (unsigned i = 0; i < OP_COUNT; i++) {
        if (x < op_weight(t, i))
            return i;
        x -= op_weight(t, i);
    }
    return OP_SLEEP;
}

// An opening call: valid arguments that make what the theme needs.
static void opening_call(uint64_t seed, unsigned op, struct call *c)
{
    static const uint8_t log_configs[] = {0,          2 | 1 << 3, 3 | 2 << 3, 4 | 3 << 3,
                                          5 | 4 << 3, 6 | 0 << 3, 4 | 7 << 3, 3 | 1 << 3};
    c->op = (uint8_t)op;
    c->mutate = 0;
    if (op == OP_LOG_CONFIGURE)
        c->variant = log_configs[c->v % 8];
    else if (op == OP_PMC_ALLOC && theme_of(seed) == THEME_LOG) { // TS, or SS when privileged
        c->variant = (seed & 1) && (c->v & 3) == 0 ? 6 : (uint8_t)(c->variant % 3);
        c->v &= (1ull << 24) - 1;  // count 0: a sample at every tick
    } else if (op == OP_PMC_ALLOC) // TC, or SC when privileged
        c->variant = (seed & 1) && (c->v & 3) == 0 ? 7 : (uint8_t)(3 + c->variant % 3);
    else if (op == OP_PMC_ATTACH) // this process
        c->variant = (uint8_t)(c->variant & ~3);
    else if (op == OP_PROF_CREATE) // this process, or the system when privileged
        c->variant = (seed & 1) && (c->v & 3) == 0 ? 6 : (uint8_t)(c->variant & ~7);
}

void gen_call(uint64_t seed, unsigned index, struct call *c)
{
    uint64_t r = mix64(seed ^ mix64(index + 1));
    uint64_t r2 = mix64(r);
    enum theme t = theme_of(seed);
    c->pick = (uint8_t)(r2 >> 8);
    c->pick2 = (uint8_t)(r2 >> 16);
    c->variant = (uint8_t)(r2 >> 24);
    c->mutate = (r2 >> 32) % MUTATE_ONE_IN == 0 ? (uint8_t)(1 + (r2 >> 40) % 8) : 0;
    c->how = (uint8_t)(r2 >> 48);
    c->v = mix64(r2);
    if (index < themes[t].nopen)
        opening_call(seed, themes[t].open[index], c);
    else if (t == THEME_MIXED && index < 3 && (r & 3) != 0)
        c->op = makers[(r >> 2) % sizeof makers];
    else
        c->op = (uint8_t)draw_op(t, r >> 8);
}

static const char *const names[OP_COUNT] = {
    [OP_PROF_CREATE] = "NtCreateProfile",
    [OP_PROF_CREATE_EX] = "NtCreateProfileEx",
    [OP_PROF_START] = "NtStartProfile",
    [OP_PROF_STOP] = "NtStopProfile",
    [OP_PROF_STATS] = "SysProfileStats",
    [OP_INTERVAL_QUERY] = "NtQueryIntervalProfile",
    [OP_INTERVAL_SET] = "NtSetIntervalProfile",
    [OP_PROF_REMAP] = "remap-buffer",
    [OP_PMC_ALLOC] = "NtPmcAllocate",
    [OP_PMC_ATTACH] = "NtPmcAttach",
    [OP_PMC_DETACH] = "NtPmcDetach",
    [OP_PMC_SET_COUNT] = "NtPmcSetCount",
    [OP_PMC_START] = "NtPmcStart",
    [OP_PMC_STOP] = "NtPmcStop",
    [OP_PMC_READ] = "NtPmcRead",
    [OP_PMC_WRITE] = "NtPmcWrite",
    [OP_PMC_QUERY] = "NtPmcQuery",
    [OP_PMC_GET_MSR] = "NtPmcGetMsr",
    [OP_PMC_ROWS] = "NtPmcGetCpuInfo/GetPmcInfo/GetModuleVersion/Admin",
    [OP_LOG_CONFIGURE] = "NtPmcConfigureLog",
    [OP_LOG_RELEASE] = "NtPmcConfigureLog(NULL)",
    [OP_LOG_FLUSH] = "NtPmcFlushLog",
    [OP_LOG_READ] = "NtPmcReadLog",
    [OP_LOG_WRITE] = "NtPmcWriteLog",
    [OP_LOG_STATS] = "NtPmcGetDriverStats",
    [OP_SPAWN] = "SysSpawn",
    [OP_RESUME] = "SysResume",
    [OP_KILL] = "SysKill",
    [OP_WAIT] = "SysWait",
    [OP_OPEN] = "SysOpenProcess",
    [OP_CLOSE] = "NtClose",
    [OP_PROCESS_ID] = "SysProcessId",
    [OP_BURN] = "burn",
    [OP_SLEEP] = "SysSleep",
};

const char *op_name(unsigned op)
{
    return op < OP_COUNT ? names[op] : "?";
}

// One line of a replay: the call, its choices and what the kernel said.
void print_call(unsigned index, const struct call *c, NTSTATUS s)
{
    printf("fuzz-state:   #%u %s pick %u/%u variant %u", index, op_name(c->op), c->pick, c->pick2,
           c->variant);
    if (c->mutate)
        printf(" mutate arg %u how %u", c->mutate, c->how);
    printf(" -> %s\n", s == NO_STATUS ? "-" : nt_status_name(s));
}
