// Object reference counting.
#include "core/object.h"

static uint64_t live;

void object_init(struct object *o, enum object_type type, void (*destroy)(struct object *))
{
    o->type = type;
    o->refs = 1;
    o->destroy = destroy;
    __atomic_fetch_add(&live, 1, __ATOMIC_RELAXED);
}

void object_ref(struct object *o)
{
    __atomic_fetch_add(&o->refs, 1, __ATOMIC_RELAXED);
}

void object_unref(struct object *o)
{
    if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        __atomic_fetch_sub(&live, 1, __ATOMIC_RELAXED);
        o->destroy(o);
    }
}

uint64_t object_live_count(void)
{
    return __atomic_load_n(&live, __ATOMIC_RELAXED);
}
