// `profile top`: the hottest functions, refreshed on the console while the
// machine runs, as perf top and pmcstat -T show them.
//
//   profile top [-k] [-a] [-p PID] [-s SOURCE] [-d SECONDS] [-n ROWS]
//
// One sampling PMC without call chains writes the PMC log (docs/pmc-log.md):
// system-wide with -a (the default without -p; the kernel's samples too, as
// record -a takes them), or process PID with -p (its ring-3 samples, -k adds
// its kernel ones). Every DRAIN_MS the log is drained and each sample's IP
// counted to its function (the program's ELF symbols, found through the
// log's map records, or the kernel's); every -d SECONDS (default 1) the
// screen is redrawn with ANSI escape sequences (ECMA-48: CUP "ESC [ H" and
// ED "ESC [ 2 J"): a header (source, interval, samples per second, lost
// samples and the ticks late CPUs missed) and the functions by hits in the
// last interval, with their share of it and their total. A `q` typed on the
// console ends it: the console is polled without waiting (SysRead with
// SYS_READ_NOWAIT), so the screen keeps its rhythm.
#include <clock.h>
#include <elfsym.h>
#include <samplelog.h>
#include <sort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "cli.h"
#include "top.h"

#define DRAIN_MS    50
#define DRAIN_BUF   (64u << 10)
#define MAX_FUNCS   1024
#define SLOTS       4096 // the functions' hash table: a power of two, 4 x MAX_FUNCS
#define MAX_IMAGES  32
#define NAME_LEN    48
#define RING_KB_TOP 256
#define MAX_HELD    256 // distinct IPs of processes whose map record is still to come

const char usage_top[] = "usage: profile top [-k] [-a] [-p PID] [-s SOURCE] [-d SECONDS] [-n ROWS]";

struct top_fn {
    const void *image; // its struct top_img
    uint64_t key;      // the function's address, or the IP when no symbol covers it
    char module[PROCESS_NAME_MAX], name[NAME_LEN];
    uint64_t last, total;
};

struct top_img {
    uint32_t pid;
    char name[PROCESS_NAME_MAX];
    struct elf_image elf;
    int loaded; // 1 loaded, -1 no symbols
};

// Samples of a process whose map record has not come yet: the log is drained
// one CPU's ring after another, so a sample can come before the map record
// that another CPU wrote first (the kernel's own, at the log's start, too).
// They are held, by IP, until it comes, then counted to their functions;
// those still held a whole refresh later (their map record was lost with a
// full ring) are counted unnamed.
struct top_held {
    uint32_t pid;     // 0: the kernel
    unsigned refresh; // the refresh under way when the first was held
    uint64_t ip, n;
};

struct top {
    int kernel, system;
    uint64_t seconds, rows;
    const struct sys_profile_source *src;
    struct attach at; // -p PID
    struct interval iv;
    HANDLE pmc;
    int log_on;
    uint8_t *buf;
    struct top_fn *fns;
    struct top_fn *order[MAX_FUNCS]; // the rows, hottest first when drawn
    uint16_t slots[SLOTS];           // a row's index + 1, by hash of (image, key)
    unsigned nfns, nimgs, refresh;
    struct top_img imgs[MAX_IMAGES];
    uint64_t last, total, lost, missed0;
    struct top_held held[MAX_HELD];
    unsigned nheld;
};

static int top_value(struct top *t, char opt, const char *arg)
{
    uint64_t v = 0;
    if (opt == 's')
        return (t->src = prof_find_source(arg))
                   ? 0
                   : usage_error(usage_top, "unknown source '%s'", arg);
    char flag[] = {'-', opt, 0};
    if (prof_parse_number(arg, &v) || !v)
        return number_error(usage_top, flag, arg, "a positive number");
    if (opt == 'p')
        t->at.pid = (uint32_t)v;
    else if (opt == 'd')
        t->seconds = v;
    else
        t->rows = v;
    return 0;
}

