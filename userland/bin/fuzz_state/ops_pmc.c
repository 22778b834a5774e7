// PMCs in the four modes: allocate, attach, detach, set count, start, stop,
// read, write, query, the rdpmc index.
#include "fuzz_state.h"

struct alloc_args {
    uint64_t ph, params; // HANDLE *, struct pmc_alloc *
    struct pmc_alloc a;
    NTSTATUS want;
    bool must_fail;
};

static HANDLE allocated;
static struct pmc_alloc params;

static bool counting_mode(uint32_t mode)
{
    return mode == PMC_MODE_SC || mode == PMC_MODE_TC;
}

static bool process_mode(uint32_t mode)
{
    return mode == PMC_MODE_TS || mode == PMC_MODE_TC;
}

// The n-th online CPU (n modulo their number).
static uint32_t online_cpu(const struct fuzzer *f, uint64_t n)
{
    unsigned count = 0;
    for (unsigned i = 0; i < f->ncpus; i++)
        count += (f->online >> i) & 1;
    n %= count;
    for (unsigned i = 0; i < f->ncpus; i++)
        if (((f->online >> i) & 1) && n-- == 0)
            return i;
    return 0;
}

static void alloc_valid(const struct fuzzer *f, const struct call *c, struct alloc_args *r)
{
    static const uint32_t modes[] = {PMC_MODE_TS, PMC_MODE_TS, PMC_MODE_TS, PMC_MODE_TC,
                                     PMC_MODE_TC, PMC_MODE_TC, PMC_MODE_SS, PMC_MODE_SC};
    uint64_t v = c->v;
    struct pmc_alloc *a = &r->a;
    *r = (struct alloc_args){
        .ph = (uint64_t)&allocated, .params = (uint64_t)&params, .want = NO_STATUS};
    a->mode = modes[c->variant % 8];
    bool counting = counting_mode(a->mode), proc = process_mode(a->mode);
    a->flags = (!counting && (v & 1) ? PMC_F_CALLCHAIN : 0) |
               (f->privileged && (v & 2) ? (counting ? PMC_F_LEVELS : PMC_F_KERNEL) : 0);
    if (proc)
        a->flags |= (uint32_t)(v & (PMC_F_DESCENDANTS | PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT));
    if (counting && (f->narrow & NARROW_TARGET_EXIT))
        a->flags &= ~(uint32_t)PMC_F_DESCENDANTS; // no target that may exit
    a->source = ProfileTime;
    if (counting && (f->narrow & NARROW_TICK_COUNT)) // not the events of ProfileTime's ticks
        a->source = PMC_EVENT_SW((v >> 10) % PMC_SW_PROFILE_INTERRUPTS);
    else if (counting && (v >> 8) % 4 != 0)
        a->source = PMC_EVENT_SW((v >> 10) % PMC_SW_COUNT);
    a->cpu = proc || (v >> 16) & 1 ? PMC_CPU_ANY : online_cpu(f, v >> 17);
    a->count = (v >> 24) % 3 == 0 ? 0 : f->time_min * (1 + (v >> 26) % 20);
    if (!proc && !f->privileged)
        r->want = STATUS_PRIVILEGE_NOT_HELD; // the whole system is seen
}

