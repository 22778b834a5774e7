// Shrinking a failing sequence to fewer steps and injection points that still
// fail the same way, and the text form that REPLAY= reads back:
//   VARIANT;DENSITY:SEED;STEP.K,...;KIND.A.B.C.N,...
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "explore.h"

// The invariant a message names: the words before its first ':'.
static bool same_failure(const char *a, const char *b)
{
    size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
    return la == lb && strncmp(a, b, la) == 0;
}

static bool still_fails(struct ex_seq *s, const char *want, struct ex_result *r)
{
    return !ex_run((struct ex_seq *)s, NULL, r, false) && same_failure(r->msg, want);
}

// s without steps [at, at + n): later injection points move down with them.
static void drop_steps(const struct ex_seq *s, unsigned at, unsigned n, struct ex_seq *out)
{
    *out = *s;
    out->nops = 0;
    for (unsigned i = 0; i < s->nops; i++)
        if (i < at || i >= at + n)
            out->ops[out->nops++] = s->ops[i];
    out->npoints = 0;
    for (unsigned i = 0; i < s->npoints; i++) {
        struct ex_point p = s->points[i];
        if (p.step >= at && p.step < at + n)
            continue;
        if (p.step >= at + n)
            p.step = (uint16_t)(p.step - n);
        out->points[out->npoints++] = p;
    }
}

static bool shrink_steps(struct ex_seq *s, const char *want, struct ex_result *r)
{
    bool progress = false;
    for (unsigned n = s->nops / 2; n >= 1; n /= 2)
        for (unsigned at = 0; at + n <= s->nops;) {
            struct ex_seq t;
            drop_steps(s, at, n, &t);
            if (still_fails(&t, want, r)) {
                *s = t;
                progress = true;
            } else {
                at += n;
            }
        }
    return progress;
}

static bool shrink_points(struct ex_seq *s, const char *want, struct ex_result *r)
{
    bool progress = false;
    for (unsigned i = 0; i < s->npoints;) {
        struct ex_seq t = *s;
        memmove(&t.points[i], &t.points[i + 1], (t.npoints - i - 1) * sizeof t.points[0]);
        t.npoints--;
        if (still_fails(&t, want, r)) {
            *s = t;
            progress = true;
        } else {
            i++;
        }
    }
    return progress;
}

// Smaller event counts and written values, where they still fail.
static bool shrink_values(struct ex_seq *s, const char *want, struct ex_result *r)
{
    bool progress = false;
    for (unsigned i = 0; i < s->nops; i++) {
        struct ex_seq t = *s;
        if (t.ops[i].n <= 1)
            continue;
        t.ops[i].n /= 2;
        if (still_fails(&t, want, r)) {
            *s = t;
            progress = true;
        }
    }
    return progress;
}

// A random-injection run becomes one with the points where it injected.
void ex_shrink(struct ex_seq *s, struct ex_result *r)
{
    char want[EX_MSG];
    snprintf(want, sizeof want, "%s", r->msg);
    if (s->density) {
        struct ex_seq t = *s;
        t.density = 0;
        t.npoints = r->npoints;
        memcpy(t.points, r->points, sizeof t.points);
        struct ex_result tr;
        if (still_fails(&t, want, &tr))
            *s = t;
    }
    for (unsigned round = 0; round < 8; round++) {
        bool p = shrink_steps(s, want, r);
        p |= shrink_points(s, want, r);
        p |= shrink_values(s, want, r);
        if (!p)
            break;
    }
    ex_run((struct ex_seq *)s, NULL, r, false);
}

void ex_format(const struct ex_seq *s, char *buf, unsigned size)
{
    int n = snprintf(buf, size, "%s;%u:%llu;", ex_variants[s->variant].name, s->density,
                     (unsigned long long)s->inject_seed);
    for (unsigned i = 0; i < s->npoints && n > 0 && (unsigned)n < size; i++)
        n += snprintf(buf + n, size - (unsigned)n, "%s%u.%u", i ? "," : "", s->points[i].step,
                      s->points[i].k);
    if (n > 0 && (unsigned)n < size)
        n += snprintf(buf + n, size - (unsigned)n, ";");
    for (unsigned i = 0; i < s->nops && n > 0 && (unsigned)n < size; i++) {
        const struct ex_op *o = &s->ops[i];
        n += snprintf(buf + n, size - (unsigned)n, "%s%u.%u.%u.%u.%u", i ? "," : "", o->kind, o->a,
                      o->b, o->c, o->n);
    }
}

static bool parse_points(const char *p, struct ex_seq *s)
{
    while (*p && *p != ';' && s->npoints < EX_MAX_INJECT) {
        unsigned st, k;
        int used = 0;
        if (sscanf(p, "%u.%u%n", &st, &k, &used) != 2)
            return false;
        s->points[s->npoints++] = (struct ex_point){(uint16_t)st, (uint16_t)k};
        p += used;
        p += *p == ',';
    }
    return true;
}

static bool parse_ops(const char *p, struct ex_seq *s)
{
    while (*p && s->nops < EX_MAX_OPS) {
        unsigned k, a, b, c, n;
        int used = 0;
        if (sscanf(p, "%u.%u.%u.%u.%u%n", &k, &a, &b, &c, &n, &used) != 5 || k >= OP_KINDS)
            return false;
        s->ops[s->nops++] = (struct ex_op){(uint8_t)k, (uint8_t)a, (uint8_t)b, (uint8_t)c, n};
        p += used;
        p += *p == ',';
    }
    return true;
}

bool ex_parse(const char *text, struct ex_seq *s)
{
    memset(s, 0, sizeof *s);
    char name[40];
    size_t len = strcspn(text, ";");
    if (len == 0 || len >= sizeof name || text[len] != ';')
        return false;
    memcpy(name, text, len);
    name[len] = 0;
    int v = ex_variant_find(name);
    if (v < 0)
        return false;
    s->variant = (unsigned)v;
    const char *p = text + len + 1;
    unsigned long long seed;
    if (sscanf(p, "%u:%llu", &s->density, &seed) != 2)
        return false;
    s->inject_seed = seed;
    p = strchr(p, ';');
    if (!p || !parse_points(p + 1, s))
        return false;
    p = strchr(p + 1, ';');
    return p && parse_ops(p + 1, s);
}