static int top_parse(struct top *t, int argc, char **argv)
{
    t->seconds = 1;
    t->rows = 15;
    t->src = prof_find_source("ProfileTime");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-k")) {
            t->kernel = 1;
        } else if (!strcmp(a, "-a")) {
            t->system = 1;
        } else if (a[0] == '-' && a[1] && strchr("spdn", a[1]) && !a[2] && i + 1 < argc) {
            int st = top_value(t, a[1], argv[++i]);
            if (st)
                return st;
        } else {
            return usage_error(usage_top, "unknown argument '%s'", a);
        }
    }
    if (t->system && t->at.pid)
        return usage_error(usage_top, "-p PID goes without -a");
    t->system = !t->at.pid; // the whole machine unless one process is asked for
    t->kernel |= t->system;
    if (t->seconds > 3600)
        return usage_error(usage_top, "-d takes 1 to 3600 seconds");
    return t->src ? 0 : usage_error(usage_top, "cannot read the source table");
}

// The ProfileTime ticks late CPUs missed so far (SysCpuInfo).
static uint64_t missed_ticks(void)
{
    struct sys_cpu_info cpus[16];
    uint32_t n = 0;
    uint64_t sum = 0;
    if (NT_SUCCESS(SysCpuInfo(cpus, 16, &n)))
        for (uint32_t i = 0; i < n && i < 16; i++)
            sum += cpus[i].profile_ticks_skipped;
    return sum;
}

// The log, the interval and the PMC, started. 0 or an exit status.
static int top_start(struct top *t)
{
    int privileged = prof_holds_privilege();
    if (t->kernel && !privileged) {
        fprintf(stderr, "profile: top %s needs the system-profile privilege (run under sudo)\n",
                t->system ? "of the whole machine" : "-k");
        return EXIT_FAIL;
    }
    if (!t->src->supported) {
        fprintf(stderr, "profile: %s is not supported here: %s\n", t->src->name, t->src->reason);
        return EXIT_FAIL;
    }
    int st = t->at.pid ? attach_open(&t->at) : 0;
    t->iv = (struct interval){.src = t->src, .want = t->src->min_interval};
    if (st || (st = interval_set(&t->iv, privileged, 1, NULL, 0)) != 0)
        return st;
    struct pmc_log_config cfg = {RING_KB_TOP * 1024, 1};
    struct pmc_alloc a = {t->src->source, t->system ? PMC_MODE_SS : PMC_MODE_TS,
                          t->kernel ? PMC_F_LEVELS : PMC_F_USER, PMC_CPU_ANY,
                          t->iv.want == t->iv.in_force ? 0 : t->iv.want};
    NTSTATUS s = NtPmcConfigureLog(&cfg);
    t->log_on = NT_SUCCESS(s);
    if (NT_SUCCESS(s))
        s = NtPmcAllocate(&t->pmc, &a);
    if (NT_SUCCESS(s) && !t->system)
        s = NtPmcAttach(t->pmc, t->at.process);
    if (NT_SUCCESS(s))
        s = NtPmcStart(t->pmc);
    if (!NT_SUCCESS(s)) {
        samplelog_error("start", "top's sampling", s, NULL);
        return EXIT_FAIL;
    }
    t->missed0 = missed_ticks();
    return 0;
}

static struct top_img *image_of(struct top *t, uint32_t pid)
{
    for (unsigned i = 0; i < t->nimgs; i++)
        if (t->imgs[i].pid == pid)
            return &t->imgs[i];
    return NULL;
}

// The row of (image, key), added when new (named by name()); NULL when the
// table is full. Found by hashing: a sample costs no string comparison.
static struct top_fn *fn_row(struct top *t, const struct top_img *im, uint64_t key,
                             const char *name)
{
    uint64_t h = (key ^ (uint64_t)(uintptr_t)im) * 0x9E3779B97F4A7C15ull;
    for (unsigned i = (unsigned)(h >> 52) % SLOTS;; i = (i + 1) % SLOTS) {
        if (t->slots[i]) {
            struct top_fn *f = &t->fns[t->slots[i] - 1];
            if (f->key == key && f->image == im)
                return f;
            continue;
        }
        if (t->nfns == MAX_FUNCS)
            return NULL;
        struct top_fn *f = &t->fns[t->nfns];
        memset(f, 0, sizeof *f);
        f->image = im;
        f->key = key;
        strlcpy(f->module, im ? im->name : "?", sizeof f->module);
        if (name)
            strlcpy(f->name, name, sizeof f->name);
        else
            snprintf(f->name, sizeof f->name, "0x%lx", key);
        t->order[t->nfns] = f;
        t->slots[i] = (uint16_t)++t->nfns;
        return f;
    }
}

