// The persistent B+ tree of a profile set's ranges (see ke/profile_tree.h).
#include "pmc/ke/profile_tree.h"

#include "lib/panic.h"

_Static_assert(sizeof(struct profile_node) <= 512, "a node is one of kmalloc's 512-byte objects");

// Whether (base, p) comes before e's entry (or, for a branch, its first).
static bool key_before(uint64_t base, const struct kprofile *p, const struct profile_set_entry *e)
{
    return base < e->base || (base == e->base && (uintptr_t)p < (uintptr_t)e->p);
}

// How many of node's items come at or before (base, p): in a leaf, where
// the key goes (one past its entry, when it is there); in a branch, one past
// the child whose subtree holds it (0: the key comes before every item, and
// goes to the first child).
static unsigned items_up_to(const struct profile_node *node, uint64_t base,
                            const struct kprofile *p)
{
    unsigned i = 0;
    while (i < node->count && !key_before(base, p, &node->item[i]))
        i++;
    return i;
}

static unsigned child_for(const struct profile_node *node, uint64_t base, const struct kprofile *p)
{
    unsigned i = items_up_to(node, base, p);
    return i ? i - 1 : 0;
}

// The branch item standing for node: its first key and the largest end below.
static struct profile_set_entry branch_of(const struct profile_node *node)
{
    uint64_t end = 0;
    for (unsigned i = 0; i < node->count; i++)
        end = MAX(end, node->item[i].end);
    return (struct profile_set_entry){node->item[0].base, end, node->item[0].p, node};
}

static struct profile_node *take(struct profile_nodes *supply)
{
    struct profile_node *node = profile_nodes_pop(supply);
    if (!node)
        panic("profile tree: the supply ran out"); // the cost functions are wrong
    return node;
}

// Runs of items, concatenated, make the nodes of a level.
struct run {
    const struct profile_set_entry *item;
    unsigned n;
};

// New nodes at level holding the runs' items in order: one when they fit,
// else two holding half each (a full node and one more item: 8 and 8; a
// node short of PROFILE_TREE_MIN and its sibling: at least 8 each). out[]
// gets them; returns how many.
static unsigned build(struct profile_nodes *supply, unsigned level, const struct run *runs,
                      unsigned nruns, struct profile_node *out[2])
{
    unsigned total = 0, k = 0;
    for (unsigned r = 0; r < nruns; r++)
        total += runs[r].n;
    unsigned nout = total > PROFILE_TREE_ORDER ? 2 : 1, first = nout == 2 ? total / 2 : total;
    for (unsigned o = 0; o < nout; o++) {
        out[o] = take(supply);
        out[o]->count = 0;
        out[o]->level = (uint8_t)level;
    }
    for (unsigned r = 0; r < nruns; r++)
        for (unsigned i = 0; i < runs[r].n; i++, k++) {
            struct profile_node *o = out[k < first ? 0 : 1];
            o->item[o->count++] = runs[r].item[i];
        }
    return nout;
}

// --- adding -----------------------------------------------------------------------

struct profile_tree_cost profile_tree_add_cost(const struct profile_tree *t,
                                               const struct profile_set_entry *e)
{
    if (!t->root)
        return (struct profile_tree_cost){1, 0, 1};
    unsigned full = 0; // the full nodes at the bottom of the path: each one splits
    for (const struct profile_node *node = t->root;;) {
        full = node->count == PROFILE_TREE_ORDER ? full + 1 : 0;
        if (node->level == 0)
            break;
        node = node->item[child_for(node, e->base, e->p)].child;
    }
    unsigned grows = full == t->height; // the root splits too: a new root
    return (struct profile_tree_cost){t->height + full + grows, t->height, t->height + grows};
}

// node's subtree with e added, in one node or, when node split, two (out[]).
static unsigned add_below(const struct profile_node *node, const struct profile_set_entry *e,
                          struct profile_nodes *supply, struct profile_nodes *replaced,
                          struct profile_node *out[2])
{
    unsigned nout;
    if (node->level == 0) {
        unsigned at = items_up_to(node, e->base, e->p);
        struct run runs[3] = {{node->item, at}, {e, 1}, {node->item + at, node->count - at}};
        nout = build(supply, 0, runs, 3, out);
    } else {
        unsigned i = child_for(node, e->base, e->p);
        struct profile_node *below[2];
        unsigned n = add_below(node->item[i].child, e, supply, replaced, below);
        struct profile_set_entry branch[2] = {branch_of(below[0])};
        if (n == 2)
            branch[1] = branch_of(below[1]);
        struct run runs[3] = {
            {node->item, i}, {branch, n}, {node->item + i + 1, node->count - i - 1}};
        nout = build(supply, node->level, runs, 3, out);
    }
    profile_nodes_push(replaced, node);
    return nout;
}

