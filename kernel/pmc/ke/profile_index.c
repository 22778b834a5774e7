// The address index of started profiles (see ke/profile_index.h).
#include "pmc/ke/profile_index.h"

#include "lib/param.h"

#include "arch/x86/percpu.h"

#include "core/heap.h"

#include "pmc/ke/profile.h"

static uint64_t granules(const struct kprofile *p) // how many granules the range covers
{
    if (p->range_size == 0)
        return 0;
    uint64_t end = p->range_base + p->range_size;
    return ((end - 1) >> PROFILE_GRANULE_SHIFT) - (p->range_base >> PROFILE_GRANULE_SHIFT) + 1;
}

static bool is_wide(const struct kprofile *p) // too many granules for the hash table
{
    return granules(p) > PROFILE_WIDE_GRANULES;
}

// What a set of old's entries and add, less remove and skip, holds: *n narrow
// entries covering *cover granules together, and *nwide wide ones.
static void profile_set_count(const struct profile_set *old, unsigned total, struct kprofile *add,
                              const struct kprofile *remove, const struct kprofile *skip,
                              unsigned *n, unsigned *nwide, uint64_t *cover)
{
    *n = *nwide = 0;
    *cover = 0;
    for (unsigned i = 0; i <= total; i++) {
        struct kprofile *p = i < total ? old->e[i].p : add;
        if (!p || p == remove || p == skip)
            continue;
        if (is_wide(p)) {
            (*nwide)++;
        } else {
            (*n)++;
            *cover += granules(p);
        }
    }
}

// A zeroed set for n narrow and nwide wide entries, its granule table (at
// least twice cover slots, a power of two) and per-CPU sample counts laid
// out after the entries in the same allocation; NULL when memory is short.
static struct profile_set *profile_set_alloc(unsigned n, unsigned nwide, uint64_t cover)
{
    unsigned slots = 8;
    while (slots < 2 * cover)
        slots *= 2;
    size_t entries = sizeof(struct profile_set) + (n + nwide) * sizeof(struct profile_set_entry);
    size_t table = slots * sizeof(struct profile_granule);
    struct profile_set *set = kzalloc(entries + table + ncpus * sizeof(uint64_t));
    if (!set)
        return NULL;
    set->n = n;
    set->nwide = nwide;
    set->mask = slots - 1;
    set->table = (struct profile_granule *)((uint8_t *)set + entries);
    set->samples = (uint64_t *)((uint8_t *)set + entries + table);
    return set;
}

// Fills set->e[].p: the narrow entries first, sorted by range base (old's
// in their order, add at its place), then the wide ones; remove and skip
// are left out.
static void profile_set_place(struct profile_set *set, const struct profile_set *old,
                              unsigned total, struct kprofile *add, const struct kprofile *remove,
                              const struct kprofile *skip)
{
    unsigned k = 0, w = set->n;
    for (unsigned i = 0; i < total; i++) {
        struct kprofile *p = old->e[i].p;
        if (p == remove || p == skip)
            continue;
        if (is_wide(p)) {
            set->e[w++].p = p;
            continue;
        }
        if (add && !is_wide(add) && add->range_base < p->range_base) {
            set->e[k++].p = add;
            add = NULL;
        }
        set->e[k++].p = p;
    }
    if (add)
        set->e[is_wide(add) ? w : k].p = add;
}

// Each entry's [base, end) from its profile, and for the narrow ones the
// largest end of the entries up to and including it (max_end).
static void profile_set_bounds(struct profile_set *set)
{
    uint64_t max_end = 0;
    for (unsigned i = 0; i < set->n + set->nwide; i++) {
        struct kprofile *p = set->e[i].p;
        set->e[i].base = p->range_base;
        set->e[i].end = p->range_base + p->range_size;
        if (i < set->n) {
            max_end = MAX(max_end, set->e[i].end);
            set->e[i].max_end = max_end;
        }
    }
}