// The argument mutated: the statuses the rules fix follow check_request's
// order (mode, flags, scope flags, chains, source, CPU, privilege).
static void alloc_mutate(struct fuzzer *f, const struct call *c, struct alloc_args *r)
{
    static const uint32_t bad_modes[] = {0, 5, 0x80000001, 0xFFFFFFFF};
    static const uint32_t bad_cpus[] = {63, PMC_CPU_ANY - 1, 1000};
    struct pmc_alloc *a = &r->a;
    unsigned arg = (c->mutate - 1) % 7 + 1;
    bool sampling = !counting_mode(a->mode);
    r->must_fail = true;
    switch (arg) {
    case 1: r->ph = bad_pointer(f, c->how), r->want = STATUS_ACCESS_VIOLATION; break;
    case 2: r->params = bad_in_pointer(f, c->how), r->want = STATUS_ACCESS_VIOLATION; break;
    case 3: a->mode = bad_modes[c->how % 4], r->want = STATUS_PMC_BAD_MODE; break;
    case 4:
        if (c->how % 3 == 0)
            a->flags |= 0x40u << (c->how % 8), r->want = STATUS_PMC_BAD_FLAGS;
        else if (c->how % 3 == 1)
            a->mode = PMC_MODE_SS, a->flags = PMC_F_DESCENDANTS, a->cpu = PMC_CPU_ANY,
            r->want = STATUS_PMC_FLAG_NEEDS_PROCESS;
        else
            a->mode = PMC_MODE_TC, a->flags = PMC_F_CALLCHAIN, a->cpu = PMC_CPU_ANY,
            r->want = STATUS_PMC_CALLCHAIN_COUNTING;
        break;
    case 5:
        if (c->how % 3 == 2 && sampling)
            a->source = PMC_EVENT_SW(PMC_SW_SYSCALLS), r->want = STATUS_PMC_SOURCE_UNSUPPORTED;
        else
            a->source = c->how & 1 ? ProfileSourceCount : 0xFFFFFFFF,
            r->want = STATUS_PMC_UNKNOWN_SOURCE;
        break;
    case 6: a->cpu = bad_cpus[c->how % 3], r->want = STATUS_PMC_BAD_CPU; break;
    default: // 7: the count, which only sampling PMCs check (after the privilege)
        a->count = c->how % 3 == 0 ? 1 : c->how % 3 == 1 ? f->time_max + 1 : ~0ull;
        r->must_fail = sampling;
        if (sampling && r->want == NO_STATUS)
            r->want = a->count == 1 ? STATUS_PMC_COUNT_TOO_SMALL : STATUS_PMC_COUNT_TOO_LARGE;
        break;
    }
}

void op_pmc_alloc(struct fuzzer *f, const struct call *c)
{
    unsigned k = c->pick % NPMC;
    for (unsigned i = 0; i < NPMC && f->pmc[k].live; i++)
        k = (k + 1) % NPMC;
    if (f->pmc[k].live)
        pmc_close(f, k);
    struct alloc_args r;
    alloc_valid(f, c, &r);
    if (c->mutate)
        alloc_mutate(f, c, &r);
    params = r.a;
    allocated = NULL;
    NTSTATUS s = NtPmcAllocate((HANDLE *)r.ph, (const struct pmc_alloc *)r.params);
    check(f, c->op, s, r.want, r.must_fail);
    if (!NT_SUCCESS(s) || r.ph != (uint64_t)&allocated || !new_handle_ok(f, allocated))
        return;
    f->pmc[k] = (struct pmc){.h = allocated,
                             .live = true,
                             .counting = counting_mode(r.a.mode),
                             .mode = r.a.mode,
                             .flags = r.a.flags,
                             .source = r.a.source};
}

// A PMC's handle for a call: a live one, or (mutated, or none live) a bad one.
static HANDLE pmc_handle(struct fuzzer *f, const struct call *c, int *k)
{
    *k = c->mutate == 1 ? -1 : live_pmc(f, c->pick);
    return *k >= 0 ? f->pmc[*k].h : bad_handle(f, c, HT_PMC);
}

// The process of an attach or detach: this one (two ways) or a child.
static HANDLE target_handle(struct fuzzer *f, const struct call *c, bool *self)
{
    *self = true;
    if (c->mutate == 2) {
        HANDLE h = bad_handle(f, c, HT_PROCESS);
        *self = h == f->self_h || h == NtCurrentProcess();
        return h;
    }
    int k = live_proc(f, c->pick2);
    if (c->variant % 4 >= 2 && k >= 0) {
        *self = false;
        return f->proc[k].h ? f->proc[k].h : f->proc[k].dup;
    }
    return c->variant % 4 == 1 && f->self_h ? f->self_h : NtCurrentProcess();
}

