// A sleeping lock, for long operations that call smp_call_all (which needs
// interrupts on) and so cannot hold a spinlock.
#pragma once
#include "core/spinlock.h"

struct mutex {
    struct spinlock lock;
    volatile bool free;
};

#define MUTEX_INIT(n) \
    { \
        SPINLOCK_INIT(n), true \
    }

void mutex_lock(struct mutex *m);
void mutex_unlock(struct mutex *m);