// n samples at ip counted to its function in image im (NULL: unnamed).
static void top_count(struct top *t, const struct top_img *im, uint64_t ip, uint64_t n)
{
    const struct elf_func *f = im && im->loaded > 0 ? elf_func_at(&im->elf, ip) : NULL;
    struct top_fn *row = fn_row(t, im, f ? f->addr : ip, f ? f->name : NULL);
    if (row)
        row->last += n, row->total += n;
    t->last += n;
    t->total += n;
}

// Whether the sample was held for its process's map record (a full table
// holds no more: those are counted unnamed).
static int top_hold(struct top *t, uint32_t pid, uint64_t ip)
{
    for (unsigned i = 0; i < t->nheld; i++)
        if (t->held[i].pid == pid && t->held[i].ip == ip)
            return (int)++t->held[i].n;
    if (t->nheld == MAX_HELD)
        return 0;
    t->held[t->nheld++] = (struct top_held){pid, t->refresh, ip, 1};
    return 1;
}

// pid's map record came: its held samples counted to their functions. With
// pid ~0u, those held since before the last refresh, unnamed.
static void top_release(struct top *t, uint32_t pid)
{
    const struct top_img *im = pid == ~0u ? NULL : image_of(t, pid);
    unsigned k = 0;
    for (unsigned i = 0; i < t->nheld; i++) {
        const struct top_held *h = &t->held[i];
        if (h->pid == pid || (pid == ~0u && h->refresh + 1 < t->refresh))
            top_count(t, im, h->ip, h->n);
        else
            t->held[k++] = *h;
    }
    t->nheld = k;
}

// A sample's IP counted to its function: the kernel's when it was in ring 0.
static void top_sample(struct top *t, const struct pmclog_sample *s)
{
    uint32_t pid = s->nkernel ? 0 : s->pid;
    const struct top_img *im = image_of(t, pid);
    if (!im && top_hold(t, pid, s->frames[0]))
        return;
    top_count(t, im, s->frames[0], 1);
}

// A map record: the program pid runs (a later exec replaces it).
static void top_map(struct top *t, const struct pmclog_map *m)
{
    struct top_img *im = image_of(t, m->pid);
    if (!im && t->nimgs < MAX_IMAGES)
        im = &t->imgs[t->nimgs++];
    if (!im)
        return;
    if (im->loaded > 0)
        elf_image_free(&im->elf);
    im->pid = m->pid;
    snprintf(im->name, sizeof im->name, "%.*s", (int)sizeof im->name - 1, m->name);
    im->loaded = NT_SUCCESS(elf_image_load(im->name, &im->elf)) ? 1 : -1;
    top_release(t, m->pid);
}

// Everything the log holds now. 0, or -1 when it cannot be read.
static int top_drain(struct top *t)
{
    for (int reads = 0; reads < 8; reads++) {
        size_t got = 0;
        if (!NT_SUCCESS(NtPmcReadLog(t->buf, DRAIN_BUF, &got)))
            return -1;
        if (!got)
            break;
        for (size_t pos = 0; pos + sizeof(struct pmclog_header) <= got;) {
            const struct pmclog_header *h = (const void *)(t->buf + pos);
            if (h->size < sizeof *h)
                break;
            if (h->type == PMCLOG_MAP)
                top_map(t, (const struct pmclog_map *)h);
            else if (h->type == PMCLOG_SAMPLE)
                top_sample(t, (const struct pmclog_sample *)h);
            else if (h->type == PMCLOG_LOST)
                t->lost += ((const struct pmclog_lost *)h)->count;
            pos += h->size;
        }
    }
    return 0;
}

