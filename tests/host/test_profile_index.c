// The address index of started profiles (kernel/pmc/ke/profile_index.c):
// lookups at range and granule boundaries, overlapping and wide ranges, the
// answer's interval [lo, hi] and the cursor over covering entries, set changes, and the
// dead-profile stand-in when memory runs out, against a brute-force model.
//
// Ranges here never wrap past 2^64: the Nt layer refuses those before a
// profile exists (STATUS_BUFFER_OVERFLOW), so the index may assume it.
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "core/heap.h"
#include "pmc/ke/profile.h"
#include "pmc/ke/profile_index.h"
#include "../xorshift.h"

unsigned ncpus = 5; // the per-CPU sample counters each set carries

#define GRANULE (1ull << PROFILE_GRANULE_SHIFT)
#define MiB     (1ull << 20)

// ---- the heap ke/profile_index.c allocates from ----

static int fail_next_alloc; // the next kmalloc (kzalloc) returns NULL
static long live_allocs;

void *kmalloc(size_t size)
{
    if (fail_next_alloc) {
        fail_next_alloc = 0;
        return NULL;
    }
    live_allocs++;
    return malloc(size);
}

void kfree(void *p)
{
    if (p)
        live_allocs--;
    free(p);
}

// ---- what a lookup saw ----

#define MAX_PROFILES 64

struct seen {
    unsigned n;
    const struct kprofile *p[MAX_PROFILES];
};

static bool saw(const struct seen *s, const struct kprofile *p)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->p[i] == p)
            return true;
    return false;
}

// The lookup's answer at ip, and every entry the cursor finds covering it
// (the wide ones too), each checked to cover ip.
static struct seen look(const struct profile_set *set, uint64_t ip, struct profile_answer *a)
{
    struct seen s = {0};
    profile_set_lookup(set, ip, a);
    struct profile_cursor c = profile_cursor_at(set, ip);
    for (const struct profile_set_entry *e; (e = profile_set_next(set, &c));)
        if (e->base <= ip && ip < e->end && s.n < MAX_PROFILES)
            s.p[s.n++] = e->p;
    return s;
}

// An answer a plan can keep (ke/sample.c): one narrow entry at most, and no
// wide entry to check besides.
#define reusable(set, ans) (!(ans).several && !(set)->nwide)

static struct kprofile *range(struct kprofile *p, uint64_t base, uint64_t size)
{
    memset(p, 0, sizeof *p);
    p->range_base = base;
    p->range_size = size;
    return p;
}

static struct profile_set *add(struct profile_set *old, struct kprofile *p)
{
    bool ok = false;
    struct profile_set *set = profile_set_change(old, p, NULL, NULL, &ok);
    kfree(old);
    return set;
}

static struct profile_set *drop(struct profile_set *old, struct kprofile *p)
{
    bool ok = false;
    struct profile_set *set = profile_set_change(old, NULL, p, NULL, &ok);
    kfree(old);
    return set;
}

// ---- one profile: its bounds and the granule's ----

static void one_range(void)
{
    static struct kprofile a;
    uint64_t base = 4 * MiB + 0x1000, end = base + 0x2000; // inside granule 2
    struct profile_set *set = add(NULL, range(&a, base, 0x2000));
    struct profile_answer ans;
    CHECK(set && set->n == 1 && set->nwide == 0 && set->e[0].base == base && set->e[0].end == end,
          "index: one narrow range, one entry [base, end)");

    struct seen s = look(set, base, &ans);
    CHECK(s.n == 1 && s.p[0] == &a && ans.entry == &set->e[0] && reusable(set, ans),
          "index: the first byte is in the range, a reusable answer naming its entry");
    CHECK(ans.lo == base && ans.hi == end - 1, "index: ... valid over exactly [base, end - 1]");
    s = look(set, end - 1, &ans);
    CHECK(s.n == 1 && ans.entry == &set->e[0] && ans.lo == base && ans.hi == end - 1,
          "index: the last byte is in the range");
    s = look(set, end, &ans);
    CHECK(s.n == 0 && !ans.entry && reusable(set, ans) && ans.lo == end && ans.hi == 6 * MiB - 1,
          "index: the end is not: no entry, from the end to the granule's last byte");
    s = look(set, base - 1, &ans);
    CHECK(s.n == 0 && !ans.entry && reusable(set, ans) && ans.lo == 4 * MiB && ans.hi == base - 1,
          "index: below the base: from the granule's first byte to base - 1");
    s = look(set, 4 * MiB - 1, &ans);
    CHECK(s.n == 0 && !ans.entry && ans.lo == 2 * MiB && ans.hi == 4 * MiB - 1,
          "index: another granule: nothing there, the whole granule");
    s = look(set, 0, &ans);
    CHECK(s.n == 0 && ans.lo == 0 && ans.hi == GRANULE - 1, "index: address 0");
    s = look(set, ~0ull, &ans);
    CHECK(s.n == 0 && ans.lo == ~0ull - (GRANULE - 1) && ans.hi == ~0ull,
          "index: the last address: the top granule, no overflow");
    set = drop(set, &a);
    CHECK(set == NULL, "index: removing the only profile leaves no set");
}

