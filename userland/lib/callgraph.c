// Call graphs from a sample log (see callgraph.h).
//
// Every frame becomes a function id: a name interned once (kernel functions
// get the suffix "_[k]", as in the folded-stack convention). A sample becomes
// an array of ids, root first. Return addresses are looked up one byte back
// (inside the call instruction, not after it, which may be the next function
// when the call was the last instruction); the leaf IP is looked up as it is.
#include <callgraph.h>
#include <elfsym.h>
#include <sort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IMAGES 64

struct cg_image {
    char name[PROCESS_NAME_MAX];
    struct elf_image elf;
    int loaded; // 1 loaded, -1 failed
};

struct cg_pid {
    uint32_t pid;
    int image; // index into images, -1 unknown
    char name[PROCESS_NAME_MAX];
};

struct cg_sample {
    const struct pmclog_sample *rec; // or a struct pmclog_offcpu, laid out the same
    uint32_t first, n;               // ids[first .. first + n), root first
    uint64_t weight;                 // 1 a sample; an off-CPU stack: microseconds away
};

struct strmap { // open addressing, name -> id
    char **keys;
    uint32_t *vals;
    size_t cap, n;
};

struct callgraph {
    const struct samplelog *log;
    struct cg_image images[MAX_IMAGES];
    unsigned nimages;
    struct cg_pid *pids;
    size_t npids, cap_pids;
    struct strmap names; // function name -> id
    char **id_names;
    size_t nids, cap_ids;
    uint32_t *ids;
    size_t nframes, cap_frames;
    struct cg_sample *samples;
    size_t nsamples, cap_samples;
    uint64_t total; // the samples' weights
    uint64_t lost;
    const struct pmclog_oncpu **ins; // the switch-ins, by pid and seq
    size_t nins;
    int offcpu; // chains of off-CPU records, weighted by microseconds
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*p, ncap * elem);
    if (!n)
        return -1;
    *p = n;
    *cap = ncap;
    return 0;
}

// The value for key, inserting *val (and a copy of key) when absent; NULL on no memory.
static uint32_t *strmap_get(struct strmap *m, const char *key, uint32_t val)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 256;
        char **keys = calloc(ncap, sizeof *keys);
        uint32_t *vals = calloc(ncap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t h = hash_str(m->keys[i]) & (ncap - 1);
            while (keys[h])
                h = (h + 1) & (ncap - 1);
            keys[h] = m->keys[i];
            vals[h] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = ncap;
    }
    size_t h = hash_str(key) & (m->cap - 1);
    while (m->keys[h]) {
        if (strcmp(m->keys[h], key) == 0)
            return &m->vals[h];
        h = (h + 1) & (m->cap - 1);
    }
    m->keys[h] = strdup(key);
    if (!m->keys[h])
        return NULL;
    m->vals[h] = val;
    m->n++;
    return &m->vals[h];
}