// The granule table: each granule a narrow entry covers maps to the last
// (highest-numbered) narrow entry covering it; filled in ascending order.
static void profile_set_hash(struct profile_set *set)
{
    for (unsigned i = 0; i < set->n; i++) {
        uint64_t first = set->e[i].base >> PROFILE_GRANULE_SHIFT, count = granules(set->e[i].p);
        for (uint64_t g = first; g < first + count; g++) {
            unsigned h = profile_granule_hash(g + 1, set->mask);
            while (set->table[h].key && set->table[h].key != g + 1)
                h = (h + 1) & set->mask;
            set->table[h].key = g + 1;
            set->table[h].last = i;
        }
    }
}

struct profile_set *profile_set_change(const struct profile_set *old, struct kprofile *add,
                                       struct kprofile *remove, const struct kprofile *skip,
                                       bool *ok)
{
    unsigned n, nwide, total = old ? old->n + old->nwide : 0;
    uint64_t cover;
    *ok = true;
    profile_set_count(old, total, add, remove, skip, &n, &nwide, &cover);
    if (n + nwide == 0)
        return NULL;
    struct profile_set *set = profile_set_alloc(n, nwide, cover);
    if (!set) {
        *ok = false;
        return NULL;
    }
    profile_set_place(set, old, total, add, remove, skip);
    profile_set_bounds(set);
    profile_set_hash(set);
    return set;
}

#define GRANULE_BYTES (1ull << PROFILE_GRANULE_SHIFT)

// One past the last narrow entry meeting key's granule (the entries meeting
// it are at or before it); 0 when none does.
static unsigned granule_end(const struct profile_set *set, uint64_t key)
{
    for (unsigned h = profile_granule_hash(key, set->mask); set->table && set->table[h].key;
         h = (h + 1) & set->mask)
        if (set->table[h].key == key)
            return set->table[h].last + 1;
    return 0;
}

// Every narrow entry meeting the granule from lo is at or before the last
// one covering it, and after those whose ranges all end below it (max_end):
// a scan down from granule_end stops at the first entry with max_end <= lo.
void profile_set_lookup(const struct profile_set *set, uint64_t ip, struct profile_answer *out)
{
    uint64_t lo = ip & ~(GRANULE_BYTES - 1);
    uint64_t hi = lo + (GRANULE_BYTES - 1); // inclusive: no overflow at the top
    uint64_t granule = lo;
    const struct profile_set_entry *match = NULL;
    unsigned matches = 0;
    for (unsigned i = granule_end(set, (ip >> PROFILE_GRANULE_SHIFT) + 1);
         i-- > 0 && set->e[i].max_end > granule;) {
        const struct profile_set_entry *e = &set->e[i];
        if (e->base <= ip && ip < e->end) {
            match = e;
            matches++;
            lo = MAX(lo, e->base);
            hi = MIN(hi, e->end - 1);
        } else if (e->end <= ip) {
            lo = MAX(lo, e->end);
        } else {
            hi = MIN(hi, e->base - 1);
        }
    }
    out->lo = lo;
    out->hi = hi;
    out->entry = matches == 1 ? match : NULL;
    out->several = matches > 1;
}

struct profile_cursor profile_cursor_at(const struct profile_set *set, uint64_t ip)
{
    return (struct profile_cursor){ip, ip & ~(GRANULE_BYTES - 1), set->n,
                                   granule_end(set, (ip >> PROFILE_GRANULE_SHIFT) + 1)};
}

const struct profile_set_entry *profile_set_next(const struct profile_set *set,
                                                 struct profile_cursor *c)
{
    while (c->wide < set->n + set->nwide) {
        const struct profile_set_entry *e = &set->e[c->wide++];
        if (e->base <= c->ip && c->ip < e->end)
            return e;
    }
    while (c->narrow > 0 && set->e[c->narrow - 1].max_end > c->lo) {
        const struct profile_set_entry *e = &set->e[--c->narrow];
        if (e->base <= c->ip && c->ip < e->end)
            return e;
    }
    c->narrow = 0;
    return NULL;
}
