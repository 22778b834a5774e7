// Reference-counted kernel objects: what a handle refers to.
#pragma once
#include "lib/types.h"

enum object_type { OBJ_PROCESS = 1, OBJ_PROFILE = 2, OBJ_PMC = 3 };

struct object {
    enum object_type type;
    uint32_t refs;                       // atomic
    void (*destroy)(struct object *obj); // called when refs drops to 0
};

void object_init(struct object *o, enum object_type type, void (*destroy)(struct object *));
void object_ref(struct object *o);
void object_unref(struct object *o);
uint64_t object_live_count(void); // objects created and not yet destroyed (leak checks)