static void attach_detach(struct fuzzer *f, const struct call *c, bool attach)
{
    int k;
    bool self;
    HANDLE h = pmc_handle(f, c, &k), target = target_handle(f, c, &self);
    if (k >= 0 && f->pmc[k].counting && !self && (f->narrow & NARROW_TARGET_EXIT) &&
        handle_class(f, target, HT_PROCESS) == STATUS_SUCCESS) {
        target = NtCurrentProcess(); // a counting PMC counts this process only
        self = true;
    }
    NTSTATUS want = handle_class(f, h, HT_PMC);
    if (want == STATUS_SUCCESS)
        want = handle_class(f, target, HT_PROCESS);
    if (want == STATUS_SUCCESS && k >= 0) {
        const struct pmc *m = &f->pmc[k];
        want = NO_STATUS;
        if (!process_mode(m->mode))
            want = STATUS_PMC_NOT_PROCESS_SCOPE;
        else if (self && m->self == SELF_YES)
            want = attach ? STATUS_PMC_ALREADY_ATTACHED : STATUS_SUCCESS;
        else if (self && m->self == SELF_NO && !attach)
            want = STATUS_PMC_NOT_ATTACHED;
    }
    NTSTATUS s = attach ? NtPmcAttach(h, target) : NtPmcDetach(h, target);
    check(f, c->op, s, want, false);
    if (k >= 0 && self && NT_SUCCESS(s))
        f->pmc[k].self = attach ? SELF_YES : SELF_NO;
}

void op_pmc_attach(struct fuzzer *f, const struct call *c)
{
    attach_detach(f, c, true);
}

void op_pmc_detach(struct fuzzer *f, const struct call *c)
{
    attach_detach(f, c, false);
}

void op_pmc_set_count(struct fuzzer *f, const struct call *c)
{
    uint64_t values[] = {0,           f->time_min - 1, f->time_min, 3 * f->time_min,
                         f->time_max, f->time_max + 1, ~0ull,       c->v};
    uint64_t count = values[c->variant % 8];
    int k;
    HANDLE h = pmc_handle(f, c, &k);
    NTSTATUS want = handle_class(f, h, HT_PMC);
    if (k >= 0) {
        const struct pmc *m = &f->pmc[k];
        want = m->counting           ? STATUS_PMC_NOT_SAMPLING
               : m->running          ? STATUS_PMC_RUNNING
               : count < f->time_min ? STATUS_PMC_COUNT_TOO_SMALL
               : count > f->time_max ? STATUS_PMC_COUNT_TOO_LARGE
                                     : STATUS_SUCCESS;
    }
    check(f, c->op, NtPmcSetCount(h, count), want, false);
}

void op_pmc_start(struct fuzzer *f, const struct call *c)
{
    int k;
    HANDLE h = pmc_handle(f, c, &k);
    NTSTATUS want = handle_class(f, h, HT_PMC);
    bool must_fail = false;
    if (k >= 0) {
        want = f->pmc[k].running ? STATUS_PMC_RUNNING : NO_STATUS;
        must_fail = !f->pmc[k].counting && !f->log.owner; // a sampling PMC needs our log
    }
    NTSTATUS s = NtPmcStart(h);
    check(f, c->op, s, want, must_fail);
    if (k < 0 || !NT_SUCCESS(s))
        return;
    f->pmc[k].running = true;
    if (f->pmc[k].mode == PMC_MODE_TC && f->pmc[k].self == SELF_NO)
        f->pmc[k].self = SELF_MAYBE; // started with no target, it counts its owner
}

void op_pmc_stop(struct fuzzer *f, const struct call *c)
{
    int k;
    HANDLE h = pmc_handle(f, c, &k);
    for (unsigned i = 1; k >= 0 && (c->variant & 3) && !f->pmc[k].running && i < NPMC; i++)
        if (f->pmc[(k + i) % NPMC].live && f->pmc[(k + i) % NPMC].running) {
            k = (k + (int)i) % NPMC; // a running one more often than not
            h = f->pmc[k].h;
        }
    NTSTATUS want = handle_class(f, h, HT_PMC);
    if (k >= 0)
        want = f->pmc[k].running ? STATUS_SUCCESS : STATUS_PMC_NOT_RUNNING;
    NTSTATUS s = NtPmcStop(h);
    check(f, c->op, s, want, false);
    if (k >= 0 && NT_SUCCESS(s))
        f->pmc[k].running = false;
}

