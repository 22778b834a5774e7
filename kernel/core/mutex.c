// Mutexes: sleep until the holder lets go.
#include "core/mutex.h"

#include "core/sched.h"

void mutex_lock(struct mutex *m)
{
    for (;;) {
        uint64_t f = spin_lock_irqsave(&m->lock);
        if (m->free) {
            m->free = false;
            spin_unlock_irqrestore(&m->lock, f);
            return;
        }
        spin_unlock_irqrestore(&m->lock, 0);          // interrupts stay off for sleep_on
        sleep_unkillable(m, &m->free, 0, WAIT_MUTEX); // a killed waiter sleeps too
        irq_restore(f);
    }
}

void mutex_unlock(struct mutex *m)
{
    uint64_t f = spin_lock_irqsave(&m->lock);
    m->free = true;
    spin_unlock_irqrestore(&m->lock, f);
    wakeup(m);
}