static void strmap_free(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static int intern(struct callgraph *cg, const char *name, uint32_t *id)
{
    uint32_t *v = strmap_get(&cg->names, name, (uint32_t)cg->nids);
    if (!v)
        return -1;
    if (*v == cg->nids) { // new
        if (grow((void **)&cg->id_names, &cg->cap_ids, cg->nids + 1, sizeof(char *)))
            return -1;
        cg->id_names[cg->nids++] = strdup(name);
    }
    *id = *v;
    return 0;
}

static int image_for(struct callgraph *cg, const char *name)
{
    for (unsigned i = 0; i < cg->nimages; i++)
        if (strcmp(cg->images[i].name, name) == 0)
            return (int)i;
    if (cg->nimages == MAX_IMAGES)
        return -1;
    struct cg_image *im = &cg->images[cg->nimages];
    strlcpy(im->name, name, sizeof im->name);
    im->loaded = NT_SUCCESS(elf_image_load(name, &im->elf)) ? 1 : -1;
    return (int)cg->nimages++;
}

static struct cg_pid *pid_entry(struct callgraph *cg, uint32_t pid)
{
    for (size_t i = 0; i < cg->npids; i++)
        if (cg->pids[i].pid == pid)
            return &cg->pids[i];
    return NULL;
}

// "name" or "name_[k]" for addr, or its hex when no symbol covers it.
static void symbolize(struct callgraph *cg, uint32_t pid, uint64_t addr, int kernel, char *out,
                      size_t size)
{
    struct cg_pid *p = pid_entry(cg, kernel ? 0 : pid);
    const struct cg_image *im = p && p->image >= 0 ? &cg->images[p->image] : NULL;
    const struct elf_func *f = im && im->loaded > 0 ? elf_func_at(&im->elf, addr) : NULL;
    if (f)
        snprintf(out, size, "%s%s", f->name, kernel ? "_[k]" : "");
    else
        snprintf(out, size, "0x%lx%s", addr, kernel ? "_[k]" : "");
}

// The processes' images, from the map records (a sample may come before
// its process's map record in the file). 0 or -1 (no memory).
static int build_images(struct callgraph *cg, const struct samplelog *log)
{
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(log, &pos))) {
        if (h->type != PMCLOG_MAP)
            continue;
        const struct pmclog_map *m = (const struct pmclog_map *)h;
        struct cg_pid *p = pid_entry(cg, m->pid);
        if (!p) {
            if (grow((void **)&cg->pids, &cg->cap_pids, cg->npids + 1, sizeof *cg->pids))
                return -1;
            p = &cg->pids[cg->npids++];
        }
        p->pid = m->pid;
        memcpy(p->name, m->name, sizeof p->name);
        p->name[sizeof p->name - 1] = '\0';
        p->image = image_for(cg, p->name);
    }
    return 0;
}

// One symbolized chain of weight w, root first, and leaf (when not NULL)
// as one more frame above the chain's own leaf. 0 or -1.
static int add_chain(struct callgraph *cg, const struct pmclog_sample *s, uint64_t w,
                     const char *leaf)
{
    unsigned n = s->nframes + (leaf != NULL);
    if (grow((void **)&cg->samples, &cg->cap_samples, cg->nsamples + 1, sizeof *cg->samples) ||
        grow((void **)&cg->ids, &cg->cap_frames, cg->nframes + n, sizeof *cg->ids))
        return -1;
    struct cg_sample *cs = &cg->samples[cg->nsamples++];
    *cs = (struct cg_sample){s, (uint32_t)cg->nframes, n, w};
    for (unsigned i = 0; i < s->nframes; i++) { // root first: reversed
        char name[96];
        uint64_t a = s->frames[i];
        symbolize(cg, s->pid, i ? a - 1 : a, i < s->nkernel, name, sizeof name);
        if (intern(cg, name, &cg->ids[cs->first + s->nframes - 1 - i]))
            return -1;
    }
    if (leaf && intern(cg, leaf, &cg->ids[cs->first + n - 1]))
        return -1;
    cg->nframes += n;
    cg->total += w;
    return 0;
}

static const char *const reason_names[WAIT_KINDS] = {"runnable", "sleep", "child",
                                                     "console",  "mutex", "other"};

const char *callgraph_reason_name(unsigned reason)
{
    return reason < WAIT_KINDS ? reason_names[reason] : "?";
}

static int by_pid_seq(const void *a, const void *b)
{
    const struct pmclog_oncpu *x = *(const struct pmclog_oncpu *const *)a;
    const struct pmclog_oncpu *y = *(const struct pmclog_oncpu *const *)b;
    int c = cmp_up(x->pid, y->pid);
    return c ? c : cmp_up(x->seq, y->seq);
}

