// A failing sequence made short, as delta debugging does: drop parts of the
// calls while the sequence still fails the same way (same kind of failure,
// on the same operation), halving the parts when none can go.
#include "fuzz_state.h"
#include <stdio.h>
#include <string.h>

#define MAX_TRIES 160 // sequences run while shortening one

struct ddmin {
    struct fuzzer *f;
    uint64_t seed;
    unsigned len, tries;
    enum fail_kind kind;
    uint8_t op;
};

static bool still_fails(struct ddmin *d, const uint8_t *keep)
{
    d->tries++;
    enum fail_kind k = run_sequence(d->f, d->seed, d->len, keep);
    return k == d->kind && d->f->fail.op == d->op;
}

static unsigned kept(const uint8_t *keep, unsigned len)
{
    unsigned n = 0;
    for (unsigned i = 0; i < len; i++)
        n += keep[i];
    return n;
}

// keep without the part-th of n parts of the calls it keeps.
static void without_part(const uint8_t *keep, unsigned len, unsigned part, unsigned n, uint8_t *out)
{
    unsigned total = kept(keep, len), seen = 0;
    unsigned from = total * part / n, to = total * (part + 1) / n;
    for (unsigned i = 0; i < len; i++) {
        out[i] = keep[i];
        if (keep[i] && seen >= from && seen < to)
            out[i] = 0;
        seen += keep[i];
    }
}

// One round: a part whose removal keeps the failure goes. Whether one did.
static bool drop_one_part(struct ddmin *d, uint8_t *keep, unsigned n)
{
    uint8_t trial[SEQ_MAX];
    for (unsigned part = 0; part < n && d->tries < MAX_TRIES; part++) {
        without_part(keep, d->len, part, n, trial);
        if (kept(trial, d->len) && still_fails(d, trial)) {
            memcpy(keep, trial, d->len);
            return true;
        }
    }
    return false;
}

static void shorten(struct ddmin *d, uint8_t *keep)
{
    unsigned n = 2;
    while (kept(keep, d->len) >= 2 && d->tries < MAX_TRIES) {
        if (drop_one_part(d, keep, n)) {
            n = n > 2 ? n - 1 : 2;
            continue;
        }
        unsigned total = kept(keep, d->len);
        if (n >= total)
            break;
        n = 2 * n < total ? 2 * n : total;
    }
}

static void print_reproducer(struct ddmin *d, const uint8_t *keep)
{
    char line[SEQ_MAX * 4 + 64];
    int at = snprintf(line, sizeof line, "%lu,%u", d->seed, d->len);
    for (unsigned i = 0; i < d->len && at < (int)sizeof line - 8; i++)
        if (keep[i])
            at += snprintf(line + at, sizeof line - (size_t)at, ",%u", i);
    printf("fuzz-state: reproducer (%u of %u calls): fuzz_state --replay %s\n", kept(keep, d->len),
           d->len, line);
}

void minimize(struct fuzzer *f, uint64_t seed, unsigned len, enum fail_kind kind)
{
    struct failure first = f->fail;
    struct ddmin d = {f, seed, len, 0, kind, first.op};
    uint8_t keep[SEQ_MAX];
    memset(keep, 1, sizeof keep);
    printf("fuzz-state: FAILURE in sequence %lu,%u at call #%u (%s): %s\n", seed, len, first.call,
           op_name(first.op), first.what);
    bool again = false;
    for (int i = 0; i < 3 && !again; i++)
        again = still_fails(&d, keep);
    if (!again) {
        printf("fuzz-state: not reproduced in 3 runs; the whole sequence: fuzz_state --replay "
               "%lu,%u\n",
               seed, len);
        return;
    }
    shorten(&d, keep);
    print_reproducer(&d, keep);
    f->verbose = true; // the calls, and what the kernel said to each
    run_sequence(f, seed, len, keep);
    f->verbose = false;
}
