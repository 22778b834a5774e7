// The address index of started profiles (kernel/pmc/ke/profile_index.c and
// its persistent B+ tree, kernel/pmc/ke/profile_tree.c): lookups at range
// and granule boundaries, overlapping and wide ranges, the answer's interval
// [lo, hi] and the cursor over covering entries, set changes against a
// brute-force model; the tree's shape after every change (order, branch
// summaries, fill, height); old sets untouched by a change (readers go on in
// them); the cost of a change at 10,000 profiles; stops with no memory at
// all (the reserve), starts failing at each allocation (nothing changed);
// and the per-CPU sample counts carried from set to set.
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

static long fail_after = -1; // allocations to grant before every one fails; -1: never
static long live_allocs, allocs, frees;

void *kmalloc(size_t size)
{
    if (fail_after == 0)
        return NULL;
    if (fail_after > 0)
        fail_after--;
    live_allocs++;
    allocs++;
    return malloc(size);
}

void kfree(void *p)
{
    if (p) {
        live_allocs--;
        frees++;
    }
    free(p);
}

// ---- changes, retired at once (no reader waits here) ----

static struct profile_set *add(struct profile_set *old, struct kprofile *p)
{
    struct profile_change ch;
    if (!NT_SUCCESS(profile_set_add(old, p, &ch)))
        return NULL;
    profile_change_retire(&ch);
    return ch.set;
}

static struct profile_set *drop(struct profile_set *old, struct kprofile *p)
{
    struct profile_change ch;
    profile_set_remove(old, p, &ch);
    profile_change_retire(&ch);
    return ch.set;
}

// Every profile of set stopped, the set and what it keeps freed.
static void drop_all(struct profile_set *set)
{
    while (set) {
        const struct profile_tree *t = set->narrow.root ? &set->narrow : &set->wide;
        const struct profile_node *leaf = t->root;
        while (leaf->level)
            leaf = leaf->item[0].child;
        set = drop(set, leaf->item[0].p);
    }
}

// ---- the tree's shape ----

#define MAX_PROFILES 64

// The entries of t in order, at most max of them; how many there are.
static unsigned collect(const struct profile_node *node, const struct profile_set_entry **out,
                        unsigned n, unsigned max)
{
    for (unsigned i = 0; node && i < node->count; i++) {
        if (node->level)
            n = collect(node->item[i].child, out, n, max);
        else if (n++ < max)
            out[n - 1] = &node->item[i];
    }
    return n;
}

static const struct profile_set_entry *nth(const struct profile_tree *t, unsigned i)
{
    const struct profile_set_entry *e[MAX_PROFILES] = {0};
    collect(t->root, e, 0, MAX_PROFILES);
    return i < MAX_PROFILES ? e[i] : NULL;
}

static bool key_le(const struct profile_set_entry *a, const struct profile_set_entry *b)
{
    return a->base < b->base || (a->base == b->base && (uintptr_t)a->p <= (uintptr_t)b->p);
}

// Whether node's subtree is a B+ tree of height level + 1: its level, fill
// (PROFILE_TREE_MIN..ORDER items but in the root, a branch's root two at
// least), its entries in (base, profile) order after *last, each a range of
// its profile, each branch item the first key and the largest end below it.
static bool shape_below(const struct profile_node *node, unsigned level, bool root,
                        const struct profile_set_entry **last, uint64_t *max_end)
{
    if (node->level != level || node->count > PROFILE_TREE_ORDER || node->count == 0 ||
        (!root && node->count < PROFILE_TREE_MIN) || (root && level && node->count < 2))
        return false;
    *max_end = 0;
    for (unsigned i = 0; i < node->count; i++) {
        const struct profile_set_entry *e = &node->item[i];
        uint64_t end = e->end;
        if (level) {
            const struct profile_set_entry *first = *last;
            if (!e->child || !shape_below(e->child, level - 1, false, last, &end) ||
                end != e->end || e->child->item[0].base != e->base || (first && !key_le(first, e)))
                return false;
            const struct profile_node *leaf = e->child; // the first entry below
            while (leaf->level)
                leaf = leaf->item[0].child;
            if (leaf->item[0].p != e->p)
                return false;
        } else {
            if (e->child || e->base != e->p->range_base ||
                e->end != e->p->range_base + e->p->range_size || (*last && !key_le(*last, e)))
                return false;
            *last = e;
        }
        *max_end = MAX(*max_end, end);
    }
    return true;
}

