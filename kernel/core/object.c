// Object reference counting (the rule of taking a reference: object.h).
#include "core/object.h"

#include "lib/panic.h"

static uint64_t live;

void object_init(struct object *o, enum object_type type, void (*destroy)(struct object *))
{
    o->type = type;
    o->refs = 1;
    o->destroy = destroy;
    __atomic_fetch_add(&live, 1, __ATOMIC_RELAXED);
}

// A count of zero here means the caller broke the rule: it found the object
// without holding a reference. Stop before the object is destroyed twice.
void object_ref(struct object *o)
{
    if (__atomic_fetch_add(&o->refs, 1, __ATOMIC_RELAXED) == 0)
        panic("object_ref: object %p of type %u revived after its last reference", (void *)o,
              (unsigned)o->type);
}

bool object_ref_live(struct object *o)
{
    uint32_t n = __atomic_load_n(&o->refs, __ATOMIC_RELAXED);
    do {
        if (n == 0)
            return false; // destroy has begun: the object is gone for finders
    } while (!__atomic_compare_exchange_n(&o->refs, &n, n + 1, true, __ATOMIC_ACQUIRE,
                                          __ATOMIC_RELAXED));
    return true;
}

void object_unref(struct object *o)
{
    if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        __atomic_fetch_sub(&live, 1, __ATOMIC_RELAXED);
        o->destroy(o);
    }
}

bool object_unref_unless_last(struct object *o)
{
    uint32_t n = __atomic_load_n(&o->refs, __ATOMIC_RELAXED);
    do {
        if (n <= 1)
            return false; // the last: the caller drops it with object_unref
    } while (!__atomic_compare_exchange_n(&o->refs, &n, n - 1, true, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
    return true;
}

uint64_t object_live_count(void)
{
    return __atomic_load_n(&live, __ATOMIC_RELAXED);
}