// A range across a granule boundary answers within each granule.
static void across_granules(void)
{
    static struct kprofile a;
    uint64_t base = 6 * MiB - 0x1000, end = 6 * MiB + 0x1000;
    struct profile_set *set = add(NULL, range(&a, base, end - base));
    struct profile_answer ans;
    struct seen s = look(set, 6 * MiB - 1, &ans);
    CHECK(s.n == 1 && ans.lo == base && ans.hi == 6 * MiB - 1,
          "index: a range across granules: [base, granule end] below the boundary");
    s = look(set, 6 * MiB, &ans);
    CHECK(s.n == 1 && ans.lo == 6 * MiB && ans.hi == end - 1,
          "index: ... [granule start, end - 1] above it");
    kfree(set);
}

// The top of the address space: a range whose last byte is 2^64 - 2.
static void top_of_address_space(void)
{
    static struct kprofile a;
    uint64_t base = ~0ull - 0xFFF;
    struct profile_set *set = add(NULL, range(&a, base, 0xFFF));
    struct profile_answer ans;
    struct seen s = look(set, ~0ull - 1, &ans);
    CHECK(s.n == 1 && ans.lo == base && ans.hi == ~0ull - 1,
          "index: a range ending at 2^64 - 1 counts its last byte");
    s = look(set, ~0ull, &ans);
    CHECK(s.n == 0 && !ans.entry && ans.lo == ~0ull && ans.hi == ~0ull,
          "index: ... and not the address at its end");
    kfree(set);
}

// ---- several profiles ----

static void overlapping(void)
{
    static struct kprofile a, b, c;
    struct profile_set *set = add(NULL, range(&b, 0x2000, 0x2000)); // [0x2000, 0x4000)
    set = add(set, range(&a, 0x1000, 0x2000));                      // [0x1000, 0x3000)
    set = add(set, range(&c, 0x1800, 0x100));                       // [0x1800, 0x1900)
    CHECK(set->n == 3 && set->e[0].p == &a && set->e[1].p == &c && set->e[2].p == &b,
          "index: entries sorted by base whatever the order of adds");
    CHECK(set->e[0].max_end == 0x3000 && set->e[1].max_end == 0x3000 && set->e[2].max_end == 0x4000,
          "index: max_end is the largest end so far");
    struct profile_answer ans;
    struct seen s = look(set, 0x2800, &ans);
    CHECK(s.n == 2 && saw(&s, &a) && saw(&s, &b) && !reusable(set, ans),
          "index: two ranges cover the address: both counted, not reusable");
    CHECK(ans.lo == 0x2000 && ans.hi == 0x2FFF, "index: ... over their intersection");
    s = look(set, 0x1880, &ans);
    CHECK(s.n == 2 && saw(&s, &a) && saw(&s, &c) && !reusable(set, ans) && ans.lo == 0x1800 &&
              ans.hi == 0x18FF,
          "index: a range nested in another: both, over the inner one");
    s = look(set, 0x1C00, &ans);
    CHECK(s.n == 1 && s.p[0] == &a && reusable(set, ans) && ans.entry && ans.entry->p == &a &&
              ans.lo == 0x1900 && ans.hi == 0x1FFF,
          "index: between the nested range and the next base: only the outer one");
    s = look(set, 0x3800, &ans);
    CHECK(s.n == 1 && s.p[0] == &b && ans.lo == 0x3000 && ans.hi == 0x3FFF,
          "index: past the first range's end: the second alone");
    s = look(set, 0x800, &ans);
    CHECK(s.n == 0 && reusable(set, ans) && !ans.entry && ans.lo == 0 && ans.hi == 0xFFF,
          "index: below every range: up to the first base");
    set = drop(set, &a);
    CHECK(set->n == 2 && set->e[0].p == &c && set->e[1].p == &b,
          "index: removing one keeps the others in order");
    s = look(set, 0x2800, &ans);
    CHECK(s.n == 1 && s.p[0] == &b && reusable(set, ans), "index: ... and its addresses");
    kfree(set);
}