static bool shape_ok(const struct profile_tree *t)
{
    const struct profile_set_entry *last = NULL;
    uint64_t end;
    if (!t->root)
        return t->height == 0;
    return t->height <= PROFILE_TREE_LEVELS &&
           shape_below(t->root, t->height - 1, true, &last, &end);
}

// Both trees' shapes, their counts, and the reserve the set keeps.
static bool set_ok(const struct profile_set *set)
{
    const struct profile_set_entry *e[1];
    unsigned h = MAX(set->narrow.height, set->wide.height);
    return shape_ok(&set->narrow) && shape_ok(&set->wide) &&
           collect(set->narrow.root, e, 0, 0) == set->n &&
           collect(set->wide.root, e, 0, 0) == set->nwide &&
           set->reserve.n == (set->n + set->nwide > 1 ? profile_tree_remove_need(h) : 0) &&
           set->n + set->nwide > 0 && (set->n + set->nwide < 2 || set->spare);
}

// ---- what a lookup saw ----

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
    struct profile_cursor c;
    profile_cursor_at(&c, set, ip);
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

// ---- one profile: its bounds and the granule's ----

static void one_range(void)
{
    static struct kprofile a;
    uint64_t base = 4 * MiB + 0x1000, end = base + 0x2000; // inside granule 2
    struct profile_set *set = add(NULL, range(&a, base, 0x2000));
    struct profile_answer ans;
    const struct profile_set_entry *e0 = set ? nth(&set->narrow, 0) : NULL;
    CHECK(set && set->n == 1 && set->nwide == 0 && e0->base == base && e0->end == end &&
              set->narrow.height == 1 && set_ok(set),
          "index: one narrow range, one entry [base, end) in a one-leaf tree");

    struct seen s = look(set, base, &ans);
    CHECK(s.n == 1 && s.p[0] == &a && ans.entry == e0 && reusable(set, ans),
          "index: the first byte is in the range, a reusable answer naming its entry");
    CHECK(ans.lo == base && ans.hi == end - 1, "index: ... valid over exactly [base, end - 1]");
    s = look(set, end - 1, &ans);
    CHECK(s.n == 1 && ans.entry == e0 && ans.lo == base && ans.hi == end - 1,
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
    CHECK(set == NULL && live_allocs == 0,
          "index: removing the only profile leaves no set, and frees all it kept");
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
    drop_all(set);
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
    drop_all(set);
}

// ---- several profiles ----

static void overlapping(void)
{
    static struct kprofile a, b, c;
    struct profile_set *set = add(NULL, range(&b, 0x2000, 0x2000)); // [0x2000, 0x4000)
    set = add(set, range(&a, 0x1000, 0x2000));                      // [0x1000, 0x3000)
    set = add(set, range(&c, 0x1800, 0x100));                       // [0x1800, 0x1900)
    CHECK(set->n == 3 && nth(&set->narrow, 0)->p == &a && nth(&set->narrow, 1)->p == &c &&
              nth(&set->narrow, 2)->p == &b && set_ok(set),
          "index: entries sorted by base whatever the order of adds");
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
    CHECK(set->n == 2 && nth(&set->narrow, 0)->p == &c && nth(&set->narrow, 1)->p == &b,
          "index: removing one keeps the others in order");
    s = look(set, 0x2800, &ans);
    CHECK(s.n == 1 && s.p[0] == &b && reusable(set, ans), "index: ... and its addresses");
    drop_all(set);
}

// Profiles with one base (NT's limit test starts 240 on one range): ordered
// by the profile's address, each removed exactly.
static void same_base(void)
{
    static struct kprofile p[40];
    struct profile_set *set = NULL;
    for (unsigned i = 0; i < 40; i++)
        set = add(set, range(&p[(i * 7) % 40], 0x400000, 4));
    struct profile_answer ans;
    struct seen s = look(set, 0x400002, &ans);
    CHECK(set->n == 40 && set->narrow.height == 2 && set_ok(set) && s.n == 40 && ans.several &&
              ans.lo == 0x400000 && ans.hi == 0x400003,
          "index: 40 profiles of one range: a two-level tree, all found, several");
    bool ok = true;
    for (unsigned i = 0; i < 39 && ok; i++) {
        set = drop(set, &p[(i * 13) % 40]);
        s = look(set, 0x400000, &ans);
        ok = set_ok(set) && s.n == 39 - i && !saw(&s, &p[(i * 13) % 40]);
    }
    CHECK(ok && set->n == 1 && set->narrow.height == 1,
          "index: ... removed one by one, each the one asked for, down to one leaf");
    drop_all(set);
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
    const struct profile_set_entry *we = nth(&set->wide, 0);
    CHECK(set->n == 2 && set->nwide == 1 && we->p == &w && we->base == 0 && we->end == wide_size &&
              set_ok(set),
          "index: a range over 33 granules is in the wide tree; 32 is still narrow");
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
    CHECK(set->nwide == 0 && set->n == 2 && !set->wide.root, "index: removing the wide entry ...");
    look(set, 20 * MiB, &ans);
    CHECK(reusable(set, ans), "index: ... makes answers reusable again");
    drop_all(set);
}

// Many small ranges in one granule: a lookup descends only where an entry
// may cover the address, and finds each gap's boundaries.
static void crowded_granule(void)
{
    static struct kprofile p[40];
    struct profile_set *set = NULL;
    for (unsigned i = 0; i < 40; i++) // [i * 0x100, i * 0x100 + 0x80), added high to low
        set = add(set, range(&p[39 - i], (39 - i) * 0x100, 0x80));
    bool ok = set && set->n == 40 && set_ok(set);
    for (unsigned i = 0; ok && i < 40; i++) {
        struct profile_answer ans;
        struct seen in = look(set, i * 0x100 + 0x7F, &ans);
        ok = in.n == 1 && in.p[0] == &p[i] && ans.lo == i * 0x100 && ans.hi == i * 0x100 + 0x7F;
        struct seen out = look(set, i * 0x100 + 0x80, &ans);
        ok = ok && out.n == 0 && ans.lo == i * 0x100 + 0x80 &&
             ans.hi == (i == 39 ? GRANULE - 1 : (i + 1) * 0x100 - 1);
    }
    CHECK(ok, "index: 40 ranges in one granule: each found, each gap between them");
    drop_all(set);
}

// ---- the old set, while readers may be in it ----

// A change leaves the set it was made from as it was: samples still in it
// (ke/profile.c waits for them before the retire) read the same answers and
// the same memory, shared nodes and all, until the retire.
static void old_set_untouched(void)
{
    static struct kprofile p[60], x;
    struct profile_set *set = NULL;
    for (unsigned i = 0; i < 60; i++)
        set = add(set, range(&p[i], 0x400000 + i * 0x40, 0x20));
    size_t bytes = sizeof *set + 2 * ncpus * sizeof(uint64_t);
    struct profile_set *before = malloc(bytes);
    memcpy(before, set, bytes);
    const struct profile_set_entry *was[MAX_PROFILES] = {0}, *now[MAX_PROFILES] = {0};
    collect(set->narrow.root, was, 0, MAX_PROFILES);
    struct profile_change ch;
    bool ok = NT_SUCCESS(profile_set_add(set, range(&x, 0x400010, 0x100), &ch));
    struct profile_answer ans;
    struct seen s = look(set, 0x400018, &ans);
    collect(set->narrow.root, now, 0, MAX_PROFILES);
    ok = ok && s.n == 1 && s.p[0] == &p[0] && !memcmp(was, now, sizeof was) &&
         shape_ok(&set->narrow);
    ok = ok && !memcmp(before, set, offsetof(struct profile_set, reserve));
    s = look(ch.set, 0x400018, &ans);
    CHECK(ok && s.n == 2 && ch.set->n == 61 && ch.set != set,
          "index: an add leaves the old set's trees, entries and counts as they were");
    profile_change_retire(&ch);
    set = ch.set;
    memcpy(before, set, bytes);
    profile_set_remove(set, &p[30], &ch);
    s = look(set, 0x400000 + 30 * 0x40, &ans);
    ok =
        s.n == 1 && s.p[0] == &p[30] && !memcmp(before, set, offsetof(struct profile_set, reserve));
    s = look(ch.set, 0x400000 + 30 * 0x40, &ans);
    CHECK(ok && s.n == 0 && shape_ok(&set->narrow),
          "index: ... and so does a removal: the old set still finds the stopped profile");
    profile_change_retire(&ch);
    free(before);
    drop_all(ch.set);
}

// ---- out of memory ----

// A stop needs no memory: with every allocation failing, every profile of a
// tree of several levels is removed, in an order that merges and evens
// nodes out at every level, and nothing leaks.
static void stop_without_memory(void)
{
    enum { N = 3000 };
    static struct kprofile p[N];
    struct profile_set *set = NULL;
    for (unsigned i = 0; i < N; i++)
        set = add(set, range(&p[i], 0x10000000 + (uint64_t)((i * 1237) % N) * 0x100, 0x80));
    unsigned height = set->narrow.height;
    fail_after = 0;
    bool ok = true;
    for (unsigned i = 0; i < N && ok; i++) {
        set = drop(set, &p[(i * 2749) % N]);
        ok = i == N - 1 ? !set : set_ok(set) && set->n == N - 1 - i;
    }
    fail_after = -1;
    CHECK(ok && height >= 4 && live_allocs == 0,
          "index: %u profiles (height %u) all stopped with no memory at all, none left", N, height);
}

// A start that meets a failed allocation, at any of the allocations it
// makes, changes nothing: same set, same reserve, no memory kept. 300 adds
// in a scattered order, each failed at every allocation before it succeeds:
// leaves split, and the root, twice.
static void start_without_memory(void)
{
    enum { N = 300 };
    static struct kprofile p[N];
    struct profile_set *set = NULL;
    bool ok = true;
    unsigned failures = 0, grown = 0;
    for (unsigned i = 0; i < N && ok; i++) {
        range(&p[i], 0x400000 + ((i * 97) % N) * 0x10, 4);
        long live = live_allocs;
        unsigned reserve = set ? set->reserve.n : 0, height = set ? set->narrow.height : 0;
        for (long tries = 0;; tries++) {
            struct profile_change ch;
            fail_after = tries;
            NTSTATUS s = profile_set_add(set, &p[i], &ch);
            fail_after = -1;
            if (NT_SUCCESS(s)) {
                profile_change_retire(&ch);
                set = ch.set;
                break;
            }
            failures++;
            ok = ok && s == STATUS_INSUFFICIENT_RESOURCES && live_allocs == live &&
                 (!set || (set->reserve.n == reserve && set_ok(set)));
        }
        grown += set->narrow.height > height;
        ok = ok && set_ok(set);
    }
    CHECK(ok && grown == 3 && set->narrow.height == 3 && failures > 0,
          "index: %u starts, each failed at each of its allocations first (%u failures): "
          "nothing changed by those, the tree grew to height 3",
          N, failures);
    drop_all(set);
}

// ---- the cost of a change ----

// 10,000 profiles of one scope, added in order (the bench's case: each in
// the last leaf) and removed at random: every change makes, replaces and
// frees a few nodes, whatever the number of profiles.
static void many_profiles(void)
{
    enum { N = 10000 };
    static struct kprofile p[N];
    struct profile_set *set = NULL;
    long most = 0, ops;
    bool ok = true;
    for (unsigned i = 0; i < N && ok; i++) {
        long before = allocs + frees;
        set = add(set, range(&p[i], 0x400000 + (uint64_t)i * 0x10, 4));
        ops = allocs + frees - before;
        most = MAX(most, ops);
        ok = set && (i % 997 || set_ok(set));
    }
    unsigned height = set->narrow.height;
    struct profile_answer ans;
    struct seen s = look(set, 0x400000 + 5000 * 0x10 + 2, &ans);
    ok = ok && s.n == 1 && s.p[0] == &p[5000] && ans.lo == 0x400000 + 5000 * 0x10;
    CHECK(ok && height <= 5 && most <= 4 * PROFILE_TREE_LEVELS,
          "index: %u starts in order: height %u, at most %ld allocations and frees per start", N,
          height, most);
    most = 0;
    for (unsigned i = 0; i < N && ok; i++) {
        long before = allocs + frees;
        set = drop(set, &p[(i * 7919) % N]);
        ops = allocs + frees - before;
        most = MAX(most, i < N - 1 ? ops : 0);
        ok = i == N - 1 ? !set : (i % 997 || set_ok(set));
    }
    CHECK(ok && most <= 4 * PROFILE_TREE_LEVELS && live_allocs == 0,
          "index: ... %u stops at random: at most %ld frees per stop, nothing left", N, most);
}

// ---- the sets' sample counts ----

// A process-scope set counts the samples that found it, one counter per CPU;
// each new set counts from zero and, once the old one is retired, knows in
// retired[] what every set before it counted (ke/profile.c's exact delivered
// counts rest on this): retired + samples of the current set is the scope's
// total, across adds, removals and the spare set's reuse.
static void sample_counts(void)
{
    static struct kprofile p[20];
    uint64_t total[8] = {0};
    struct profile_set *set = NULL;
    bool ok = true;
    for (unsigned step = 0; step < 200 && ok; step++) {
        struct profile_change ch;
        unsigned i = step * 7 % 20;
        bool in = false;
        for (unsigned k = 0; set && k < set->n; k++)
            in |= nth(&set->narrow, k)->p == &p[i];
        if (in)
            profile_set_remove(set, &p[i], &ch);
        else
            ok = NT_SUCCESS(profile_set_add(set, range(&p[i], 0x1000 * i, 0x100), &ch));
        for (unsigned cpu = 0; ok && ch.set && cpu < ncpus; cpu++)
            ok = ch.set->samples[cpu] == 0;
        for (unsigned cpu = 0; ok && set && cpu < ncpus; cpu++) { // samples still in the old set
            set->samples[cpu] += cpu + step;
            total[cpu] += cpu + step;
        }
        profile_change_retire(&ch);
        if (!(set = ch.set)) {
            memset(total, 0, sizeof total); // a new scope's first set counts from zero
            continue;
        }
        for (unsigned cpu = 0; ok && cpu < ncpus; cpu++) {
            set->samples[cpu] += step % 3; // samples in the new set
            total[cpu] += step % 3;
            ok = set->retired[cpu] + set->samples[cpu] == total[cpu];
        }
    }
    CHECK(ok, "index: 200 changes: each new set counts from zero, retired + samples is the total");
    drop_all(set);
}

// ---- against a brute-force model ----

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_random(void)
{
    return xorshift64(&rng);
}

#define MODEL_MAX 240

struct model {
    unsigned n;
    struct kprofile *p[MODEL_MAX];
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

// Whether the set holds exactly the model's profiles, the narrow ones in
// the narrow tree, in a valid shape.
static bool same_profiles(const struct profile_set *set, const struct model *m)
{
    if (!set)
        return m->n == 0;
    if (!set_ok(set) || set->n + set->nwide != m->n)
        return false;
    const struct profile_set_entry *e[MODEL_MAX];
    unsigned n = collect(set->wide.root, e, collect(set->narrow.root, e, 0, MODEL_MAX), MODEL_MAX);
    for (unsigned i = 0; i < n; i++) {
        bool in = false;
        for (unsigned k = 0; k < m->n; k++)
            in |= m->p[k] == e[i]->p;
        if (!in || (i < set->n) == wide_range(e[i]->p))
            return false;
    }
    return n == m->n;
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

// max profiles at most, rounds random adds and removes (adds of one removal
// in odds), each set checked against the model at every boundary.
static void against_model(unsigned max, unsigned rounds, unsigned odds)
{
    static struct kprofile pool[MODEL_MAX];
    struct model m = {0};
    struct profile_set *set = NULL;
    unsigned changes = 0, bad = 0, height = 0;
    for (unsigned round = 0; round < rounds && !bad; round++, changes++) {
        bool grow = m.n == 0 || (m.n < max && next_random() % (odds + 1) != 0);
        if (grow) {
            struct kprofile *p = &pool[0];
            for (unsigned i = 0; i < max; i++) { // a pool entry not in the set
                bool used = false;
                for (unsigned k = 0; k < m.n; k++)
                    used |= m.p[k] == &pool[i];
                if (!used) {
                    p = &pool[i];
                    break;
                }
            }
            random_range(p);
            set = add(set, p);
            bad += !set;
            m.p[m.n++] = p;
        } else {
            unsigned k = (unsigned)(next_random() % m.n);
            set = drop(set, m.p[k]);
            m.p[k] = m.p[--m.n];
        }
        height = MAX(height, set ? set->narrow.height : 0);
        bad += !same_profiles(set, &m) || (set && !agrees_everywhere(set, &m));
    }
    CHECK(!bad,
          "index: %u random adds and removes of up to %u profiles (height %u at most) agree "
          "with a brute-force model at every range boundary",
          changes, max, height);
    drop_all(set);
}

void test_profile_index(void)
{
    one_range();
    across_granules();
    top_of_address_space();
    overlapping();
    same_base();
    wide();
    crowded_granule();
    old_set_untouched();
    stop_without_memory();
    start_without_memory();
    many_profiles();
    sample_counts();
    against_model(MAX_PROFILES, 2000, 2);
    against_model(MODEL_MAX, 450, 5);
    CHECK(live_allocs == 0, "index: every set allocated was freed (%ld left)", live_allocs);
}
