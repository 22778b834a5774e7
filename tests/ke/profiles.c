// The profile objects of a sequence (KX_SLOTS of them), the operations on
// them (KeInitializeProfile, KeStartProfile, KeStopProfile, the last
// reference's destroy, KeQueryProfileStats), and the reference they are
// checked against.
//
// The reference: a profile's cycle is open from its start's call to its
// stop's return, and full from the start's return to the stop's call. A
// sample that ended while the cycle was open may have met the profile (or is
// still in flight when the stop returns); one that began after the cycle was
// full and ended before it stopped being so surely did. A sample meets a
// profile when its CPU is in the affinity, its source is the profile's, and
// for a process scope its CPU ran that process. Operations on one profile
// take turns (kx.h), so the reference knows whether it is started.
#include <stdio.h>
#include <string.h>

#include "kx.h"

#include "core/process.h"
#include "pmc/ke/profile.h"

static const struct range {
    uint64_t base, size;
    uint32_t shift;
} ranges[KX_RANGES] = {
    {0x400000, 0x1000, 4},              // 256 buckets
    {0x400800, 0x1000, 5},              // overlapping the first: 128 buckets
    {0x600000, 0x400, 2},               // another 2 MiB granule: 256 buckets
    {0, 0x100000000ull, 26},            // wide (2,048 granules): 64 buckets
    {0xFFFFFFFF80100000ull, 0x2000, 5}, // kernel code: 256 buckets
};

const char *const kx_range_names[KX_RANGES] = {
    "[0x400000, +0x1000) in 16-byte buckets", "[0x400800, +0x1000) in 32-byte buckets",
    "[0x600000, +0x400) in 4-byte buckets", "[0, +4 GiB), wide, in 64 MiB buckets",
    "kernel [0xffffffff80100000, +0x2000) in 32-byte buckets"};

const KPROFILE_SOURCE kx_sources[KX_SOURCES] = {ProfileTime, ProfileTotalIssues,
                                                ProfileUnhaltedCoreCycles};

// User code in one, two or three ranges (the last at the first's edge), in
// another granule, in the wide range only; kernel code in a range and not.
const uint64_t kx_addrs[KX_ADDRS] = {
    0x400100, 0x400900, 0x401400, 0x600200, 0x500000, 0xFFFFFFFF80100400ull, 0xFFFFFFFF80180000ull,
    0x400FFC};

struct kx_prof {
    struct kprofile *p; // NULL: no object
    const struct process *proc;
    // Its parameters, read here without touching the object (which a close frees).
    KPROFILE_SOURCE source;
    uint64_t affinity, base, size;
    uint32_t buffer_size;
    bool busy;    // an operation on it is under way: the others wait their turn
    bool closing; // its last reference is going: the object may be freed
    bool open, full;
    uint64_t full_from;
    uint64_t sure, may, sure_in, may_in; // samples that met it, and those in its range
    bool frozen;                         // stopped and checked: nothing may move
    uint64_t frozen_delivered, frozen_in, frozen_sum;
};

static struct kx_prof prof[KX_SLOTS];
static unsigned ncpus_here;

void kx_profiles_reset(unsigned ncpus)
{
    memset(prof, 0, sizeof prof);
    ncpus_here = ncpus;
}

int kx_profile_state(unsigned slot)
{
    return prof[slot].p ? 1 + prof[slot].open : 0;
}

int kx_profile_started_on(const struct process *p)
{
    for (unsigned i = 0; i < KX_SLOTS; i++)
        if (prof[i].p && prof[i].open && prof[i].proc == p)
            return (int)i;
    return -1;
}

KPROFILE_SOURCE kx_profile_source(unsigned slot)
{
    return prof[slot].source;
}

void kx_profiles_each(void (*fn)(uint64_t *in_range, const struct process *p, void *arg), void *arg)
{
    for (unsigned i = 0; i < KX_SLOTS; i++)
        if (prof[i].p && prof[i].proc && !prof[i].closing)
            fn(&prof[i].p->in_range, prof[i].proc, arg);
}

// --- the reference -------------------------------------------------------------

static bool meets(const struct kx_prof *k, const struct kx_sample *s)
{
    return k->open && (k->affinity & (1ull << s->cpu)) && k->source == kx_sources[s->source] &&
           (!k->proc || s->proc == k->proc);
}

static bool in_range(const struct kx_prof *k, uint64_t ip)
{
    return ip - k->base < k->size;
}