// A counting PMC's value never goes down (but by NtPmcWrite), nor its time enabled.
void pmc_check_value(struct fuzzer *f, unsigned k, uint64_t value, uint64_t enabled)
{
    struct pmc *m = &f->pmc[k];
    if (m->known && (int64_t)(value - m->last) < 0) // (a written value may wrap)
        fuzz_fail(f, FAIL_COUNT_DOWN, "counting PMC %u (mode %u, source %#x): %lu after %lu", k,
                  m->mode, m->source, value, m->last);
    if (enabled < m->enabled)
        fuzz_fail(f, FAIL_COUNT_DOWN, "counting PMC %u: time enabled %lu after %lu", k, enabled,
                  m->enabled);
    m->known = true;
    m->last = value;
    m->enabled = enabled > m->enabled ? enabled : m->enabled;
}

static void read_query(struct fuzzer *f, const struct call *c, bool query)
{
    static struct pmc_value pv;
    int k;
    HANDLE h = pmc_handle(f, c, &k);
    uint64_t out = c->mutate == 2 ? bad_pointer(f, c->how) : (uint64_t)&pv;
    NTSTATUS want = handle_class(f, h, HT_PMC);
    if (k >= 0)
        want = f->pmc[k].counting ? STATUS_SUCCESS : STATUS_PMC_NOT_COUNTING;
    if (c->mutate == 2)
        want = STATUS_ACCESS_VIOLATION; // the result is probed first
    pv = (struct pmc_value){0};
    NTSTATUS s = query ? NtPmcQuery(h, (struct pmc_value *)out) : NtPmcRead(h, (uint64_t *)out);
    check(f, c->op, s, want, false);
    if (k >= 0 && NT_SUCCESS(s) && out == (uint64_t)&pv)
        pmc_check_value(f, (unsigned)k, pv.value, query ? pv.time_enabled : f->pmc[k].enabled);
}

void op_pmc_read(struct fuzzer *f, const struct call *c)
{
    read_query(f, c, false);
}

void op_pmc_query(struct fuzzer *f, const struct call *c)
{
    read_query(f, c, true);
}

void op_pmc_write(struct fuzzer *f, const struct call *c)
{
    uint64_t value = c->variant % 4 == 0 ? 0 : c->v >> (c->variant % 64);
    int k;
    HANDLE h = pmc_handle(f, c, &k);
    NTSTATUS want = handle_class(f, h, HT_PMC);
    if (k >= 0)
        want = !f->pmc[k].counting ? STATUS_PMC_NOT_COUNTING
               : f->pmc[k].running ? STATUS_PMC_RUNNING
                                   : STATUS_SUCCESS;
    NTSTATUS s = NtPmcWrite(h, value);
    check(f, c->op, s, want, false);
    if (k >= 0 && NT_SUCCESS(s)) {
        f->pmc[k].known = true;
        f->pmc[k].last = value;
    }
}

// Software events have no counter register: no rdpmc index.
void op_pmc_get_msr(struct fuzzer *f, const struct call *c)
{
    static uint32_t index;
    int k;
    HANDLE h = pmc_handle(f, c, &k);
    uint64_t out = c->mutate == 2 ? bad_pointer(f, c->how) : (uint64_t)&index;
    NTSTATUS want = handle_class(f, h, HT_PMC);
    if (k >= 0) {
        const struct pmc *m = &f->pmc[k];
        bool software = m->source == ProfileTime || PMC_EVENT_IS_SW(m->source);
        want = !m->counting ? STATUS_PMC_NOT_COUNTING : software ? STATUS_NOT_SUPPORTED : NO_STATUS;
    }
    check(f, c->op, NtPmcGetMsr(h, (uint32_t *)out), want, false);
}

