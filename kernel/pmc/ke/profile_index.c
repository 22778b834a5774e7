// The address index of started profiles (see ke/profile_index.h).
#include "pmc/ke/profile_index.h"

#include "lib/panic.h"
#include "lib/param.h"
#include "lib/string.h"

#include "arch/x86/percpu.h"

#include "core/heap.h"

#include "pmc/ke/profile_object.h"

static bool is_wide(const struct kprofile *p) // too many granules for a plan to keep an answer
{
    if (p->range_size == 0)
        return false;
    uint64_t end = p->range_base + p->range_size;
    uint64_t granules =
        ((end - 1) >> PROFILE_GRANULE_SHIFT) - (p->range_base >> PROFILE_GRANULE_SHIFT) + 1;
    return granules > PROFILE_WIDE_GRANULES;
}

// The spare nodes a scope keeps for a set of n entries and trees of these
// heights: a removal from the taller tree, or none for a set of one (whose
// stop leaves no set: profile_set_remove).
static unsigned reserve_need(unsigned n, unsigned height, unsigned other_height)
{
    return n > 1 ? profile_tree_remove_need(MAX(height, other_height)) : 0;
}

// --- memory -------------------------------------------------------------------------

static size_t set_bytes(void)
{
    return sizeof(struct profile_set) + 2 * ncpus * sizeof(uint64_t);
}

// set's fields from old's (or empty), its sample counts from zero.
static void set_init(struct profile_set *set, const struct profile_set *old)
{
    *set = old ? *old : (struct profile_set){0};
    set->samples = set->counts;
    set->retired = set->counts + ncpus;
    memset(set->samples, 0, 2 * ncpus * sizeof(uint64_t));
    set->reserve = (struct profile_nodes){0};
    set->spare = NULL;
}

// n more nodes on *l; false (and *l as it was) when memory is short.
static bool nodes_alloc(struct profile_nodes *l, unsigned n)
{
    unsigned had = l->n;
    while (l->n < had + n) {
        struct profile_node *node = kmalloc(sizeof *node);
        if (!node) {
            while (l->n > had)
                kfree(profile_nodes_pop(l));
            return false;
        }
        profile_nodes_push(l, node);
    }
    return true;
}

// Frees nodes off *l until it holds keep.
static void nodes_trim(struct profile_nodes *l, unsigned keep)
{
    while (l->n > keep)
        kfree(profile_nodes_pop(l));
}

// --- changes ------------------------------------------------------------------------

// The tree of set a wide or a narrow entry belongs in.
static struct profile_tree *tree_of(struct profile_set *set, bool wide)
{
    return wide ? &set->wide : &set->narrow;
}

// The memory a start takes, all of it before anything changes: the new set
// (the spare, or a new one) and nodes. The addition takes c->make nodes from
// the reserve, and the retire gives back the c->replace it replaced, after
// which the reserve must again hold what a removal from the taller tree
// needs: so it is topped up to make + need - replace first (at least make,
// since need >= replace: a removal's need is about twice the height).
static bool start_memory(struct profile_set *old, const struct profile_tree_cost *c,
                         unsigned other_height, struct profile_change *ch)
{
    unsigned n = old ? old->n + old->nwide + 1 : 1;
    ch->spare = old ? old->spare : NULL;
    ch->reserve = old ? old->reserve : (struct profile_nodes){0};
    unsigned want = c->make + reserve_need(n, c->height, other_height);
    unsigned have = ch->reserve.n + c->replace;
    struct profile_set *set = ch->spare;
    if (!set && !(set = kmalloc(set_bytes())))
        return false;
    if (!nodes_alloc(&ch->reserve, want > have ? want - have : 0)) {
        if (set != ch->spare)
            kfree(set);
        return false;
    }
    if (set == ch->spare)
        ch->spare = NULL;
    ch->set = set;
    return true;
}

