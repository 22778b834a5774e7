// A stand-in for the sampling PMCs (kernel/pmc/hwpmc/kind_sampling.c and
// pmc.c): what the sample fan-out asks of them, and the two ways they retire
// what a sample reads, so that core/grace.c runs for real under the samples.
//   - The running set, one of two arrays, replaced whole at a start or a
//     stop and retired by grace_wait (as kind_sampling.c's set_change).
//   - A process's target (PMC 1 samples only the processes it is attached
//     to), unpublished at a detach or the process's exit and freed by
//     grace_defer (as pmc.c's unlink_locked and release_targets do).
// A plan keeps a PMC's per-CPU sampler, which points at the target's count:
// pmc_log_sample adds to it, after a yield point.
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <string.h>

#include "kx.h"

#include "core/grace.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "pmc/hwpmc/kind_sampling.h"
#include "pmc/ke/profile.h"
#include "pmc/ke/sample.h"

#define DEFERS 64 // grace_defer calls one sequence may make

struct target {
    uint64_t samples;
    struct process *proc;
    struct grace_item grace;
    unsigned id;          // its deferred free's record
    uint64_t deferred_at; // the clock when it was deferred
};

struct spmc {
    bool running;
    struct target *targets[KX_POOL]; // by kx_pid_index (PMC 1 only)
    struct pmc_sampler cpu[KX_CPUS];
};

struct running {
    unsigned n;
    struct spmc *p[KX_PMCS];
};

static struct spmc pmcs[KX_PMCS];
static struct running sets[2], *running_set; // as kind_sampling.c's: two arrays
static unsigned next_set;                    // the one a change writes
static struct mutex spmc_lock = MUTEX_INIT("pmc");
static uint64_t sink[KX_CPUS];
static bool gone[KX_POOL]; // its exit detached it: no new target (pmc.c's pmc_exited)
static struct {
    unsigned deferred;     // grace_defer calls
    unsigned runs[DEFERS]; // each one's runs
    bool clipped;          // more than DEFERS
} frees;

static KPROFILE_SOURCE source_of(unsigned m)
{
    return kx_sources[m]; // PMC 0 samples ProfileTime, PMC 1 ProfileTotalIssues
}

void kx_pmc_reset(void)
{
    memset(pmcs, 0, sizeof pmcs);
    memset(&frees, 0, sizeof frees);
    memset(gone, 0, sizeof gone);
    ASAN_UNPOISON_MEMORY_REGION(sets, sizeof sets);
    running_set = NULL;
}

// --- the interrupt side -----------------------------------------------------------

// The consumer's plan (as kind_sampling.c's pmc_samplers_make): the
// samplers of the running PMCs that sample source for pr, chained.
static void *samplers_plan(KPROFILE_SOURCE source, const struct process *pr, unsigned cpu)
{
    kx_yield();
    const struct running *set = __atomic_load_n(&running_set, __ATOMIC_ACQUIRE);
    struct pmc_sampler *first = NULL, **link = &first;
    for (unsigned i = 0; set && i < set->n; i++) {
        struct spmc *m = set->p[i];
        unsigned id = (unsigned)(m - pmcs);
        struct target *tg = NULL;
        if (id == 1 && pr)
            tg = __atomic_load_n(&m->targets[kx_pid_index(pr)], __ATOMIC_ACQUIRE);
        if (source_of(id) != source || (id == 1 && !tg))
            continue;
        struct pmc_sampler *s = &m->cpu[cpu];
        s->samples = tg ? &tg->samples : &sink[cpu];
        s->next = NULL;
        *link = s;
        link = &s->next;
    }
    return first;
}

// The consumer's take (as log.c's pmc_log_sample): each sampler's count.
static void samplers_take(void *token, const struct intr_frame *f)
{
    (void)f;
    kx_yield();
    for (struct pmc_sampler *s = token; s; s = s->next)
        (*s->samples)++;
}

static const struct sample_consumer samplers = {samplers_plan, samplers_take};

void kx_pmc_init(void)
{
    sample_consumer_register(&samplers);
}

// --- the running set -----------------------------------------------------------------

struct since {
    uint64_t clock;
    const char *what;
};

// Every sample that began before `since` has ended (a grace period's promise).
static void older(const struct kx_sample *s, void *arg)
{
    const struct since *w = arg;
    if (s->entry < w->clock)
        kx_fail("grace: %s while a sample on CPU %u from before it runs", w->what, s->cpu);
}