void kx_profiles_sample_end(const struct kx_sample *s)
{
    for (unsigned i = 0; i < KX_SLOTS; i++) {
        struct kx_prof *k = &prof[i];
        if (!meets(k, s))
            continue;
        bool in = in_range(k, s->ip);
        k->may++;
        k->may_in += in;
        if (k->full && s->entry > k->full_from) {
            k->sure++;
            k->sure_in += in;
        }
    }
}

struct in_flight {
    const struct kx_prof *k;
    uint64_t n, in;
};

static void count_in_flight(const struct kx_sample *s, void *arg)
{
    struct in_flight *f = arg;
    if (meets(f->k, s)) {
        f->n++;
        f->in += in_range(f->k, s->ip);
    }
}

static struct in_flight in_flight(const struct kx_prof *k)
{
    struct in_flight f = {k, 0, 0};
    kx_each_sample(count_in_flight, &f);
    return f;
}

// The stop returned: the samples still in flight may have met it.
static void cycle_end(struct kx_prof *k)
{
    struct in_flight f = in_flight(k);
    k->may += f.n;
    k->may_in += f.in;
    k->open = false;
}

// --- the checks ------------------------------------------------------------------

static uint64_t bucket_sum(const struct kx_prof *k)
{
    const uint32_t *b = (const uint32_t *)kx_user_buffer((unsigned)(k - prof));
    uint64_t sum = 0;
    for (uint32_t i = 0; i < k->buffer_size / 4; i++)
        sum += b[i];
    return sum;
}

static void check_bounds(const struct kx_prof *k, const struct sys_profile_stats *st, uint64_t lo,
                         uint64_t lo_in)
{
    struct in_flight f = k->open ? in_flight(k) : (struct in_flight){k, 0, 0};
    uint64_t hi = k->may + f.n, hi_in = k->may_in + f.in;
    if (st->in_range + st->out_of_range == st->delivered && lo <= st->delivered &&
        st->delivered <= hi && lo_in <= st->in_range && st->in_range <= hi_in)
        return;
    kx_fail("delivered: profile %u: %llu delivered, %llu in range; samples that met it %llu..%llu, "
            "in its range %llu..%llu",
            (unsigned)(k - prof), (unsigned long long)st->delivered,
            (unsigned long long)st->in_range, (unsigned long long)lo, (unsigned long long)hi,
            (unsigned long long)lo_in, (unsigned long long)hi_in);
}

// KeQueryProfileStats between the reference's bounds; once stopped, exact:
// the buckets are the in-range count, and nothing moves any more.
static void check_stats(struct kx_prof *k)
{
    uint64_t lo = k->sure, lo_in = k->sure_in; // what had surely been counted before the query
    struct sys_profile_stats st;
    KeQueryProfileStats(k->p, &st);
    check_bounds(k, &st, lo, lo_in);
    if (k->open)
        return;
    uint64_t sum = bucket_sum(k);
    unsigned slot = (unsigned)(k - prof);
    if (sum != st.in_range || k->p->in_range != sum)
        kx_fail("buckets: profile %u stopped: buckets %llu, in range %llu (stats %llu), "
                "delivered %llu",
                slot, (unsigned long long)sum, (unsigned long long)k->p->in_range,
                (unsigned long long)st.in_range, (unsigned long long)st.delivered);
    if (k->frozen && (st.delivered != k->frozen_delivered || sum != k->frozen_sum))
        kx_fail("stopped: profile %u moved: delivered %llu -> %llu, buckets %llu -> %llu", slot,
                (unsigned long long)k->frozen_delivered, (unsigned long long)st.delivered,
                (unsigned long long)k->frozen_sum, (unsigned long long)sum);
    kx_stats->checked++;
    k->frozen = true;
    k->frozen_delivered = st.delivered;
    k->frozen_in = k->p->in_range;
    k->frozen_sum = sum;
}

bool kx_profiles_check(char *msg, unsigned size)
{
    for (unsigned i = 0; i < KX_SLOTS; i++) {
        const struct kx_prof *k = &prof[i];
        if (!k->frozen || k->busy)
            continue;
        uint64_t sum = bucket_sum(k);
        if (k->p->delivered == k->frozen_delivered && k->p->in_range == k->frozen_in &&
            sum == k->frozen_sum)
            continue;
        snprintf(msg, size,
                 "stopped: profile %u moved after its stop: delivered %llu -> %llu, in range "
                 "%llu -> %llu, buckets %llu -> %llu",
                 i, (unsigned long long)k->frozen_delivered, (unsigned long long)k->p->delivered,
                 (unsigned long long)k->frozen_in, (unsigned long long)k->p->in_range,
                 (unsigned long long)k->frozen_sum, (unsigned long long)sum);
        return false;
    }
    return true;
}