NTSTATUS profile_set_add(struct profile_set *old, struct kprofile *p, struct profile_change *ch)
{
    struct profile_set_entry e = {p->range_base, p->range_base + p->range_size, p, NULL};
    bool wide = is_wide(p);
    static const struct profile_tree empty;
    const struct profile_tree *t = old ? (wide ? &old->wide : &old->narrow) : &empty;
    unsigned other = old ? (wide ? old->narrow.height : old->wide.height) : 0;
    struct profile_tree_cost cost = profile_tree_add_cost(t, &e);
    struct profile_change made = {.old = old};
    if (cost.height > PROFILE_TREE_LEVELS || !start_memory(old, &cost, other, &made))
        return STATUS_INSUFFICIENT_RESOURCES;
    // Nothing can fail from here.
    struct profile_set *set = made.set;
    set_init(set, old);
    *tree_of(set, wide) = profile_tree_add(*t, &e, &made.reserve, &made.replaced);
    if (wide)
        set->nwide++;
    else
        set->n++;
    *ch = made;
    return STATUS_SUCCESS;
}

void profile_set_remove(struct profile_set *old, struct kprofile *p, struct profile_change *ch)
{
    bool wide = is_wide(p);
    *ch = (struct profile_change){.old = old, .reserve = old->reserve, .spare = old->spare};
    if (old->n + old->nwide == 1) { // it was the last: no set, and its one leaf goes
        profile_nodes_push(&ch->replaced, wide ? old->wide.root : old->narrow.root);
        return;
    }
    struct profile_tree t = profile_tree_remove(wide ? old->wide : old->narrow, p->range_base, p,
                                                &ch->reserve, &ch->replaced);
    if (!ch->spare) // a scope with two profiles has one (profile_change_retire)
        panic("profile index: no spare set for a stop");
    struct profile_set *set = ch->spare;
    ch->spare = NULL;
    set_init(set, old);
    *tree_of(set, wide) = t;
    if (wide)
        set->nwide--;
    else
        set->n--;
    ch->set = set;
}

void profile_change_retire(struct profile_change *ch)
{
    struct profile_set *old = ch->old, *set = ch->set;
    if (set)
        for (unsigned cpu = 0; cpu < ncpus; cpu++)
            set->retired[cpu] = old ? old->retired[cpu] + old->samples[cpu] : 0;
    while (ch->replaced.n) // the nodes old alone had
        profile_nodes_push(&ch->reserve, profile_nodes_pop(&ch->replaced));
    nodes_trim(&ch->reserve,
               set ? reserve_need(set->n + set->nwide, set->narrow.height, set->wide.height) : 0);
    if (set) {
        set->reserve = ch->reserve;
        set->spare = ch->spare ? ch->spare : old;
    }
    if (!set || (ch->spare && old)) // a spare set more than the scope keeps
        kfree(old);
    if (!set)
        kfree(ch->spare);
    ch->old = NULL; // freed, or the spare
    ch->spare = NULL;
    ch->reserve = ch->replaced = (struct profile_nodes){0};
}

// --- lookups ------------------------------------------------------------------------

#define GRANULE_BYTES (1ull << PROFILE_GRANULE_SHIFT)

void profile_set_lookup(const struct profile_set *set, uint64_t ip, struct profile_answer *out)
{
    uint64_t bounds[2] = {ip & ~(GRANULE_BYTES - 1),
                          (ip & ~(GRANULE_BYTES - 1)) + GRANULE_BYTES - 1};
    const struct profile_set_entry *e, *match = NULL;
    unsigned matches = 0;
    struct profile_walk w;
    profile_walk_begin(&w, set->narrow.root, ip);
    while ((e = profile_walk_next(&w, bounds))) {
        match = e;
        matches++;
    }
    out->lo = bounds[0];
    out->hi = bounds[1];
    out->entry = matches == 1 ? match : NULL;
    out->several = matches > 1;
}

void profile_cursor_at(struct profile_cursor *c, const struct profile_set *set, uint64_t ip)
{
    profile_walk_begin(&c->walk, set->wide.root, ip);
    c->narrow = false;
}

const struct profile_set_entry *profile_set_next(const struct profile_set *set,
                                                 struct profile_cursor *c)
{
    const struct profile_set_entry *e = profile_walk_next(&c->walk, NULL);
    if (!e && !c->narrow) {
        c->narrow = true;
        profile_walk_begin(&c->walk, set->narrow.root, c->walk.ip);
        e = profile_walk_next(&c->walk, NULL);
    }
    return e;
}
