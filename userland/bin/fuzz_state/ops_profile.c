// Profile objects: create (both calls), start, stop, statistics, the
// interval, and the buffer's pages remapped under a profile.
#include "fuzz_state.h"
#include <string.h>

#define KERNEL_TEXT 0xFFFFFFFF80100000ull

struct create_args {
    uint64_t ph; // HANDLE *
    HANDLE process;
    uint64_t base, size;
    ULONG shift;
    uint64_t buffer;
    ULONG bytes;
    uint32_t source;
    KAFFINITY affinity;
    USHORT groups;
    uint64_t group_ptr; // GROUP_AFFINITY *
    NTSTATUS want;
    bool must_fail;
};

static HANDLE created;
static GROUP_AFFINITY group;

static uint64_t buckets(uint64_t size, unsigned shift)
{
    return shift >= 64 ? (size != 0) : (size >> shift) + ((size & ((1ull << shift) - 1)) != 0);
}

// The process a profile is of: this one (two ways), a child, or none (system).
static HANDLE create_target(struct fuzzer *f, const struct call *c)
{
    int k = live_proc(f, c->pick2);
    switch (c->variant % 8) {
    case 3: return f->self_h ? f->self_h : NtCurrentProcess();
    case 4:
    case 5: return k >= 0 ? (f->proc[k].h ? f->proc[k].h : f->proc[k].dup) : NtCurrentProcess();
    case 6: return NULL;
    case 7: return k >= 0 && f->proc[k].dup ? f->proc[k].dup : NtCurrentProcess();
    default: return NtCurrentProcess();
    }
}

static KAFFINITY create_affinity(const struct fuzzer *f, uint64_t v)
{
    switch ((v >> 16) % 4) {
    case 0: return ~0ull;
    case 1: return f->online;
    case 2: return 1ull << ((v >> 20) % f->ncpus);
    default: return (v >> 24) & f->online ? (v >> 24) & f->online : f->online;
    }
}

// Valid arguments over slot k's buffer.
static void create_valid(struct fuzzer *f, const struct call *c, unsigned k, struct create_args *a)
{
    static const uint64_t sizes[] = {0x1000, 0x4000, 0x10000, 0x20000, 0x80000};
    *a = (struct create_args){.ph = (uint64_t)&created, .want = NO_STATUS};
    a->process = create_target(f, c);
    if (!a->process && f->privileged && (c->v & 1)) {
        a->base = KERNEL_TEXT;
        a->size = 0x200000;
    } else {
        a->base = USER_TEXT;
        a->size = sizes[(c->v >> 1) % 5];
    }
    unsigned shift = 2;
    while (buckets(a->size, shift) * 4 > SLOT_BYTES)
        shift++;
    shift += (c->v >> 4) % 3;
    a->shift = shift;
    a->buffer = (uint64_t)slot_base(f, k);
    a->bytes = (c->v >> 6) & 1 ? SLOT_BYTES : (ULONG)(buckets(a->size, shift) * 4);
    if (!a->bytes)
        a->bytes = 4;
    a->source = ProfileTime;
    a->affinity = create_affinity(f, c->v);
    a->groups = (c->v >> 30) & 1;
    group = (GROUP_AFFINITY){.Mask = a->affinity == ~0ull ? f->online : a->affinity};
    a->group_ptr = (uint64_t)&group;
}

// Arguments 3-6: the range and the buffer.
static void mutate_range_buffer(struct fuzzer *f, const struct call *c, unsigned arg,
                                struct create_args *a)
{
    static const ULONG bad_shifts[] = {0, 1, 32, 0xFFFFFFFF};
    switch (arg) {
    case 3:
        a->base = c->how % 3 == 0   ? ~0xFFFull
                  : c->how % 3 == 1 ? 0xFFFFFFFF80000000ull
                                    : USER_ADDRESS_LIMIT - 0x100;
        a->size = c->how % 3 == 0 ? 0x2000 : a->size;
        a->must_fail = c->how % 3 == 0 || !f->privileged;
        break;
    case 4:
        a->size = c->how % 3 == 0 ? 0 : c->how % 3 == 1 ? ~0ull : a->size * 2 + 1;
        a->must_fail = c->how % 3 == 1;
        break;
    case 5:
        a->shift = bad_shifts[c->how % 4];
        a->want = STATUS_INVALID_PARAMETER;
        break;
    default: // 6
        a->buffer = c->how % 6 == 1   ? a->buffer + 1
                    : c->how % 6 == 2 ? a->buffer + 2
                                      : bad_pointer(f, c->how % 6 == 5 ? 4 : c->how);
        a->must_fail = true;
        break;
    }
}

