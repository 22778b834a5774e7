// The invariants checked as a run goes (the others are in profiles.c,
// hwpmc.c and world.c's teardown): the run's first failure, and the watch
// around every slice of a sample. A sample cannot change which process its
// CPU runs (its CPU's task waits under it), so each count a sample may only
// add to for that process is read before and after each slice it runs:
// another process's profiles (their in-range counts), another process's
// profile sets (this CPU's sample count: the sets are noted as they are
// published), another process's PMC targets.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kx.h"

#include "pmc/ke/profile_index.h"
#include "pmc/ke/profile_state.h"

#define SETS    64 // process sets live at once
#define WATCHED (SETS + KX_SLOTS + KX_POOL)

static struct kx_report local;
struct kx_report *kx_report = &local;
static struct kx_stats scratch;
struct kx_stats *kx_stats = &scratch; // main.c points it at what workers add up

void kx_fail(const char *fmt, ...)
{
    if (kx_report->failed)
        return; // the first one says what went wrong
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kx_report->msg, sizeof kx_report->msg, fmt, ap);
    va_end(ap);
    kx_report->failed = true;
}

bool kx_failed(void)
{
    return kx_report->failed;
}

void kx_die(void)
{
    fprintf(stderr, "ke-explore: %s\n", kx_report->msg);
    fflush(stdout);
    _exit(3);
}

// --- the process sets published so far, with their process ------------------------

static struct noted {
    const struct profile_set *set;
    const struct process *owner;
} sets[SETS];
static unsigned nsets;

void kx_check_reset(void)
{
    nsets = 0;
}

static void note_sets(struct process *p, void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < KX_SOURCES; i++) {
        const struct profile_set *set = profile_of(p)->sets[kx_sources[i]];
        unsigned k = 0;
        while (set && k < nsets && sets[k].set != set)
            k++;
        if (!set || k < nsets)
            continue;
        if (nsets == SETS)
            kx_fail("harness: more than %u process sets live", SETS);
        else
            sets[nsets++] = (struct noted){set, p};
    }
}

void kx_sets_scan(void)
{
    kx_world_each_process(note_sets, NULL);
}

void kx_sets_forget(const void *freed)
{
    for (unsigned k = 0; k < nsets; k++)
        if (sets[k].set == freed) {
            sets[k] = sets[--nsets];
            return;
        }
}

// --- the watch ------------------------------------------------------------------

static struct {
    unsigned n;
    uint64_t *at[WATCHED];
    uint64_t was[WATCHED];
    uint32_t pid[WATCHED];
    const char *what[WATCHED];
} watch;

static void watch_one(uint64_t *at, const struct process *owner, const struct kx_sample *s,
                      const char *what)
{
    if (owner == s->proc || watch.n == WATCHED)
        return;
    watch.at[watch.n] = at;
    watch.was[watch.n] = *at;
    watch.pid[watch.n] = owner->pid;
    watch.what[watch.n++] = what;
}

static void watch_profile(uint64_t *in_range, const struct process *p, void *arg)
{
    watch_one(in_range, p, arg, "profile's in-range count");
}

static void watch_target(uint64_t *samples, const struct process *p, void *arg)
{
    watch_one(samples, p, arg, "PMC target's sample count");
}

void kx_watch_begin(const struct kx_sample *s)
{
    watch.n = 0;
    kx_profiles_each(watch_profile, (void *)s);
    for (unsigned k = 0; k < nsets; k++)
        watch_one(&sets[k].set->samples[s->cpu], sets[k].owner, s, "profile set's sample count");
    kx_pmc_each_target(watch_target, (void *)s);
}

void kx_watch_end(const struct kx_sample *s)
{
    char runs[32] = "the idle thread";
    if (s->proc)
        snprintf(runs, sizeof runs, "pid %u", s->proc->pid);
    for (unsigned i = 0; i < watch.n; i++)
        if (*watch.at[i] != watch.was[i])
            kx_fail("process: a sample on CPU %u, which runs %s, counted into pid %u's %s", s->cpu,
                    runs, watch.pid[i], watch.what[i]);
}
