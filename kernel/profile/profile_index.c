// The address index of started profiles (see profile_index.h).
#include "profile/profile_index.h"
#include "core/heap.h"
#include "lib/param.h"
#include "arch/x86/percpu.h"
#include "profile/ke_profile.h"

static uint64_t granules(const struct kprofile *p) // how many granules the range covers
{
    if (p->range_size == 0)
        return 0;
    uint64_t end = p->range_base + p->range_size;
    return ((end - 1) >> PROFILE_GRANULE_SHIFT) - (p->range_base >> PROFILE_GRANULE_SHIFT) + 1;
}

struct profile_set *profile_set_change(const struct profile_set *old, struct kprofile *add,
                                       struct kprofile *remove, const struct kprofile *skip,
                                       bool *ok)
{
    unsigned n = 0, nwide = 0, total = old ? old->n + old->nwide : 0;
    uint64_t cover = 0;
    *ok = true;
    for (unsigned i = 0; i <= total; i++) { // count what the new set holds
        struct kprofile *p = i < total ? old->e[i].p : add;
        if (!p || p == remove || p == skip)
            continue;
        if (granules(p) > PROFILE_WIDE_GRANULES) {
            nwide++;
        } else {
            n++;
            cover += granules(p);
        }
    }
    if (n + nwide == 0)
        return NULL;
    unsigned slots = 8;
    while (slots < 2 * cover)
        slots *= 2;
    size_t entries = sizeof(struct profile_set) + (n + nwide) * sizeof(struct profile_set_entry);
    size_t table = slots * sizeof(struct profile_granule);
    struct profile_set *set = kzalloc(entries + table + ncpus * sizeof(uint64_t));
    if (!set) {
        *ok = false;
        return NULL;
    }
    set->n = n;
    set->nwide = nwide;
    set->mask = slots - 1;
    set->table = (struct profile_granule *)((uint8_t *)set + entries);
    set->samples = (uint64_t *)((uint8_t *)set + entries + table);
    // The narrow entries stay sorted: old ones in order, add at its place.
    unsigned k = 0, w = n;
    for (unsigned i = 0; i < total; i++) {
        struct kprofile *p = old->e[i].p;
        if (p == remove || p == skip)
            continue;
        if (granules(p) > PROFILE_WIDE_GRANULES) {
            set->e[w++].p = p;
            continue;
        }
        if (add && granules(add) <= PROFILE_WIDE_GRANULES && add->range_base < p->range_base) {
            set->e[k++].p = add;
            add = NULL;
        }
        set->e[k++].p = p;
    }
    if (add)
        set->e[granules(add) > PROFILE_WIDE_GRANULES ? w : k].p = add;
    uint64_t max_end = 0;
    for (unsigned i = 0; i < n + nwide; i++) {
        struct kprofile *p = set->e[i].p;
        set->e[i].base = p->range_base;
        set->e[i].end = p->range_base + p->range_size;
        if (i < n) {
            max_end = MAX(max_end, set->e[i].end);
            set->e[i].max_end = max_end;
        }
    }
    for (unsigned i = 0; i < n; i++) { // ascending: each granule ends with its last entry
        uint64_t first = set->e[i].base >> PROFILE_GRANULE_SHIFT, count = granules(set->e[i].p);
        for (uint64_t g = first; g < first + count; g++) {
            unsigned h = profile_granule_hash(g + 1, set->mask);
            while (set->table[h].key && set->table[h].key != g + 1)
                h = (h + 1) & set->mask;
            set->table[h].key = g + 1;
            set->table[h].last = i;
        }
    }
    return set;
}

void profile_set_lookup(const struct profile_set *set, uint64_t ip, profile_entry_fn fn,
                        uint64_t arg, struct profile_answer *out)
{
    uint64_t key = (ip >> PROFILE_GRANULE_SHIFT) + 1;
    uint64_t lo = ip & ~((1ull << PROFILE_GRANULE_SHIFT) - 1);
    uint64_t hi = lo + ((1ull << PROFILE_GRANULE_SHIFT) - 1); // inclusive: no overflow at the top
    const struct profile_set_entry *match = NULL;
    unsigned matches = 0;
    for (unsigned h = profile_granule_hash(key, set->mask); set->table && set->table[h].key;
         h = (h + 1) & set->mask) {
        if (set->table[h].key != key)
            continue;
        // Every entry meeting the granule is at or before the last one covering
        // it, and after those whose ranges all end below it (max_end).
        for (unsigned i = set->table[h].last + 1; i-- > 0 && set->e[i].max_end > lo;) {
            const struct profile_set_entry *e = &set->e[i];
            if (e->base <= ip && ip < e->end) {
                fn(e, ip, arg);
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
        break;
    }
    out->lo = lo;
    out->hi = hi;
    out->entry = match;
    out->reusable = matches <= 1 && !set->nwide; // else no single answer to remember
}
