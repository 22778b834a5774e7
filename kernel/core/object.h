// Reference-counted kernel objects: what a handle refers to.
//
// The rule of taking a reference
// ------------------------------
// object_ref may be called only by code that already holds a reference (its
// own, or one its caller lends it for the call): the count is then at least
// one, and nobody can be destroying the object.
//
// An object found through a shared list or table is a different case. When
// the list holds no reference of its own (the process list: a process stays
// on it, as a zombie, until its last reference goes), the count may already
// have reached zero on another CPU: object_unref has called destroy, which
// has not yet taken the list's lock to unlink it. A plain increment there
// would bring the dead object back to one, and the finder's unref would run
// destroy a second time (a use after free, then a double free). Such a
// finder uses object_ref_live, under the list's lock: increment unless zero,
// as Linux's kref_get_unless_zero (include/linux/kref.h) and FreeBSD's
// refcount_acquire_if_not_zero (sys/sys/refcount.h). A false answer means
// "gone": treat it as not found. The list's lock keeps the memory valid for
// the attempt, because destroy takes the same lock to unlink before it frees.
//
// When the table does hold a reference (a handle table slot), the other
// form of the rule applies: unlink first, under the table's lock, and only
// then drop the table's reference. A lookup under that lock finds only
// objects whose count includes the slot's reference, so object_ref is safe.
#pragma once
#include "lib/types.h"

enum object_type { OBJ_PROCESS = 1, OBJ_PROFILE = 2, OBJ_PMC = 3 };

struct object {
    enum object_type type;
    uint32_t refs;                       // atomic
    void (*destroy)(struct object *obj); // called when refs drops to 0
};

void object_init(struct object *o, enum object_type type, void (*destroy)(struct object *));
void object_ref(struct object *o);      // the caller holds a reference (panics on a dead object)
bool object_ref_live(struct object *o); // found through a list: false when destroy has begun
void object_unref(struct object *o);
// Drop a reference unless it is the last: false (and nothing dropped) when it
// is, as Linux's refcount_dec_not_one (lib/refcount.c). For a holder that must
// keep using the object's memory after its drop under a lock that the object's
// destroy takes first (process_thread_gone).
bool object_unref_unless_last(struct object *o);
uint64_t object_live_count(void); // objects created and not yet destroyed (leak checks)