// One argument of NtCreateProfile(Ex) made wrong (c->mutate, 1-based).
static void create_mutate(struct fuzzer *f, const struct call *c, bool ex, struct create_args *a)
{
    unsigned arg = (c->mutate - 1) % (ex ? 10 : 9) + 1;
    switch (arg) {
    case 1:
        a->ph = bad_pointer(f, c->how);
        a->must_fail = true;
        break;
    case 2:
        a->process = bad_handle(f, c, HT_PROCESS);
        if (!a->process) // system scope: a mutation only without the privilege
            a->must_fail = !f->privileged;
        else if (handle_class(f, a->process, HT_PROCESS) != STATUS_SUCCESS)
            a->want = handle_class(f, a->process, HT_PROCESS); // the earlier checks pass
        break;
    case 7: {
        uint64_t need = buckets(a->size, a->shift) * 4;
        a->bytes = c->how % 3 == 0                ? 0
                   : c->how % 3 == 1 && need >= 4 ? (ULONG)need - 4
                                                  : SLOT_BYTES + PAGE_BYTES;
        a->want = a->bytes == 0 ? STATUS_INVALID_PARAMETER_7 : NO_STATUS;
        a->must_fail = true;
        break;
    }
    case 8:
        a->source = c->how % 3 == 0 ? ProfileSourceCount : c->how % 3 == 1 ? ~0u : ProfileMaximum;
        a->must_fail = true;
        break;
    case 9:
        a->affinity = c->how % 3 == 0   ? 0
                      : c->how % 3 == 1 ? 1ull << 63
                                        : (f->ncpus < 64 ? 1ull << f->ncpus : 0);
        a->groups = 1;
        group.Mask = a->affinity;
        a->must_fail = f->ncpus < 64;
        break;
    case 10:
        a->groups = c->how % 3 == 0 ? 2 : 1;
        group.Reserved[1] = c->how % 3 == 1;
        a->group_ptr = c->how % 3 == 2 ? bad_in_pointer(f, c->how >> 2) : a->group_ptr;
        a->must_fail = true;
        break;
    default: mutate_range_buffer(f, c, arg, a); break;
    }
}

// What the rules fix beyond the mutation: a buffer the slot's pages do not
// back (checked before the process, the source and the affinity), the
// privilege for system scope and kernel ranges, a process we may not name.
static void create_expect(const struct fuzzer *f, const struct call *c, bool ex, unsigned k,
                          struct create_args *a)
{
    unsigned arg = c->mutate ? (c->mutate - 1) % (ex ? 10 : 9) + 1 : 0;
    if (f->map[k] != MAP_RW && (arg == 0 || arg == 2 || arg >= 8)) {
        a->want = STATUS_ACCESS_VIOLATION;
        a->must_fail = true;
        return;
    }
    if (a->want != NO_STATUS || a->must_fail || (arg != 0 && arg < 8))
        return; // (a mutation checked before the privilege decides)
    NTSTATUS cls = a->process ? handle_class(f, a->process, HT_PROCESS) : STATUS_SUCCESS;
    if (cls != STATUS_SUCCESS)
        a->want = cls;
    else if ((!a->process || a->base + a->size > USER_ADDRESS_LIMIT) && !f->privileged)
        a->want = STATUS_PRIVILEGE_NOT_HELD;
}

static void create_common(struct fuzzer *f, const struct call *c, bool ex)
{
    unsigned k = c->pick % NPROF;
    for (unsigned i = 0; i < NPROF && f->prof[k].live; i++)
        k = (k + 1) % NPROF;
    if (f->prof[k].live)
        prof_close(f, k);
    struct create_args a;
    create_valid(f, c, k, &a);
    if (c->mutate)
        create_mutate(f, c, ex, &a);
    create_expect(f, c, ex, k, &a);
    if (f->map[k] == MAP_RW)
        memset(slot_base(f, k), 0, SLOT_BYTES);
    created = NULL;
    NTSTATUS s = ex ? NtCreateProfileEx((HANDLE *)a.ph, a.process, (void *)a.base, a.size, a.shift,
                                        (ULONG *)a.buffer, a.bytes, a.source, a.groups,
                                        (GROUP_AFFINITY *)a.group_ptr)
                    : NtCreateProfile((HANDLE *)a.ph, a.process, (void *)a.base, a.size, a.shift,
                                      (ULONG *)a.buffer, a.bytes, a.source, a.affinity);
    check(f, c->op, s, a.want, a.must_fail);
    if (!NT_SUCCESS(s) || a.ph != (uint64_t)&created || !new_handle_ok(f, created))
        return;
    if (f->map[k] != MAP_RW)
        fuzz_fail(f, FAIL_OTHER, "a profile was created over a buffer not writable (map %u)",
                  f->map[k]);
    f->prof[k] =
        (struct prof){.h = created, .live = true, .exact = a.buffer == (uint64_t)slot_base(f, k)};
}