// As kind_sampling.c's: the array not published gets the new set (a grace
// period ago it was retired, so no sample reads it), then the new one is
// published and the old one retired (poisoned: a sample that still reads it
// is a use after poison).
static void set_change(struct spmc *add, struct spmc *remove)
{
    const struct running *old = running_set;
    struct running *set = &sets[next_set];
    ASAN_UNPOISON_MEMORY_REGION(set, sizeof *set);
    set->n = 0;
    for (unsigned i = 0; old && i < old->n; i++)
        if (old->p[i] != remove)
            set->p[set->n++] = old->p[i];
    if (add)
        set->p[set->n++] = add;
    if (set->n)
        next_set ^= 1;
    else
        set = NULL;
    sample_publish(&running_set, set);
    struct since since = {kx_clock(), "grace_wait returned"};
    grace_wait();
    kx_each_sample(older, &since);
    if (old)
        ASAN_POISON_MEMORY_REGION(old, sizeof *old);
}

static void spmc_start(struct spmc *m)
{
    if (m->running || !NT_SUCCESS(KeReferenceProfileSource(source_of((unsigned)(m - pmcs)))))
        return;
    set_change(m, NULL);
    m->running = true;
}

static void spmc_stop(struct spmc *m)
{
    if (!m->running)
        return;
    set_change(NULL, m);
    m->running = false;
    KeDereferenceProfileSource(source_of((unsigned)(m - pmcs)));
}

// --- targets ----------------------------------------------------------------------

static void free_target(struct grace_item *g)
{
    struct target *t = (struct target *)((char *)g - offsetof(struct target, grace));
    struct since since = {t->deferred_at, "a deferred free ran"};
    kx_each_sample(older, &since);
    kx_stats->deferred_runs++;
    if (t->id < DEFERS && ++frees.runs[t->id] > 1)
        kx_fail("grace: deferred free %u ran %u times", t->id, frees.runs[t->id]);
    object_unref(&t->proc->obj); // the last when the process was reaped meanwhile
    kfree(t);
}

static void attach(struct spmc *m, struct process *p)
{
    struct target **slot = &m->targets[kx_pid_index(p)];
    if (*slot || gone[kx_pid_index(p)])
        return;
    struct target *t = kmalloc(sizeof *t);
    if (!t)
        return;
    *t = (struct target){.proc = p};
    object_ref(&p->obj);
    sample_publish(slot, t);
}

static void detach(struct spmc *m, struct process *p)
{
    struct target **slot = &m->targets[kx_pid_index(p)], *t = *slot;
    if (!t)
        return;
    sample_publish(slot, (struct target *)NULL); // no new plan finds it
    t->id = frees.deferred++;
    frees.clipped |= t->id >= DEFERS;
    t->deferred_at = kx_clock();
    grace_defer(&t->grace, free_target);
}

void kx_pmc_exiting(struct process *p)
{
    mutex_lock(&spmc_lock);
    detach(&pmcs[1], p);
    gone[kx_pid_index(p)] = true;
    mutex_unlock(&spmc_lock);
}

void kx_pmc_op(const struct kx_step *op)
{
    struct spmc *m = &pmcs[op->a % KX_PMCS];
    struct process *p = kx_slot_process(op->b % KX_PROCS);
    if (p)
        object_ref(&p->obj); // the caller's, as pmc_attach's lookup takes one
    mutex_lock(&spmc_lock);
    if (op->kind == KX_PMC_START)
        spmc_start(m);
    else if (op->kind == KX_PMC_STOP)
        spmc_stop(m);
    else if (m == &pmcs[1] && p && op->kind == KX_ATTACH)
        attach(m, p);
    else if (m == &pmcs[1] && p)
        detach(m, p);
    mutex_unlock(&spmc_lock);
    if (p)
        object_unref(&p->obj);
}

void kx_pmc_each_target(void (*fn)(uint64_t *samples, const struct process *p, void *arg),
                        void *arg)
{
    for (unsigned i = 0; i < KX_POOL; i++)
        if (pmcs[1].targets[i])
            fn(&pmcs[1].targets[i]->samples, pmcs[1].targets[i]->proc, arg);
}

bool kx_pmc_idle(char *msg, unsigned size)
{
    unsigned once = 0;
    for (unsigned i = 0; i < frees.deferred && i < DEFERS; i++)
        once += frees.runs[i] == 1;
    if (running_set || (!frees.clipped && once != frees.deferred)) {
        snprintf(msg, size, "grace: at the end %u of %u deferred frees ran once%s", once,
                 frees.deferred, running_set ? ", a PMC still runs" : "");
        return false;
    }
    return true;
}
