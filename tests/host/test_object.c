// kernel/core/object.c on the host: the rule of taking a reference (object.h).
// A finder's object_ref_live fails once the count has reached zero, and never
// brings a dead object back, even when it races the last unref on another
// thread; object_ref on a dead object panics instead of reviving it;
// object_unref_unless_last never drops the last reference.
#include <pthread.h>
#include <stdint.h>
#include "core/object.h"
#include "harness.h"

static unsigned destroyed;
static void count_destroy(struct object *o)
{
    (void)o;
    __atomic_fetch_add(&destroyed, 1, __ATOMIC_SEQ_CST);
}

// The race: the owner drops the last reference while finders, each holding
// the "list lock" as a reader would, take and drop references of their own.
struct race {
    struct object obj;
    volatile int dead; // set by the destroy's caller
    unsigned revived;  // a finder saw the object after its destroy ran
};

static void *finder(void *arg)
{
    struct race *r = arg;
    for (int i = 0; i < 20000; i++) {
        if (!object_ref_live(&r->obj))
            break;
        if (__atomic_load_n(&r->dead, __ATOMIC_SEQ_CST))
            __atomic_fetch_add(&r->revived, 1, __ATOMIC_SEQ_CST);
        object_unref(&r->obj);
    }
    return NULL;
}

static void race_destroy(struct object *o)
{
    struct race *r = (struct race *)o;
    __atomic_store_n(&r->dead, 1, __ATOMIC_SEQ_CST);
    count_destroy(o);
}

static bool race_once(void)
{
    static struct race r;
    r = (struct race){0};
    object_init(&r.obj, OBJ_PROCESS, race_destroy);
    destroyed = 0;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, finder, &r);
    object_unref(&r.obj); // the owner's reference: the last one sooner or later
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    return destroyed == 1 && r.revived == 0 && !object_ref_live(&r.obj);
}

void test_object(void)
{
    struct object o;
    uint64_t live = object_live_count();
    object_init(&o, OBJ_PMC, count_destroy);
    destroyed = 0;
    CHECK(object_ref_live(&o) && o.refs == 2, "object: a finder's reference on a live object");
    object_unref(&o);
    object_unref(&o);
    CHECK(destroyed == 1 && object_live_count() == live, "object: destroyed at the last unref");
    CHECK(!object_ref_live(&o) && o.refs == 0 && destroyed == 1,
          "object: a finder gets nothing once the count is zero, and revives nothing");
    CHECK(PANICS(object_ref(&o)) && destroyed == 1,
          "object: object_ref on a dead object panics instead of reviving it");
    object_init(&o, OBJ_PROCESS, count_destroy);
    destroyed = 0;
    object_ref(&o);
    CHECK(object_unref_unless_last(&o) && o.refs == 1 && destroyed == 0,
          "object: object_unref_unless_last drops a reference that is not the last");
    CHECK(!object_unref_unless_last(&o) && o.refs == 1 && destroyed == 0,
          "object: object_unref_unless_last keeps the last reference and destroys nothing");
    object_unref(&o);
    CHECK(destroyed == 1 && object_live_count() == live, "object: the last unref destroys it");
    bool ok = true;
    for (int i = 0; i < 200 && ok; i++)
        ok = race_once();
    CHECK(ok, "object: 200 races of the last unref against 3 finders: one destroy, no revival");
}