// The switch-in that ends r's absence (same pid and seq), or NULL.
static const struct pmclog_oncpu *switch_in_of(const struct pmclog_oncpu **in, size_t n,
                                               const struct pmclog_offcpu *r)
{
    size_t lo = 0, hi = n;
    struct pmclog_oncpu key = {.pid = r->pid, .seq = r->seq};
    const struct pmclog_oncpu *k = &key;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = by_pid_seq(&in[mid], &k);
        if (!c)
            return in[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

// The switch-ins of the log, sorted by pid and seq (caller frees); NULL and
// *n 0 when there are none.
static const struct pmclog_oncpu **switch_ins(const struct samplelog *log, size_t *n)
{
    const struct pmclog_oncpu **in = NULL;
    size_t cap = 0, pos = 0;
    const struct pmclog_header *h;
    *n = 0;
    while ((h = samplelog_next(log, &pos))) {
        if (h->type != PMCLOG_ONCPU)
            continue;
        if (grow((void **)&in, &cap, *n + 1, sizeof *in)) {
            free(in);
            *n = 0;
            return NULL;
        }
        in[(*n)++] = (const struct pmclog_oncpu *)h;
    }
    sort_array(in, *n, sizeof *in, by_pid_seq);
    return in;
}

const struct pmclog_oncpu *callgraph_offcpu_end(const struct callgraph *cg,
                                                const struct pmclog_offcpu *r)
{
    return switch_in_of(cg->ins, cg->nins, r);
}

// One record's chain: a sample (weight 1), or an off-CPU record whose
// switch-in is known (microseconds away, the reason as leaf). 0 or -1.
static int add_record(struct callgraph *cg, const struct pmclog_header *h)
{
    if (h->type == PMCLOG_LOST && !cg->offcpu)
        cg->lost += ((const struct pmclog_lost *)h)->count;
    if (h->type == PMCLOG_SAMPLE && !cg->offcpu)
        return add_chain(cg, (const void *)h, 1, NULL);
    if (h->type != PMCLOG_OFFCPU || !cg->offcpu)
        return 0;
    const struct pmclog_offcpu *r = (const struct pmclog_offcpu *)h;
    const struct pmclog_oncpu *in = switch_in_of(cg->ins, cg->nins, r);
    char leaf[24];
    snprintf(leaf, sizeof leaf, "[%s]", callgraph_reason_name(r->reason));
    return in ? add_chain(cg, (const void *)r, (in->off_ns + 500) / 1000, leaf) : 0;
}

static struct callgraph *build(const struct samplelog *log, int offcpu)
{
    struct callgraph *cg = calloc(1, sizeof *cg);
    if (!cg)
        return NULL;
    cg->log = log;
    cg->offcpu = offcpu;
    cg->ins = switch_ins(log, &cg->nins);
    if (build_images(cg, log))
        goto fail;
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(log, &pos)))
        if (add_record(cg, h))
            goto fail;
    return cg;
fail:
    callgraph_free(cg);
    return NULL;
}

struct callgraph *callgraph_build(const struct samplelog *log)
{
    return build(log, 0);
}

struct callgraph *callgraph_build_offcpu(const struct samplelog *log)
{
    return build(log, 1);
}

void callgraph_free(struct callgraph *cg)
{
    if (!cg)
        return;
    for (unsigned i = 0; i < cg->nimages; i++)
        if (cg->images[i].loaded > 0)
            elf_image_free(&cg->images[i].elf);
    for (size_t i = 0; i < cg->nids; i++)
        free(cg->id_names[i]);
    strmap_free(&cg->names);
    free(cg->id_names);
    free(cg->ids);
    free(cg->samples);
    free(cg->pids);
    free(cg->ins);
    free(cg);
}

uint64_t callgraph_samples(const struct callgraph *cg)
{
    return cg->nsamples;
}

uint64_t callgraph_total(const struct callgraph *cg)
{
    return cg->total;
}

// Percent with two decimals, as "12.34".
static void pct(char *out, size_t size, uint64_t part, uint64_t whole)
{
    uint64_t h = whole ? (part * 10000 + whole / 2) / whole : 0;
    snprintf(out, size, "%lu.%02lu", h / 100, h % 100);
}

struct fstat {
    uint32_t id;
    uint64_t self, total;
};

static int by_total(const void *a, const void *b)
{
    const struct fstat *x = a, *y = b;
    int c = cmp_down(x->total, y->total);
    if (!c)
        c = cmp_down(x->self, y->self);
    return c ? c : cmp_up(x->id, y->id);
}

