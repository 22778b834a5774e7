// Handle tables.
#include "handle.h"

static int slot_of(HANDLE h)
{
    uintptr_t v = (uintptr_t)h;
    if (v == 0 || (v & 3) || v / 4 > HANDLE_MAX)
        return -1;
    return (int)(v / 4 - 1);
}

void handle_table_init(struct handle_table *ht)
{
    ht->lock = (struct spinlock)SPINLOCK_INIT("handles");
    for (int i = 0; i < HANDLE_MAX; i++)
        ht->slot[i] = NULL;
}

NTSTATUS handle_insert(struct handle_table *ht, struct object *o, HANDLE *out)
{
    uint64_t f = spin_lock_irqsave(&ht->lock);
    for (int i = 0; i < HANDLE_MAX; i++) {
        if (!ht->slot[i]) {
            ht->slot[i] = o;
            spin_unlock_irqrestore(&ht->lock, f);
            *out = (HANDLE)(uintptr_t)((i + 1) * 4);
            return STATUS_SUCCESS;
        }
    }
    spin_unlock_irqrestore(&ht->lock, f);
    return STATUS_INSUFFICIENT_RESOURCES;
}

NTSTATUS handle_lookup(struct handle_table *ht, HANDLE h, enum object_type type, struct object **out)
{
    int i = slot_of(h);
    if (i < 0)
        return STATUS_INVALID_HANDLE;
    uint64_t f = spin_lock_irqsave(&ht->lock);
    struct object *o = ht->slot[i];
    if (o && o->type == type)
        object_ref(o);
    spin_unlock_irqrestore(&ht->lock, f);
    if (!o || o->type != type)
        return STATUS_INVALID_HANDLE;
    *out = o;
    return STATUS_SUCCESS;
}

NTSTATUS handle_close(struct handle_table *ht, HANDLE h)
{
    int i = slot_of(h);
    if (i < 0)
        return STATUS_INVALID_HANDLE;
    uint64_t f = spin_lock_irqsave(&ht->lock);
    struct object *o = ht->slot[i];
    ht->slot[i] = NULL;
    spin_unlock_irqrestore(&ht->lock, f);
    if (!o)
        return STATUS_INVALID_HANDLE;
    object_unref(o); // may destroy: outside the lock
    return STATUS_SUCCESS;
}

void handle_table_close_all(struct handle_table *ht)
{
    for (int i = 0; i < HANDLE_MAX; i++)
        if (ht->slot[i])
            handle_close(ht, (HANDLE)(uintptr_t)((i + 1) * 4));
}