void op_prof_create(struct fuzzer *f, const struct call *c)
{
    create_common(f, c, false);
}

void op_prof_create_ex(struct fuzzer *f, const struct call *c)
{
    create_common(f, c, true);
}

// A profile's handle for a call: a live one, or (mutated, or none live) a bad one.
static HANDLE prof_handle(struct fuzzer *f, const struct call *c, int *k)
{
    *k = c->mutate == 1 ? -1 : live_prof(f, c->pick);
    return *k >= 0 ? f->prof[*k].h : bad_handle(f, c, HT_PROFILE);
}

// For a stop: a started profile more often than not.
static HANDLE started_prof_handle(struct fuzzer *f, const struct call *c, int *k)
{
    HANDLE h = prof_handle(f, c, k);
    if (*k < 0 || !(c->variant & 3) || f->prof[*k].started)
        return h;
    for (unsigned i = 1; i < NPROF; i++) {
        unsigned j = ((unsigned)*k + i) % NPROF;
        if (f->prof[j].live && f->prof[j].started) {
            *k = (int)j;
            return f->prof[j].h;
        }
    }
    return h;
}

void op_prof_start(struct fuzzer *f, const struct call *c)
{
    int k;
    HANDLE h = prof_handle(f, c, &k);
    NTSTATUS want = handle_class(f, h, HT_PROFILE);
    if (k >= 0 && f->prof[k].started)
        want = STATUS_PROFILING_NOT_STOPPED;
    else if (k >= 0 && f->map[k] != MAP_RW)
        want = STATUS_ACCESS_VIOLATION; // the pages cannot be locked
    else if (k >= 0)
        want = NO_STATUS;
    NTSTATUS s = NtStartProfile(h);
    check(f, c->op, s, want, false);
    if (k >= 0 && want == NO_STATUS && s == STATUS_PROFILING_NOT_STOPPED)
        fuzz_fail(f, FAIL_STATUS, "NtStartProfile of a stopped profile gave %s", nt_status_name(s));
    if (k >= 0 && NT_SUCCESS(s))
        f->prof[k].started = true;
}

void op_prof_stop(struct fuzzer *f, const struct call *c)
{
    int k;
    HANDLE h = started_prof_handle(f, c, &k);
    NTSTATUS want = handle_class(f, h, HT_PROFILE);
    if (k >= 0)
        want = f->prof[k].started ? STATUS_SUCCESS : STATUS_PROFILING_NOT_STARTED;
    NTSTATUS s = NtStopProfile(h);
    check(f, c->op, s, want, false);
    if (k >= 0 && NT_SUCCESS(s)) {
        f->prof[k].started = false;
        prof_check_sum(f, k);
    }
}

// The sum of slot k's buckets.
static uint64_t slot_sum(const struct fuzzer *f, unsigned k)
{
    const volatile ULONG *b = (const volatile ULONG *)slot_base(f, k);
    uint64_t sum = 0;
    for (unsigned i = 0; i < SLOT_BYTES / 4; i++)
        sum += b[i];
    return sum;
}

static void stats_invariant(struct fuzzer *f, unsigned k, const struct sys_profile_stats *st)
{
    if (st->in_range + st->out_of_range != st->delivered)
        fuzz_fail(f, FAIL_PROFILE, "profile %u: in range %lu + out of range %lu != delivered %lu",
                  k, st->in_range, st->out_of_range, st->delivered);
    if (f->prof[k].started || !f->prof[k].exact || f->map[k] != MAP_RW)
        return;
    uint64_t sum = slot_sum(f, k);
    if (sum + st->out_of_range != st->delivered)
        fuzz_fail(f, FAIL_PROFILE,
                  "profile %u (stopped): buckets %lu + out of range %lu != delivered %lu", k, sum,
                  st->out_of_range, st->delivered);
}

void prof_check_sum(struct fuzzer *f, unsigned k)
{
    struct sys_profile_stats st;
    NTSTATUS s = SysProfileStats(f->prof[k].h, &st);
    check(f, OP_PROF_STATS, s, STATUS_SUCCESS, false);
    if (NT_SUCCESS(s))
        stats_invariant(f, k, &st);
    if (NT_SUCCESS(s) && f->tearing) // the teardown's: counted once
        f->profile_samples += st.delivered;
}