static int by_last(const void *a, const void *b)
{
    const struct top_fn *x = *(const struct top_fn *const *)a,
                        *y = *(const struct top_fn *const *)b;
    int c = cmp_down(x->last, y->last);
    return c ? c : cmp_down(x->total, y->total);
}

// The screen: home, clear, the header, the functions of the last interval.
static void top_draw(struct top *t, uint64_t ns)
{
    t->refresh++;
    top_release(t, ~0u); // held a whole refresh: their map record is not coming
    uint64_t per_s = ns ? t->last * 1000000000 / ns : 0;
    printf("\033[H\033[2J");
    printf("profile top: %s, interval %lu %s, %s%s, every %lu s (refresh %u; q quits)\n",
           t->src->name, t->iv.in_force, t->src->units, t->system ? "whole machine" : t->at.name,
           t->kernel ? ", kernel and user" : ", user", t->seconds, t->refresh);
    printf(
        "samples: %lu/s, %lu in the last %lu.%03lu s, %lu in all; lost %lu; missed ticks %lu\n\n",
        per_s, t->last, ns / 1000000000, ns / 1000000 % 1000, t->total, t->lost,
        missed_ticks() - t->missed0);
    sort_array(t->order, t->nfns, sizeof *t->order, by_last);
    printf("%8s %8s %9s  %-16s %s\n", "Share", "Hits", "Total", "Module", "Function");
    for (unsigned i = 0; i < t->nfns && i < t->rows && t->order[i]->last; i++) {
        const struct top_fn *f = t->order[i];
        uint64_t h = t->last ? (f->last * 10000 + t->last / 2) / t->last : 0;
        printf("%5lu.%02lu%% %8lu %9lu  %-16s %s\n", h / 100, h % 100, f->last, f->total, f->module,
               f->name);
    }
    fflush(stdout);
    for (unsigned i = 0; i < t->nfns; i++)
        t->fns[i].last = 0;
    t->last = 0;
}

// Whether a q (or Q) was typed: the console polled, never waited for.
static int quit_typed(void)
{
    char c[16];
    size_t got = 0;
    if (!NT_SUCCESS(SysRead(0 | SYS_READ_NOWAIT, c, sizeof c, &got)))
        return 0;
    for (size_t i = 0; i < got; i++)
        if (c[i] == 'q' || c[i] == 'Q')
            return 1;
    return 0;
}

// Refresh until q, or until the process watched ends. 0 or EXIT_FAIL.
static int top_loop(struct top *t)
{
    for (;;) {
        uint64_t start = clock_ns(), now = start;
        while (now - start < t->seconds * 1000000000) {
            SysSleep(DRAIN_MS);
            if (top_drain(t) < 0)
                return EXIT_FAIL;
            if (quit_typed() || prof_interrupted()) // q, or Ctrl-C (main's notify mode)
                return 0;
            now = clock_ns();
        }
        top_draw(t, now - start);
        if (t->at.pid && prof_exited(t->at.pid)) {
            printf("profile: top: %s (pid %u) exited\n", t->at.name, t->at.pid);
            return 0;
        }
    }
}

static void top_close(struct top *t)
{
    if (t->pmc)
        NtClose(t->pmc);
    if (t->log_on)
        NtPmcConfigureLog(NULL);
    interval_restore(&t->iv);
    attach_close(&t->at);
    for (unsigned i = 0; i < t->nimgs; i++)
        if (t->imgs[i].loaded > 0)
            elf_image_free(&t->imgs[i].elf);
    free(t->buf);
    free(t->fns);
}

int profile_top_main(int argc, char **argv)
{
    static struct top t;
    memset(&t, 0, sizeof t);
    int st = top_parse(&t, argc, argv);
    if (st)
        return st;
    t.buf = malloc(DRAIN_BUF);
    t.fns = malloc(MAX_FUNCS * sizeof *t.fns);
    if (!t.buf || !t.fns) {
        fprintf(stderr, "profile: top: out of memory\n");
        st = EXIT_FAIL;
    } else if ((st = top_start(&t)) == 0) {
        st = top_loop(&t);
        printf("profile top: %lu samples in %u refreshes\n", t.total, t.refresh);
    }
    top_close(&t);
    return st;
}