// Ranges over more than PROFILE_WIDE_GRANULES granules are the caller's to
// check (the cursor finds them); while any is in the set, no answer is reusable.
static void wide(void)
{
    static struct kprofile w, n, edge;
    uint64_t wide_size = (PROFILE_WIDE_GRANULES + 1) * GRANULE;
    struct profile_set *set = add(NULL, range(&w, 0, wide_size));
    set = add(set, range(&n, 8 * MiB, 0x1000));
    set = add(set, range(&edge, 64 * MiB, PROFILE_WIDE_GRANULES * GRANULE)); // exactly the limit
    CHECK(set->n == 2 && set->nwide == 1 && set->e[2].p == &w && set->e[2].base == 0 &&
              set->e[2].end == wide_size,
          "index: a range over 33 granules sits after the narrow ones; 32 is still narrow");
    struct profile_answer ans;
    struct seen s = look(set, 8 * MiB, &ans);
    CHECK(s.n == 2 && saw(&s, &n) && saw(&s, &w) && ans.entry && ans.entry->p == &n &&
              !reusable(set, ans),
          "index: with a wide entry the cursor finds both, the lookup the narrow one");
    s = look(set, 20 * MiB, &ans);
    CHECK(s.n == 1 && s.p[0] == &w && !ans.entry && !reusable(set, ans),
          "index: the wide entry is the cursor's, not the lookup's");
    s = look(set, 64 * MiB + 31 * GRANULE, &ans);
    CHECK(s.n == 1 && s.p[0] == &edge, "index: a 32-granule range is found in its last granule");
    set = drop(set, &w);
    CHECK(set->nwide == 0 && set->n == 2, "index: removing the wide entry ...");
    look(set, 20 * MiB, &ans);
    CHECK(reusable(set, ans), "index: ... makes answers reusable again");
    kfree(set);
}

// Many small ranges in one granule: the table and the backward scan.
static void crowded_granule(void)
{
    static struct kprofile p[40];
    struct profile_set *set = NULL;
    for (unsigned i = 0; i < 40; i++) // [i * 0x100, i * 0x100 + 0x80), added high to low
        set = add(set, range(&p[39 - i], (39 - i) * 0x100, 0x80));
    bool ok = set && set->n == 40;
    for (unsigned i = 0; ok && i < 40; i++) {
        struct profile_answer ans;
        struct seen in = look(set, i * 0x100 + 0x7F, &ans);
        ok = in.n == 1 && in.p[0] == &p[i] && ans.lo == i * 0x100 && ans.hi == i * 0x100 + 0x7F;
        struct seen out = look(set, i * 0x100 + 0x80, &ans);
        ok = ok && out.n == 0 && ans.lo == i * 0x100 + 0x80 &&
             ans.hi == (i == 39 ? GRANULE - 1 : (i + 1) * 0x100 - 1);
    }
    CHECK(ok, "index: 40 ranges in one granule: each found, each gap between them");
    kfree(set);
}

// ---- out of memory, and the dead profile ----

// KeStopProfile without memory for a smaller set points the stopped profile's
// entries at a stand-in that is never active; the next change drops them.
static void dead_profile(void)
{
    static struct kprofile a, b, c, dead;
    struct profile_set *set = add(NULL, range(&a, 0x10000, 0x1000));
    set = add(set, range(&b, 0x20000, 0x1000));
    bool ok = true;
    fail_next_alloc = 1;
    struct profile_set *smaller = profile_set_change(set, NULL, &a, &dead, &ok);
    CHECK(!smaller && !ok, "index: no memory: no set, ok false");
    CHECK(set->n == 2 && set->e[0].p == &a, "index: ... and the old set untouched");
    set->e[0].p = &dead; // what KeStopProfile does in place
    struct profile_answer ans;
    struct seen s = look(set, 0x10800, &ans);
    CHECK(s.n == 1 && s.p[0] == &dead, "index: the stand-in's entry still answers, naming it");
    struct profile_set *next = profile_set_change(set, range(&c, 0x18000, 0x100), NULL, &dead, &ok);
    kfree(set);
    set = next;
    CHECK(ok && set && set->n == 2 && set->e[0].p == &c && set->e[1].p == &b,
          "index: the next change drops the stand-in's entries");
    s = look(set, 0x10800, &ans);
    CHECK(s.n == 0 && reusable(set, ans), "index: ... and its addresses are nobody's");
    next = profile_set_change(set, NULL, NULL, &c, &ok); // c as the stand-in this time
    CHECK(ok && next && next->n == 1 && next->e[0].p == &b,
          "index: a change with nothing added or removed drops the stand-in's entries");
    kfree(next);
    next = profile_set_change(set, NULL, &b, &c, &ok);
    CHECK(ok && next == NULL, "index: nothing left after the drop: NULL, ok true");
    kfree(set);
}

