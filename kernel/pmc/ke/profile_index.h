// The address index of started profiles: which profiles a sampled address
// may land in (the "candidate sets" of KeProfileInterruptWithSource).
//
// A profile set holds the started profiles of one scope (the system, or one
// process) and one source, in two persistent B+ trees keyed by range base
// (ke/profile_tree.h): the narrow ranges, and the wide ones (covering more
// than PROFILE_WIDE_GRANULES 2 MiB granules, a whole address space say),
// which a lookup leaves to the caller. A set is immutable once published:
// a start or a stop makes a new set that shares all but one path of each
// tree with the old, publishes it (ke/sample.h's sample_publish) and, once
// no CPU can read the old set (docs/grace-periods.md), retires the old:
// O(height) nodes copied and handed back, whatever the number of profiles.
//
// Memory. A stop cannot fail, so a scope keeps, with its set, what a removal
// takes: once it has two profiles, a reserve of spare nodes
// (profile_tree_remove_need of its taller tree) and a spare set (the stop
// of its only profile takes nothing: no set is left). A start allocates
// before it changes anything (so a failure leaves everything as it was) and
// tops the reserve up; a stop takes from the reserve and the spare, and the
// old set, retired, gives at least as much back: the nodes the new set does
// not share and its own memory.
#pragma once
#include "lib/abi/status.h"
#include "lib/types.h"

#include "pmc/ke/profile_tree.h"

struct kprofile;

#define PROFILE_GRANULE_SHIFT 21
#define PROFILE_WIDE_GRANULES 32

struct profile_set {
    // What the sample path reads.
    struct profile_tree narrow, wide;
    unsigned n, nwide; // the entries of each tree
    // Per CPU, the samples that found this set (process scope only: each
    // CPU writes its own; a system scope counts in its profile_slot).
    uint64_t *samples;
    // The writer's, under the scope's mutex; no sample reads them.
    uint64_t *retired;            // per CPU: the samples of the scope's sets before this one
    struct profile_nodes reserve; // spare nodes: a removal from either tree
    struct profile_set *spare;    // a set's memory for the next change
    uint64_t counts[];            // samples[], then retired[]: ncpus each
};

// One change of a scope's set, from its making to the retiring of the old.
struct profile_change {
    struct profile_set *old, *set; // the scope's set before and after (NULL: none)
    struct profile_nodes reserve;  // the scope's spare nodes while the change is under way
    struct profile_nodes replaced; // old's nodes that set does not share
    struct profile_set *spare;     // a spare set left over, or NULL
};

// A start: ch->set is old with p added, made and not yet published (nothing
// of old changes). STATUS_INSUFFICIENT_RESOURCES when memory is short: then
// nothing changed and ch holds nothing. Under the scope's mutex.
NTSTATUS profile_set_add(struct profile_set *old, struct kprofile *p, struct profile_change *ch);
// A stop: ch->set is old without p (NULL when p was its last), made from
// the memory old keeps for it: this cannot fail. Under the scope's mutex.
void profile_set_remove(struct profile_set *old, struct kprofile *p, struct profile_change *ch);
// Once ch->set is published and no CPU can still read ch->old: old's
// samples join ch->set's retired counts, its nodes ch->set does not share
// refill the reserve (the rest are freed), and old becomes the spare or is
// freed (ch->old becomes NULL; ch->set stays). Under the scope's mutex,
// before its next change.
void profile_change_retire(struct profile_change *ch);

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

// O(height x (1 + the narrow entries covering ip)).
void profile_set_lookup(const struct profile_set *set, uint64_t ip, struct profile_answer *out);

// Every entry covering ip, wide and narrow, one at a time:
//     struct profile_cursor c;
//     profile_cursor_at(&c, set, ip);
//     for (const struct profile_set_entry *e; (e = profile_set_next(set, &c));)
struct profile_cursor {
    struct profile_walk walk;
    bool narrow; // walking the narrow tree (the wide one comes first)
};
void profile_cursor_at(struct profile_cursor *c, const struct profile_set *set, uint64_t ip);
const struct profile_set_entry *profile_set_next(const struct profile_set *set,
                                                 struct profile_cursor *c);
