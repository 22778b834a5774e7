// The address index of started profiles: which profiles a sampled address
// may land in (the "candidate sets" of KeProfileInterruptWithSource).
//
// A profile set is an immutable array of the started profiles of one scope
// (the system, or one process) and one source, sorted by range base; it is
// replaced as a whole on start and stop and read without locks by the sample
// path. Entries e[0..n) are sorted by base; max_end is the largest end among
// entries 0..i, so a backwards scan can stop as soon as no earlier range can
// reach the sampled address. A hash table keyed by 2 MiB granule gives, for
// each granule some range covers, the last entry covering it: a lookup starts
// there, so ranges elsewhere in the address space cost nothing however many
// there are. Ranges covering more than PROFILE_WIDE_GRANULES granules (a whole
// address space, say) sit in e[n..n+nwide) and are checked one by one: there
// are few of those.
#pragma once
#include "lib/types.h"

struct kprofile;

#define PROFILE_GRANULE_SHIFT 21
#define PROFILE_WIDE_GRANULES 32

struct profile_set {
    unsigned n, nwide;
    unsigned mask; // the granule table has mask + 1 slots
    // Per CPU, the samples that found this set (process scope only: each
    // CPU writes its own). When the set is replaced, its profiles take them
    // as delivered (ke/profile.c): a set's life is exactly the time its
    // profiles were started together.
    uint64_t *samples;
    struct profile_granule {
        uint64_t key;  // granule number + 1; 0: empty slot
        uint32_t last; // the last entry of e[0..n) covering the granule
    } * table;
    struct profile_set_entry {
        uint64_t base, end, max_end;
        struct kprofile *p;
    } e[];
};

// A copy of old with add inserted or remove left out (either may be NULL);
// entries whose profile is skip (a stand-in for a stopped profile) are
// dropped. NULL with *ok when the result is empty; NULL with !*ok when out of
// memory. Called under the profile mutex.
struct profile_set *profile_set_change(const struct profile_set *old, struct kprofile *add,
                                       struct kprofile *remove, const struct kprofile *skip,
                                       bool *ok);

static inline unsigned profile_granule_hash(uint64_t key, unsigned mask)
{
    return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 40) & mask;
}

// What a lookup at ip found: the addresses [lo, hi] around ip (within its
// 2 MiB granule) over which the answer stays the same, and the answer: the
// narrow entry covering ip (NULL: none) when it is the only one. several:
// more than one narrow entry covers ip. Samples come in runs at nearby
// addresses, so one answer serves most of them with two comparisons (see
// ke/sample.c's plans). The wide entries are not looked at.
struct profile_answer {
    uint64_t lo, hi;
    const struct profile_set_entry *entry;
    bool several;
};

// O(the narrow entries meeting ip's granule).
void profile_set_lookup(const struct profile_set *set, uint64_t ip, struct profile_answer *out);

// Every entry covering ip, wide and narrow, one at a time:
//     struct profile_cursor c = profile_cursor_at(set, ip);
//     for (const struct profile_set_entry *e; (e = profile_set_next(set, &c));)
struct profile_cursor {
    uint64_t ip, lo; // lo: ip's granule's first address
    unsigned wide;   // the next wide entry to look at
    unsigned narrow; // one past the next narrow entry to look at; 0: none left
};
struct profile_cursor profile_cursor_at(const struct profile_set *set, uint64_t ip);
const struct profile_set_entry *profile_set_next(const struct profile_set *set,
                                                 struct profile_cursor *c);
