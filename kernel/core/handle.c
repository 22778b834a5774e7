// Handle tables.
#include "core/handle.h"

#include "lib/string.h"

#include "core/heap.h"
#include "core/process.h"

static int64_t slot_of(struct handle_table *ht, HANDLE h)
{
    uintptr_t v = (uintptr_t)h;
    if (v == 0 || (v & 3) || v / 4 > ht->capacity)
        return -1;
    return (int64_t)(v / 4 - 1);
}

void handle_table_init(struct handle_table *ht)
{
    ht->lock = (struct spinlock)SPINLOCK_INIT("handles");
    ht->slot = NULL;
    ht->capacity = 0;
}

NTSTATUS handle_insert(struct handle_table *ht, struct object *o, HANDLE *out)
{
    for (;;) {
        uint64_t f = spin_lock_irqsave(&ht->lock);
        for (uint32_t i = 0; i < ht->capacity; i++) {
            if (!ht->slot[i]) {
                ht->slot[i] = o;
                spin_unlock_irqrestore(&ht->lock, f);
                *out = (HANDLE)(uintptr_t)((i + 1) * 4);
                return STATUS_SUCCESS;
            }
        }
        uint32_t old_cap = ht->capacity, cap = old_cap ? old_cap * 2 : 16;
        spin_unlock_irqrestore(&ht->lock, f);
        if (cap > HANDLE_MAX)
            return STATUS_INSUFFICIENT_RESOURCES;
        struct object **bigger = kzalloc(cap * sizeof *bigger); // outside the lock
        if (!bigger)
            return STATUS_INSUFFICIENT_RESOURCES;
        f = spin_lock_irqsave(&ht->lock);
        struct object **old = NULL;
        if (ht->capacity == old_cap) { // nobody grew it meanwhile
            if (old_cap)
                memcpy(bigger, ht->slot, old_cap * sizeof *bigger);
            old = ht->slot;
            ht->slot = bigger;
            ht->capacity = cap;
            bigger = NULL;
        }
        spin_unlock_irqrestore(&ht->lock, f);
        kfree(old);
        kfree(bigger);
    }
}

// The pseudo-handles name the caller itself, as on NT: NtCurrentProcess() is
// a process, NtCurrentThread() a thread (an object type this kernel does not
// hand out: each process has one thread and no call takes a thread handle).
// Anything else is looked up in the table; an object of another type is
// STATUS_OBJECT_TYPE_MISMATCH, as NT's ObReferenceObjectByHandle says.
// A slot holds a reference, and handle_close empties the slot under the
// table's lock before it drops that reference (object.h's "unlink first"), so
// an object found here under the lock is alive and object_ref is safe.
NTSTATUS handle_lookup(struct handle_table *ht, HANDLE h, enum object_type type,
                       struct object **out)
{
    if (h == NtCurrentProcess() || h == NtCurrentThread()) {
        if (h == NtCurrentThread() || type != OBJ_PROCESS)
            return STATUS_OBJECT_TYPE_MISMATCH;
        struct process *me = process_current();
        object_ref(&me->obj);
        *out = &me->obj;
        return STATUS_SUCCESS;
    }
    uint64_t f = spin_lock_irqsave(&ht->lock);
    int64_t i = slot_of(ht, h);
    struct object *o = i >= 0 ? ht->slot[i] : NULL;
    if (o && o->type == type)
        object_ref(o);
    spin_unlock_irqrestore(&ht->lock, f);
    if (!o)
        return STATUS_INVALID_HANDLE;
    if (o->type != type)
        return STATUS_OBJECT_TYPE_MISMATCH;
    *out = o;
    return STATUS_SUCCESS;
}

NTSTATUS handle_close(struct handle_table *ht, HANDLE h)
{
    uint64_t f = spin_lock_irqsave(&ht->lock);
    int64_t i = slot_of(ht, h);
    struct object *o = i >= 0 ? ht->slot[i] : NULL;
    if (o)
        ht->slot[i] = NULL;
    spin_unlock_irqrestore(&ht->lock, f);
    if (!o)
        return STATUS_INVALID_HANDLE;
    object_unref(o); // may destroy: outside the lock
    return STATUS_SUCCESS;
}

void handle_table_close_all(struct handle_table *ht)
{
    for (uint32_t i = 0; i < ht->capacity; i++)
        if (ht->slot[i])
            handle_close(ht, (HANDLE)(uintptr_t)((i + 1) * 4));
    uint64_t f = spin_lock_irqsave(&ht->lock);
    struct object **slots = ht->slot;
    ht->slot = NULL;
    ht->capacity = 0;
    spin_unlock_irqrestore(&ht->lock, f);
    kfree(slots);
}