// Self and inclusive counts per function; sorted by inclusive. Caller frees.
static struct fstat *function_stats(const struct callgraph *cg)
{
    struct fstat *st = calloc(cg->nids ? cg->nids : 1, sizeof *st);
    uint64_t *seen = calloc(cg->nids ? cg->nids : 1, sizeof *seen); // last sample counted + 1
    if (!st || !seen) {
        free(st);
        free(seen);
        return NULL;
    }
    for (size_t i = 0; i < cg->nids; i++)
        st[i].id = (uint32_t)i;
    for (size_t k = 0; k < cg->nsamples; k++) {
        const struct cg_sample *s = &cg->samples[k];
        for (uint32_t j = 0; j < s->n; j++) {
            uint32_t id = cg->ids[s->first + j];
            if (seen[id] != k + 1) { // recursion counts once per sample
                seen[id] = k + 1;
                st[id].total += s->weight;
            }
        }
        if (s->n)
            st[cg->ids[s->first + s->n - 1]].self += s->weight;
    }
    free(seen);
    sort_array(st, cg->nids, sizeof *st, by_total);
    return st;
}

void callgraph_print_flat(const struct callgraph *cg, unsigned top)
{
    struct fstat *st = function_stats(cg);
    if (!st)
        return;
    printf("%9s %9s %8s  %s\n", "Children", "Self", cg->offcpu ? "us" : "Samples", "Function");
    for (size_t i = 0; i < cg->nids && i < top; i++) {
        char c[16], s[16];
        pct(c, sizeof c, st[i].total, cg->total);
        pct(s, sizeof s, st[i].self, cg->total);
        printf("%8s%% %8s%% %8lu  %s\n", c, s, st[i].total, cg->id_names[st[i].id]);
    }
    free(st);
}

// Calls from or to a function: a tally per function id (UINT32_MAX: the root).
static void print_edges(const struct callgraph *cg, struct tally *e, size_t n, uint64_t whole,
                        const char *what)
{
    sort_array(e, n, sizeof *e, by_tally);
    printf("    %s:", what);
    if (!n || !e[0].count)
        printf(" -");
    for (size_t i = 0; i < n && i < 6 && e[i].count; i++) {
        char p[16];
        pct(p, sizeof p, e[i].count, whole);
        printf("%s %s %s%%", i ? "," : "",
               e[i].key == UINT32_MAX ? "(root)" : cg->id_names[e[i].key], p);
    }
    printf("\n");
}

void callgraph_print_tree(const struct callgraph *cg, unsigned top)
{
    struct fstat *st = function_stats(cg);
    struct tally *callers = calloc(cg->nids + 1, sizeof *callers);
    struct tally *callees = calloc(cg->nids + 1, sizeof *callees);
    if (!st || !callers || !callees)
        goto out;
    printf("Callers and callees (%% of the function's samples)\n");
    for (size_t t = 0; t < cg->nids && t < top; t++) {
        uint32_t f = st[t].id;
        for (size_t i = 0; i <= cg->nids; i++) {
            callers[i] = (struct tally){i == cg->nids ? UINT32_MAX : i, 0};
            callees[i] = callers[i];
        }
        for (size_t k = 0; k < cg->nsamples; k++) { // the outermost occurrence of f in each chain
            const struct cg_sample *s = &cg->samples[k];
            for (uint32_t j = 0; j < s->n; j++) {
                if (cg->ids[s->first + j] != f)
                    continue;
                callers[j ? cg->ids[s->first + j - 1] : cg->nids].count += s->weight;
                if (j + 1 < s->n)
                    callees[cg->ids[s->first + j + 1]].count += s->weight;
                break;
            }
        }
        char tp[16], sp[16];
        pct(tp, sizeof tp, st[t].total, cg->total);
        pct(sp, sizeof sp, st[t].self, cg->total);
        printf("  %s  (children %s%%, self %s%%)\n", cg->id_names[f], tp, sp);
        print_edges(cg, callers, cg->nids + 1, st[t].total, "callers");
        print_edges(cg, callees, cg->nids + 1, st[t].total, "callees");
    }
out:
    free(st);
    free(callers);
    free(callees);
}