void op_prof_stats(struct fuzzer *f, const struct call *c)
{
    static struct sys_profile_stats st;
    int k;
    HANDLE h = prof_handle(f, c, &k);
    uint64_t out = (uint64_t)&st;
    NTSTATUS want = k >= 0 ? STATUS_SUCCESS : handle_class(f, h, HT_PROFILE);
    if (c->mutate == 2) {
        out = bad_pointer(f, c->how);
        want = STATUS_ACCESS_VIOLATION; // the result is probed first
    }
    NTSTATUS s = SysProfileStats(h, (struct sys_profile_stats *)out);
    check(f, c->op, s, want, false);
    if (k >= 0 && NT_SUCCESS(s) && out == (uint64_t)&st)
        stats_invariant(f, k, &st);
}

// The source of an interval call: ProfileTime mostly, else any number.
static uint32_t interval_source(const struct call *c)
{
    switch (c->variant % 8) {
    case 0: return (uint32_t)(c->v % ProfileSourceCount);
    case 1: return ProfileSourceCount + (uint32_t)(c->v % 100);
    case 2: return ~0u;
    default: return ProfileTime;
    }
}

void op_interval_query(struct fuzzer *f, const struct call *c)
{
    static ULONG v;
    uint32_t source = interval_source(c);
    uint64_t out = c->mutate ? bad_pointer(f, c->how) : (uint64_t)&v;
    v = 0xDEADBEEF;
    NTSTATUS s = NtQueryIntervalProfile((KPROFILE_SOURCE)source, (ULONG *)out);
    check(f, c->op, s, c->mutate ? STATUS_ACCESS_VIOLATION : STATUS_SUCCESS, false);
    if (!NT_SUCCESS(s) || c->mutate)
        return;
    if (source == ProfileTime && (v < f->time_min || v > f->time_max))
        fuzz_fail(f, FAIL_OTHER, "ProfileTime interval %u outside %lu..%lu", v, f->time_min,
                  f->time_max);
    if (source >= ProfileSourceCount && v != 0)
        fuzz_fail(f, FAIL_OTHER, "unknown source %#x has interval %u", source, v);
}

void op_interval_set(struct fuzzer *f, const struct call *c)
{
    // Mostly fine intervals (samples in short sequences), the extremes clamped.
    uint64_t values[] = {f->time_min, f->time_min, 2 * f->time_min, 5 * f->time_min,
                         1,           10000,       78125,           0xFFFFFFFF};
    uint32_t source = interval_source(c);
    if ((f->narrow & NARROW_HAL_LOCK) && source < ProfileSourceCount)
        source = ProfileTime; // another source's interval takes the HAL's lock
    ULONG interval = (ULONG)values[(c->v >> 40) % 8];
    NTSTATUS want = NO_STATUS;
    if (!f->privileged)
        want = STATUS_PRIVILEGE_NOT_HELD;
    else if (source == ProfileTime)
        want = STATUS_SUCCESS;
    else if (source >= ProfileSourceCount)
        want = STATUS_INVALID_PARAMETER;
    NTSTATUS s = NtSetIntervalProfile(interval, (KPROFILE_SOURCE)source);
    check(f, c->op, s, want, false);
}

// Slot k's pages mapped again as map says (they were mapped some way before).
static void slot_map(struct fuzzer *f, unsigned k, enum slot_map map)
{
    static const uint32_t prot[] = {PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE | PROT_DEMAND,
                                    PROT_READ, 0};
    void *base = slot_base(f, k);
    if (f->map[k] != MAP_NONE)
        check(f, OP_PROF_REMAP, SysUnmap(base, SLOT_BYTES), STATUS_SUCCESS, false);
    if (map != MAP_NONE) {
        void *at = base;
        check(f, OP_PROF_REMAP, SysMap(&at, SLOT_BYTES, prot[map]), STATUS_SUCCESS, false);
        if (at != base)
            fuzz_fail(f, FAIL_OTHER, "SysMap at %p mapped %p", base, at);
    }
    f->map[k] = (uint8_t)map;
    if (f->prof[k].live)
        f->prof[k].exact = false; // the buckets it counted are gone
}

void op_prof_remap(struct fuzzer *f, const struct call *c)
{
    slot_map(f, c->pick % NPROF, (enum slot_map)(c->variant % 4));
}

void slot_restore(struct fuzzer *f, unsigned k)
{
    if (f->map[k] != MAP_RW)
        slot_map(f, k, MAP_RW);
}

void prof_close(struct fuzzer *f, unsigned k)
{
    HANDLE h = f->prof[k].h;
    f->prof[k] = (struct prof){0};
    close_and_probe(f, h, OP_PROF_START, NtStartProfile);
}