// --- the operations --------------------------------------------------------------

static void op_create(struct kx_prof *k, uint32_t n)
{
    if (k->p)
        return;
    unsigned scope = kx_param_scope(n), slot = (unsigned)(k - prof);
    struct process *proc = scope ? kx_slot_process(scope - 1) : NULL;
    const struct range *r = &ranges[kx_param_range(n)];
    uint64_t all = (1ull << ncpus_here) - 1, affinity = kx_param_affinity(n) & all;
    uint32_t size = (uint32_t)profile_buckets(r->size, r->shift) * 4;
    if (scope && !proc)
        return; // its process exited
    memset(kx_user_buffer(slot), 0, size);
    struct kprofile *p;
    KPROFILE_SOURCE source = kx_sources[kx_param_source(n)];
    affinity = affinity ? affinity : all;
    if (proc)
        object_ref(&proc->obj); // the caller's, as NtCreateProfile's lookup takes one
    NTSTATUS s = KeInitializeProfile(&p, proc, r->base, r->size, r->shift, kx_user_va(slot), size,
                                     source, affinity);
    if (proc)
        object_unref(&proc->obj); // the profile holds its own
    if (!NT_SUCCESS(s))
        return; // out of memory
    *k = (struct kx_prof){.p = p,
                          .proc = proc,
                          .source = source,
                          .affinity = affinity,
                          .base = r->base,
                          .size = r->size,
                          .buffer_size = size,
                          .busy = true};
}

static void op_start(struct kx_prof *k)
{
    if (!k->p)
        return;
    if (k->open) {
        NTSTATUS s = KeStartProfile(k->p);
        if (s != STATUS_PROFILING_NOT_STOPPED)
            kx_fail("start: profile %u started twice: status %#x", (unsigned)(k - prof), s);
        return;
    }
    bool frozen = k->frozen;
    k->open = true;
    k->frozen = false;
    NTSTATUS s = KeStartProfile(k->p);
    if (NT_SUCCESS(s)) {
        k->full = true;
        k->full_from = kx_clock();
        return;
    }
    if (s != STATUS_INSUFFICIENT_RESOURCES)
        kx_fail("start: profile %u: status %#x", (unsigned)(k - prof), s);
    k->open = false; // it never counted: what it may have met adds nothing
    k->frozen = frozen;
}

static void op_stop(struct kx_prof *k)
{
    if (!k->p)
        return;
    if (!k->open) {
        NTSTATUS s = KeStopProfile(k->p);
        if (s != STATUS_PROFILING_NOT_STARTED)
            kx_fail("stop: profile %u not started: status %#x", (unsigned)(k - prof), s);
        return;
    }
    k->full = false; // a sample ending from now on may have missed it
    NTSTATUS s = KeStopProfile(k->p);
    cycle_end(k);
    if (!NT_SUCCESS(s))
        kx_fail("stop: profile %u: status %#x", (unsigned)(k - prof), s);
    check_stats(k);
}

// The last reference: a started profile is stopped by its destroy (close 1),
// or first by a stop and its check (close 0).
static void op_close(struct kx_prof *k, bool by_destroy)
{
    if (!k->p)
        return;
    if (!by_destroy)
        op_stop(k);
    k->full = false;
    k->closing = true;
    object_unref(&k->p->obj);
    if (k->open)
        cycle_end(k);
    k->p = NULL;
    k->closing = false;
    k->frozen = false;
}

void kx_profile_op(const struct kx_step *op)
{
    struct kx_prof *k = &prof[op->a % KX_SLOTS];
    while (k->busy)
        kx_wait();
    k->busy = true;
    switch (op->kind) {
    case KX_CREATE: op_create(k, op->n); break;
    case KX_START: op_start(k); break;
    case KX_STOP: op_stop(k); break;
    case KX_CLOSE: op_close(k, op->b & 1); break;
    case KX_REPLACE:
        op_close(k, op->b & 1);
        op_create(k, op->n);
        op_start(k);
        break;
    case KX_QUERY:
        if (k->p)
            check_stats(k);
        break;
    default: kx_fail("operation %u is none of the profiles'", op->kind);
    }
    k->busy = false;
}