// ---- the set's own sample counters ----

// A process-scope set counts the samples that found it, one counter per CPU
// (ke/profile.c hands them to its profiles when it is replaced): each new set
// starts from zero, and the counters share no byte with the entries or the
// granule table, so a sample's count cannot change a lookup's answer.
static void sample_counters(void)
{
    static struct kprofile a, b;
    struct profile_set *set = add(NULL, range(&a, 0x10000, 0x1000));
    set = add(set, range(&b, 0x400000, 0x1000));
    bool zero = true;
    for (unsigned cpu = 0; cpu < ncpus; cpu++)
        zero &= set->samples[cpu] == 0;
    CHECK(zero, "index: a new set's %u sample counters start at zero", ncpus);
    for (unsigned cpu = 0; cpu < ncpus; cpu++)
        set->samples[cpu] = ~0ull;
    struct profile_answer ans;
    struct seen s = look(set, 0x10800, &ans);
    CHECK(s.n == 1 && s.p[0] == &a && reusable(set, ans),
          "index: counters at their maximum: a still found");
    s = look(set, 0x400010, &ans);
    CHECK(s.n == 1 && s.p[0] == &b, "index: ... and b");
    bool ok = false;
    struct profile_set *next = profile_set_change(set, NULL, NULL, NULL, &ok);
    CHECK(ok && next->samples != set->samples && next->samples[ncpus - 1] == 0,
          "index: the set made from it counts from zero in counters of its own");
    kfree(set);
    kfree(next);
}

// ---- against a brute-force model ----

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_random(void)
{
    return xorshift64(&rng);
}

struct model {
    unsigned n;
    struct kprofile *p[MAX_PROFILES];
};

static bool wide_range(const struct kprofile *p)
{
    uint64_t end = p->range_base + p->range_size;
    return ((end - 1) >> PROFILE_GRANULE_SHIFT) - (p->range_base >> PROFILE_GRANULE_SHIFT) + 1 >
           PROFILE_WIDE_GRANULES;
}

static bool covers(const struct kprofile *p, uint64_t ip)
{
    return p->range_base <= ip && ip - p->range_base < p->range_size;
}

// Whether the lookup and the cursor at ip agree with the model: the cursor
// finds the ranges covering ip and no other; the lookup's [lo, hi] lies
// around ip, inside its granule, with no narrow range's boundary strictly
// inside and a boundary (or the granule's edge) at each end; its answer is
// the one narrow range covering ip, and several when more do.
static bool agrees(const struct profile_set *set, const struct model *m, uint64_t ip)
{
    struct profile_answer ans;
    struct seen s = look(set, ip, &ans);
    unsigned narrow = 0, nwide = 0, wide_here = 0;
    const struct kprofile *only = NULL;
    bool lo_edge = (ans.lo & (GRANULE - 1)) == 0, hi_edge = (ans.hi & (GRANULE - 1)) == GRANULE - 1;
    for (unsigned i = 0; i < m->n; i++) {
        const struct kprofile *p = m->p[i];
        uint64_t b = p->range_base, e = p->range_base + p->range_size;
        if (wide_range(p)) {
            nwide++;
            if (covers(p, ip) != saw(&s, p))
                return false; // the cursor finds the wide entries too
            wide_here += covers(p, ip);
            continue;
        }
        if (covers(p, ip) != saw(&s, p))
            return false;
        if (covers(p, ip)) {
            narrow++;
            only = p;
        }
        if ((b > ans.lo && b <= ans.hi) || (e > ans.lo && e <= ans.hi))
            return false; // the answer changes inside [lo, hi]
        lo_edge |= b == ans.lo || e == ans.lo;
        hi_edge |= b == ans.hi + 1 || e == ans.hi + 1;
    }
    if (s.n != narrow + wide_here || ans.lo > ip || ans.hi < ip ||
        ans.lo >> PROFILE_GRANULE_SHIFT != ip >> PROFILE_GRANULE_SHIFT ||
        ans.hi >> PROFILE_GRANULE_SHIFT != ip >> PROFILE_GRANULE_SHIFT || !lo_edge || !hi_edge)
        return false;
    if (ans.several != (narrow > 1) || reusable(set, ans) != (narrow <= 1 && nwide == 0))
        return false;
    return narrow == 1 ? ans.entry && ans.entry->p == only : !ans.entry;
}