struct profile_tree profile_tree_add(struct profile_tree t, const struct profile_set_entry *e,
                                     struct profile_nodes *supply, struct profile_nodes *replaced)
{
    struct profile_node *out[2];
    if (!t.root) {
        struct run run = {e, 1};
        build(supply, 0, &run, 1, out);
        return (struct profile_tree){out[0], 1};
    }
    if (add_below(t.root, e, supply, replaced, out) == 1)
        return (struct profile_tree){out[0], t.height};
    struct profile_set_entry branch[2] = {branch_of(out[0]), branch_of(out[1])};
    struct run run = {branch, 2}; // the root split: a new root over its halves
    build(supply, t.height, &run, 1, out);
    return (struct profile_tree){out[0], t.height + 1};
}

// --- removing ---------------------------------------------------------------------

// Item i of node stands for child, a new node short of PROFILE_TREE_MIN
// items: child and the sibling next to it become one node or two evened
// ones (branch[]), standing for items [*first, *first + 2) of node.
static unsigned even_out(const struct profile_node *node, unsigned i, struct profile_node *child,
                         struct profile_nodes *supply, struct profile_nodes *replaced,
                         struct profile_set_entry branch[2], unsigned *first)
{
    unsigned j = i + 1 < node->count ? i + 1 : i - 1; // a branch has two children at least
    const struct profile_node *sibling = node->item[j].child;
    struct run mine = {child->item, child->count}, theirs = {sibling->item, sibling->count};
    struct run runs[2] = {j > i ? mine : theirs, j > i ? theirs : mine};
    struct profile_node *out[2];
    unsigned n = build(supply, child->level, runs, 2, out);
    profile_nodes_push(supply, child); // copied: back to the supply
    profile_nodes_push(replaced, sibling);
    *first = MIN(i, j);
    for (unsigned k = 0; k < n; k++)
        branch[k] = branch_of(out[k]);
    return n;
}

// node's subtree without the entry of (base, p): a new node, which may hold
// fewer than PROFILE_TREE_MIN items (its parent evens it out).
static struct profile_node *remove_below(const struct profile_node *node, uint64_t base,
                                         const struct kprofile *p, struct profile_nodes *supply,
                                         struct profile_nodes *replaced)
{
    struct profile_node *out[2];
    if (node->level == 0) {
        unsigned at = items_up_to(node, base, p) - 1; // the entry itself
        if (at >= node->count || node->item[at].p != p)
            panic("profile tree: removing an entry it does not hold");
        struct run runs[2] = {{node->item, at}, {node->item + at + 1, node->count - at - 1}};
        build(supply, 0, runs, 2, out);
    } else {
        unsigned i = child_for(node, base, p), first = i, n = 1, drop = 1;
        struct profile_node *child = remove_below(node->item[i].child, base, p, supply, replaced);
        struct profile_set_entry branch[2];
        if (child->count >= PROFILE_TREE_MIN) {
            branch[0] = branch_of(child);
        } else {
            n = even_out(node, i, child, supply, replaced, branch, &first);
            drop = 2; // child and its sibling
        }
        struct run runs[3] = {{node->item, first},
                              {branch, n},
                              {node->item + first + drop, node->count - first - drop}};
        build(supply, node->level, runs, 3, out);
    }
    profile_nodes_push(replaced, node);
    return out[0];
}

struct profile_tree profile_tree_remove(struct profile_tree t, uint64_t base,
                                        const struct kprofile *p, struct profile_nodes *supply,
                                        struct profile_nodes *replaced)
{
    struct profile_node *root = remove_below(t.root, base, p, supply, replaced);
    if (root->count == 0 || (root->level > 0 && root->count == 1)) {
        // The last entry went, or the root has one child left: the tree shrinks.
        const struct profile_node *only = root->count ? root->item[0].child : NULL;
        profile_nodes_push(supply, root);
        return (struct profile_tree){only, only ? t.height - 1 : 0};
    }
    return (struct profile_tree){root, t.height};
}

// --- reading ----------------------------------------------------------------------

void profile_walk_begin(struct profile_walk *w, const struct profile_node *root, uint64_t ip)
{
    w->ip = ip;
    w->depth = 0;
    if (root)
        w->at[w->depth++] = (struct profile_walk_frame){root, 0};
}

// Items are in base order, so once one begins above ip the rest of its node
// does too; an item ending at or below ip holds nothing covering it. What
// is left covers ip (an entry) or may (a subtree: descended into). An item
// passed over is a boundary: the largest of an item below ip is its end,
// the smallest of one above is its base.
const struct profile_set_entry *profile_walk_next(struct profile_walk *w, uint64_t *bounds)
{
    while (w->depth > 0) {
        struct profile_walk_frame *f = &w->at[w->depth - 1];
        if (f->next == f->node->count) {
            w->depth--;
            continue;
        }
        const struct profile_set_entry *e = &f->node->item[f->next++];
        if (e->base > w->ip) {
            f->next = f->node->count;
            if (bounds)
                bounds[1] = MIN(bounds[1], e->base - 1);
        } else if (e->end <= w->ip) {
            if (bounds)
                bounds[0] = MAX(bounds[0], e->end);
        } else if (e->child) {
            w->at[w->depth++] = (struct profile_walk_frame){e->child, 0};
        } else {
            if (bounds) {
                bounds[0] = MAX(bounds[0], e->base);
                bounds[1] = MIN(bounds[1], e->end - 1);
            }
            return e;
        }
    }
    return NULL;
}
