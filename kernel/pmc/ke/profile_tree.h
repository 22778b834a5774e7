// The tree a profile set keeps its ranges in (ke/profile_index.h): a
// persistent B+ tree keyed by range base, each branch knowing the largest
// end below it, so that the ranges covering an address are found by
// descending only where one may be.
//
// Persistent: a tree is never changed once a reader may see it. Adding or
// removing an entry makes new nodes for the path from the root to the
// entry's leaf (and for the one sibling per level a split or a merge
// touches) and shares every other node with the old tree, so both answer
// at once: the sample path goes on reading the old tree, without a lock,
// while the new one is published (ke/profile.c), and the old tree's nodes
// that the new one does not share are handed back when no CPU can read
// them any more. A change costs O(PROFILE_TREE_ORDER x height) whatever the
// number of entries: that is why a start does not grow with the profiles
// started before it.
//
// Why a B+ tree and not a binary one: a change copies a handful of nodes
// (the height is 5 at 8,192 entries, 7 at NT's limit of 8,192 x 64) rather
// than twenty, a reader's walk needs a stack of PROFILE_TREE_LEVELS frames
// only (it runs in interrupts, NMIs included, with no allocation), and a
// set of one to fifteen profiles, the usual case, is one leaf: a sorted
// array, scanned as before.
//
// Nothing here allocates. A change takes its new nodes from a supply the
// caller filled beforehand (profile_tree_add_cost, profile_tree_remove_need)
// and can therefore not fail half done; the old tree's nodes it no longer
// shares go to a list the caller frees, or keeps, after the wait.
#pragma once
#include "lib/types.h"

struct kprofile;
struct profile_node;

#define PROFILE_TREE_ORDER  15 // items in a node at most (a node is 496 bytes: kmalloc's 512)
#define PROFILE_TREE_MIN    7  // ... and at least, but in the root
#define PROFILE_TREE_LEVELS 8  // the height at most: 2 x 7^7 > 8,192 x 64 entries

// An item of a node. In a leaf (level 0), a started profile: its range
// [base, end) and itself. In a branch, a subtree: the smallest base and the
// largest end of the ranges below it, and the profile of its first entry.
// Entries are in the order of (base, the profile's address): profiles may
// share a base, and a profile is in one tree once at most.
struct profile_set_entry {
    uint64_t base, end;
    struct kprofile *p;
    const struct profile_node *child; // NULL in a leaf
};

struct profile_node {
    struct profile_node *link; // the writer's lists (struct profile_nodes); no reader looks
    uint16_t count;
    uint8_t level; // 0: a leaf
    struct profile_set_entry item[PROFILE_TREE_ORDER];
};

struct profile_tree {
    const struct profile_node *root; // NULL: empty
    unsigned height;                 // levels (0: empty)
};

// A list of nodes the writer holds: spare ones to take, or replaced ones to
// hand back after the wait.
struct profile_nodes {
    struct profile_node *head;
    unsigned n;
};

static inline void profile_nodes_push(struct profile_nodes *l, const struct profile_node *node)
{
    struct profile_node *w = (struct profile_node *)node; // only link is written: no reader looks
    w->link = l->head;
    l->head = w;
    l->n++;
}

static inline struct profile_node *profile_nodes_pop(struct profile_nodes *l)
{
    struct profile_node *node = l->head;
    if (node) {
        l->head = node->link;
        l->n--;
    }
    return node;
}

// What adding e to t takes: the nodes it makes (its path, copied, one more
// for each node that splits, and a new root when the root splits), the
// nodes of t it replaces (its path), and the height of the tree it makes.
struct profile_tree_cost {
    unsigned make, replace, height;
};
struct profile_tree_cost profile_tree_add_cost(const struct profile_tree *t,
                                               const struct profile_set_entry *e);

// The most nodes a removal from a tree of this height takes from its supply
// at once: its path, and a sibling per level below the root that it merges
// or evens with (taken before the node it replaces goes back).
static inline unsigned profile_tree_remove_need(unsigned height)
{
    return height ? 2 * height - 1 : 0;
}

// t with e added (e->child NULL; its entry must not be in t), or without
// the entry of (base, p) (which must be in t). t is not changed: the result
// shares every node off the changed path with it. New nodes come from
// *supply, which must hold enough; t's nodes the result does not share go
// to *replaced, to be handed back once no reader can be in t.
struct profile_tree profile_tree_add(struct profile_tree t, const struct profile_set_entry *e,
                                     struct profile_nodes *supply, struct profile_nodes *replaced);
struct profile_tree profile_tree_remove(struct profile_tree t, uint64_t base,
                                        const struct kprofile *p, struct profile_nodes *supply,
                                        struct profile_nodes *replaced);

// A reader's walk over the entries covering ip, for the sample path: no
// lock, no allocation, O(height) per entry found plus one path that finds
// none (only one subtree per level can reach ip without covering it).
struct profile_walk {
    uint64_t ip;
    unsigned depth;
    struct profile_walk_frame {
        const struct profile_node *node;
        unsigned next; // the next item to look at
    } at[PROFILE_TREE_LEVELS];
};
void profile_walk_begin(struct profile_walk *w, const struct profile_node *root, uint64_t ip);
// The next entry covering ip, NULL when no more do. With bounds, each
// range boundary the walk passes narrows [bounds[0], bounds[1]] around ip
// (the caller starts it wide): when the walk has ended, no range begins or
// ends strictly inside it, and a boundary (or the caller's edge) is at each
// end.
const struct profile_set_entry *profile_walk_next(struct profile_walk *w, uint64_t *bounds);