// Whether the set holds exactly the model's profiles, narrow ones sorted.
static bool same_profiles(const struct profile_set *set, const struct model *m)
{
    if (!set)
        return m->n == 0;
    if (set->n + set->nwide != m->n)
        return false;
    for (unsigned i = 0; i < set->n + set->nwide; i++) {
        bool in = false;
        for (unsigned k = 0; k < m->n; k++)
            in |= m->p[k] == set->e[i].p;
        if (!in || (i < set->n) == wide_range(set->e[i].p))
            return false;
        if (i > 0 && i < set->n && set->e[i - 1].base > set->e[i].base)
            return false;
    }
    return true;
}

static void random_range(struct kprofile *p)
{
    uint64_t area = 16 * MiB + (next_random() % 4) * 0x1000000000ull; // a few distant areas
    uint64_t kind = next_random() % 10, size;
    if (kind == 0)
        size = (PROFILE_WIDE_GRANULES + 1 + next_random() % 8) * GRANULE; // wide
    else if (kind < 3)
        size = 1 + next_random() % (3 * GRANULE); // over a few granules
    else
        size = 1 + next_random() % 0x3000; // small
    range(p, area + next_random() % (4 * GRANULE), size);
}

// The addresses where answers change: each range's base and end, one byte on
// either side, granule edges near them, and a random one.
static bool agrees_everywhere(const struct profile_set *set, const struct model *m)
{
    for (unsigned i = 0; i < m->n; i++) {
        const struct kprofile *p = m->p[i];
        uint64_t b = p->range_base, e = b + p->range_size;
        uint64_t probes[] = {b - 1,
                             b,
                             b + 1,
                             e - 1,
                             e,
                             e + 1,
                             b | (GRANULE - 1),
                             (b | (GRANULE - 1)) + 1,
                             b + next_random() % p->range_size};
        for (unsigned k = 0; k < sizeof probes / sizeof probes[0]; k++)
            if (!agrees(set, m, probes[k])) {
                printf("# disagreement at %#llx\n", (unsigned long long)probes[k]);
                return false;
            }
    }
    return true;
}

static void against_model(void)
{
    static struct kprofile pool[MAX_PROFILES];
    struct model m = {0};
    struct profile_set *set = NULL;
    unsigned changes = 0, bad = 0;
    for (unsigned round = 0; round < 2000 && !bad; round++, changes++) {
        bool ok = false, grow = m.n == 0 || (m.n < MAX_PROFILES && next_random() % 3 != 0);
        struct profile_set *next;
        if (grow) {
            struct kprofile *p = &pool[0];
            for (unsigned i = 0; i < MAX_PROFILES; i++) { // a pool entry not in the set
                bool used = false;
                for (unsigned k = 0; k < m.n; k++)
                    used |= m.p[k] == &pool[i];
                if (!used) {
                    p = &pool[i];
                    break;
                }
            }
            random_range(p);
            next = profile_set_change(set, p, NULL, NULL, &ok);
            m.p[m.n++] = p;
        } else {
            unsigned k = (unsigned)(next_random() % m.n);
            next = profile_set_change(set, NULL, m.p[k], NULL, &ok);
            m.p[k] = m.p[--m.n];
        }
        kfree(set);
        set = next;
        bad += !ok || !same_profiles(set, &m) || (set && !agrees_everywhere(set, &m));
    }
    CHECK(!bad,
          "index: %u random adds and removes agree with a brute-force model at every "
          "range boundary",
          changes);
    kfree(set);
}

void test_profile_index(void)
{
    one_range();
    across_granules();
    top_of_address_space();
    overlapping();
    wide();
    crowded_granule();
    dead_profile();
    sample_counters();
    against_model();
    CHECK(live_allocs == 0, "index: every set allocated was freed (%ld left)", live_allocs);
}
