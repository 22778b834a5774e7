// The pin table: a small hash of pinned frames, under one lock. Pinning happens
// at profile start and stop, never on a hot path. A pin's count is taken and
// dropped only under pin_lock, and the last unpin unlinks the entry in the
// same critical section, so a pin_page that finds an entry never finds one
// whose count has reached zero (object.h's "unlink first", for frames).
#include "core/pin.h"

#include "core/heap.h"
#include "core/pmm.h"
#include "core/spinlock.h"

// Chains stay short for the pins a process may hold (memtests pins 98,304
// pages: 24 a chain), so a pin's walk under pin_lock is short too.
#define PIN_BUCKETS 4096

struct pin {
    uint64_t pa;
    uint32_t count;
    bool orphaned;    // unmapped while pinned: free it at the last unpin
    uint64_t *charge; // an orphan's: its address space's count of them
    struct pin *next;
};

static struct spinlock pin_lock = SPINLOCK_INIT("pins");
static struct pin *table[PIN_BUCKETS];
static uint64_t npinned;

static struct pin **slot(uint64_t pa)
{
    struct pin **pp = &table[(pa >> 12) % PIN_BUCKETS];
    while (*pp && (*pp)->pa != pa)
        pp = &(*pp)->next;
    return pp;
}

bool pin_page(uint64_t pa)
{
    struct pin *fresh = kmalloc(sizeof *fresh); // allocate outside the lock
    if (!fresh)
        return false;
    uint64_t f = spin_lock_irqsave(&pin_lock);
    struct pin **pp = slot(pa);
    if (*pp) {
        (*pp)->count++;
    } else {
        *fresh = (struct pin){pa, 1, false, NULL, NULL};
        *pp = fresh;
        fresh = NULL;
        npinned++;
    }
    spin_unlock_irqrestore(&pin_lock, f);
    kfree(fresh);
    return true;
}

void unpin_page(uint64_t pa)
{
    uint64_t f = spin_lock_irqsave(&pin_lock);
    struct pin **pp = slot(pa), *p = *pp;
    bool free_frame = false;
    uint64_t *charge = NULL;
    if (p && --p->count == 0) {
        *pp = p->next;
        npinned--;
        free_frame = p->orphaned;
        charge = p->charge;
    } else {
        p = NULL;
    }
    spin_unlock_irqrestore(&pin_lock, f);
    kfree(p);
    if (free_frame)
        pmm_free_page(pa);
    if (charge)
        __atomic_fetch_sub(charge, 1, __ATOMIC_RELAXED);
}

void pin_free_or_orphan(uint64_t pa, uint64_t *charge)
{
    uint64_t f = spin_lock_irqsave(&pin_lock);
    struct pin *p = *slot(pa);
    if (p) {
        p->orphaned = true;
        p->charge = charge;
        __atomic_fetch_add(charge, 1, __ATOMIC_RELAXED);
    }
    spin_unlock_irqrestore(&pin_lock, f);
    if (!p)
        pmm_free_page(pa);
}

uint64_t pinned_page_count(void)
{
    return READ_ONCE(npinned);
}