struct folded {
    char *stack;
    uint64_t count;
};

static int by_folded(const void *a, const void *b)
{
    const struct folded *x = a, *y = b;
    int c = cmp_down(x->count, y->count);
    return c ? c : strcmp(x->stack, y->stack);
}

void callgraph_print_folded(const struct callgraph *cg, const char *prefix)
{
    struct strmap m = {0};
    struct folded *out = NULL;
    size_t nout = 0, cap = 0, len = 4096;
    char *buf = malloc(len);
    for (size_t k = 0; buf && k < cg->nsamples; k++) {
        const struct cg_sample *s = &cg->samples[k];
        size_t pos = 0;
        buf[0] = '\0';
        for (uint32_t j = 0; j < s->n; j++) {
            const char *name = cg->id_names[cg->ids[s->first + j]];
            size_t need = pos + strlen(name) + 2;
            if (need > len) {
                char *nb = realloc(buf, need * 2);
                if (!nb)
                    goto out;
                buf = nb;
                len = need * 2;
            }
            pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", j ? ";" : "", name);
        }
        uint32_t *v = strmap_get(&m, buf, (uint32_t)nout);
        if (!v)
            goto out;
        if (*v == nout) {
            if (grow((void **)&out, &cap, nout + 1, sizeof *out))
                goto out;
            out[nout++] = (struct folded){strdup(buf), 0};
        }
        out[*v].count += s->weight;
    }
    sort_array(out, nout, sizeof *out, by_folded);
    for (size_t i = 0; i < nout; i++)
        printf("%s%s %lu\n", prefix, out[i].stack, out[i].count);
out:
    for (size_t i = 0; i < nout; i++)
        free(out[i].stack);
    free(out);
    free(buf);
    strmap_free(&m);
}

void callgraph_print_breakdown(const struct callgraph *cg, int by_pid, int by_cpu)
{
    if (by_pid) {
        printf("%7s %-20s %8s %8s\n", "Pid", "Command", "Samples", "%");
        for (size_t i = 0; i < cg->npids; i++) {
            uint64_t n = 0;
            for (size_t k = 0; k < cg->nsamples; k++)
                n += cg->samples[k].rec->pid == cg->pids[i].pid ? cg->samples[k].weight : 0;
            if (!n)
                continue;
            char p[16];
            pct(p, sizeof p, n, cg->total);
            printf("%7u %-20s %8lu %7s%%\n", cg->pids[i].pid, cg->pids[i].name, n, p);
        }
    }
    if (by_cpu) {
        printf("%7s %8s %8s\n", "Cpu", "Samples", "%");
        for (unsigned c = 0; c < 64; c++) {
            uint64_t n = 0;
            for (size_t k = 0; k < cg->nsamples; k++)
                n += cg->samples[k].rec->h.cpu == c ? cg->samples[k].weight : 0;
            if (!n)
                continue;
            char p[16];
            pct(p, sizeof p, n, cg->total);
            printf("%7u %8lu %7s%%\n", c, n, p);
        }
    }
}

// The frames of a sample or off-CPU record, "k:HEX,...,u:HEX[,trunc]", at buf + n.
static size_t export_frames(char *buf, size_t len, size_t n, const struct pmclog_sample *s)
{
    for (unsigned i = 0; i < s->nframes && n + 24 < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%c:%lx", i ? "," : "",
                              i < s->nkernel ? 'k' : 'u', s->frames[i]);
    if (s->flags & PMCLOG_SAMPLE_TRUNC)
        n += (size_t)snprintf(buf + n, len - n, ",trunc");
    return n;
}

// One line built whole and written with one call, however long.
static void emit_line(char **buf, size_t *len, size_t pos)
{
    (*buf)[pos++] = '\n';
    fwrite(*buf, 1, pos, stdout);
    (void)len;
}