// NtPmcGetPmcInfo of a CPU; mutated: a CPU past the last, a bad buffer, a
// length too short, a bad *needed.
static void rows_info(struct fuzzer *f, const struct call *c, uint32_t cpu)
{
    static struct pmc_rowinfo rows[PMC_ROWS_MAX];
    static uint32_t need;
    uint64_t buf = (uint64_t)rows, len = sizeof rows, needed = (uint64_t)&need;
    NTSTATUS want = STATUS_SUCCESS;
    switch (c->mutate) {
    case 1: cpu += f->ncpus, want = STATUS_PMC_BAD_CPU; break;
    case 2: buf = bad_pointer(f, c->how), want = STATUS_ACCESS_VIOLATION; break;
    case 3: len = c->how % sizeof rows[0], want = STATUS_BUFFER_TOO_SMALL; break;
    case 4: needed = bad_pointer(f, c->how), want = STATUS_ACCESS_VIOLATION; break;
    default: break;
    }
    NTSTATUS s = NtPmcGetPmcInfo(cpu, (struct pmc_rowinfo *)buf, (uint32_t)len, (uint32_t *)needed);
    check(f, c->op, s, want, want != STATUS_SUCCESS);
}

// NtPmcAdmin: a disable undone at once (other fuzzing processes may meet the
// row disabled meanwhile: STATUS_PMC_ROW_DISABLED). The privilege is checked
// first; then the CPU, the state and the row, each mutation its status.
static void rows_admin(struct fuzzer *f, const struct call *c, uint32_t cpu, uint32_t row,
                       uint32_t npmc)
{
    uint32_t state = PMC_STATE_DISABLED;
    NTSTATUS want = NO_STATUS; // a row in use is busy
    switch (c->mutate) {
    case 1: cpu = f->ncpus + c->how, want = STATUS_PMC_BAD_CPU; break;
    case 2: state = 2 + c->how, want = STATUS_INVALID_PARAMETER; break;
    case 3: row = npmc + c->how, want = STATUS_PMC_BAD_ROW; break;
    default: break;
    }
    if (!f->privileged)
        want = STATUS_PRIVILEGE_NOT_HELD;
    NTSTATUS s = NtPmcAdmin(cpu, row, state);
    check(f, c->op, s, want, want != NO_STATUS);
    if (NT_SUCCESS(s))
        check(f, c->op, NtPmcAdmin(cpu, row, PMC_STATE_FREE), STATUS_SUCCESS, false);
}

// hwpmc's information and administration calls (variant): the classes, a
// CPU's rows, the version, a disable and enable.
void op_pmc_rows(struct fuzzer *f, const struct call *c)
{
    static struct pmc_cpuinfo ci;
    static uint32_t version;
    bool bad = c->mutate == 1;
    NTSTATUS s = NtPmcGetCpuInfo(&ci);
    check(f, c->op, s, STATUS_SUCCESS, false);
    if (!NT_SUCCESS(s) || !ci.ncpu || !ci.npmc)
        return;
    uint32_t cpu = c->pick % ci.ncpu, row = c->pick2 % ci.npmc;
    switch (c->variant % 4) {
    case 0:
        s = NtPmcGetCpuInfo(bad ? (struct pmc_cpuinfo *)bad_pointer(f, c->how) : &ci);
        check(f, c->op, s, bad ? STATUS_ACCESS_VIOLATION : STATUS_SUCCESS, bad);
        break;
    case 1: rows_info(f, c, cpu); break;
    case 2:
        s = NtPmcGetModuleVersion(bad ? (uint32_t *)bad_pointer(f, c->how) : &version);
        check(f, c->op, s, bad ? STATUS_ACCESS_VIOLATION : STATUS_SUCCESS, bad);
        break;
    default: rows_admin(f, c, cpu, row, ci.npmc); break;
    }
}

void pmc_close(struct fuzzer *f, unsigned k)
{
    HANDLE h = f->pmc[k].h;
    f->pmc[k] = (struct pmc){0};
    close_and_probe(f, h, OP_PMC_STOP, NtPmcStop);
}