// The export's lines for the records the host's tools read beyond samples:
// the time base (`clock TSC_HZ NCPUS`) and the counters at a context switch
// (`cswitch CPU TSC OLD_PID NEW_PID EVENT:VALUE,...`).
static void print_export_other(const struct pmclog_header *h)
{
    if (h->type == PMCLOG_INITIALIZE) {
        const struct pmclog_initialize *in = (const struct pmclog_initialize *)h;
        printf("clock %lu %u\n", in->tsc_hz, in->ncpus);
    } else if (h->type == PMCLOG_CSWITCH) {
        const struct pmclog_cswitch *c = (const struct pmclog_cswitch *)h;
        printf("cswitch %u %lu %u %u ", h->cpu, h->tsc, c->old_pid, c->new_pid);
        for (unsigned i = 0; i < c->nevents && i < PMC_CSWITCH_MAX_EVENTS; i++)
            printf("%s%u:%lu", i ? "," : "", c->event[i], c->value[i]);
        printf("%s\n", c->nevents ? "" : "-");
    }
}

// `offcpu CPU PID TID TSC OFF_NS REASON FRAMES`: a switch-out whose switch-in
// is in the log, the time away in ns, why (enum thread_wait) and the chain.
static void export_offcpu(const struct callgraph *cg, const struct pmclog_offcpu *r, char **buf,
                          size_t *len)
{
    const struct pmclog_oncpu *in = switch_in_of(cg->ins, cg->nins, r);
    if (!in)
        return; // still away when the recording ended
    size_t n = (size_t)snprintf(*buf, *len, "offcpu %u %u %u %lu %lu %u ", r->h.cpu, r->pid, r->tid,
                                r->h.tsc, in->off_ns, r->reason);
    n = export_frames(*buf, *len, n, (const struct pmclog_sample *)r);
    emit_line(buf, len, n);
}

void callgraph_print_export(const struct callgraph *cg, const struct samplelog *log)
{
    size_t len = 32 + 20 * (PMC_DEPTH_MAX + 2) + 64;
    char *buf = malloc(len);
    if (!buf)
        return;
    printf("@@profile-export v1 begin\n");
    char cpu[96];
    samplelog_cpu(cpu, sizeof cpu);
    printf("cpu %s\n", cpu);
    if (log->trailer)
        printf("source %u %lu\n", log->trailer->source, log->trailer->interval);
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(log, &pos))) {
        if (h->type == PMCLOG_MAP) {
            const struct pmclog_map *m = (const struct pmclog_map *)h;
            char name[PROCESS_NAME_MAX];
            memcpy(name, m->name, sizeof name);
            name[sizeof name - 1] = '\0';
            printf("image %u %s %lx %lx %u %lu\n", m->pid, name, m->base, m->end, m->parent,
                   m->h.tsc);
        } else if (h->type == PMCLOG_SAMPLE) {
            const struct pmclog_sample *s = (const struct pmclog_sample *)h;
            size_t n =
                (size_t)snprintf(buf, len, "sample %u %u %u %lu %c ", s->h.cpu, s->pid, s->tid,
                                 s->h.tsc, s->flags & PMCLOG_SAMPLE_USER ? 'u' : 'k');
            n = export_frames(buf, len, n, s);
            n += (size_t)snprintf(buf + n, len - n, " %u", s->source);
            emit_line(&buf, &len, n);
        } else if (h->type == PMCLOG_OFFCPU) {
            export_offcpu(cg, (const struct pmclog_offcpu *)h, &buf, &len);
        } else if (h->type == PMCLOG_LOST) {
            const struct pmclog_lost *l = (const struct pmclog_lost *)h;
            printf("lost %u %lu %lu\n", l->h.cpu, l->count, l->h.tsc);
        } else {
            print_export_other(h);
        }
    }
    free(buf);
    callgraph_print_folded(cg, "folded ");
    printf("@@profile-export v1 end\n");
    fflush(stdout);
}
