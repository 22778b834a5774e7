// Profile objects for `profile run` and `profile kernel` (see histogram.h).
#include <gmon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "histogram.h"
#include "kernrate.h"

#define DEFAULT_SHIFT 2 // 4-byte buckets: one per instruction or two
#define DEFAULT_TOP   20
#define ALL_CPUS      ((KAFFINITY)-1)

// -s SOURCE[:INTERVAL]: checks the source exists, is supported, is not repeated.
static int add_source(struct options *o, const char *arg, const char *usage)
{
    char name[64];
    strlcpy(name, arg, sizeof name);
    char *colon = strchr(name, ':');
    uint64_t interval = 0;
    if (colon) {
        *colon = '\0';
        if (prof_parse_number(colon + 1, &interval) < 0 || interval == 0)
            return number_error(usage, "-s SOURCE:INTERVAL", colon + 1, "an interval of 1 or more");
    }
    const struct sys_profile_source *src = prof_find_source(name);
    if (!src)
        return usage_error(usage, "unknown source '%s' (the list: profile sources)", name);
    if (!src->supported) {
        fprintf(stderr, "profile: source %s is not supported here: %s\n", src->name, src->reason);
        fprintf(stderr, "%s (see 'profile sources')\n", usage);
        return EXIT_USAGE;
    }
    for (int i = 0; i < o->nwant; i++)
        if (o->want[i].iv.src == src)
            return usage_error(usage, "source %s given twice", src->name);
    if (o->nwant == MAX_SOURCES)
        return usage_error(usage, "at most %d sources at once, -s %s is one too many", MAX_SOURCES,
                           arg);
    o->want[o->nwant++] = (struct wanted){.interval = interval, .iv.src = src};
    return 0;
}

// An option with a number, checked against its range: 0 or EXIT_USAGE.
static int number_option(struct options *o, char flag, const char *value, const char *usage)
{
    uint64_t n = 0;
    int bad = prof_parse_number(value, &n) < 0;
    switch (flag) {
    case 'i':
        if (bad || n == 0)
            return number_error(usage, "-i", value, "an interval of 1 or more");
        o->interval = n;
        break;
    case 'b':
        if (bad || n < 2 || n > 31)
            return usage_error(usage, "bucket shift '%s' is not 2..31", value);
        o->shift = (uint32_t)n;
        break;
    default:
        if (bad || n == 0 || n > 100000)
            return usage_error(usage, "bad count of functions '%s'", value);
        o->top = (unsigned)n;
        break;
    }
    return 0;
}

// One option and its value (NULL when it takes none): 0 or EXIT_USAGE.
static int one_option(struct options *o, const char *flag, const char *value, const char *usage,
                      const char *flags)
{
    switch (flag[1]) {
    case 's': return add_source(o, value, usage);
    case 'i':
    case 'b':
    case 'n': return number_option(o, flag[1], value, usage);
    case 'k':
    case 'g':
        if (!strchr(flags, flag[1]))
            return usage_error(usage, "unknown option %s", flag);
        *(flag[1] == 'k' ? &o->kernel : &o->gmon) = 1;
        return 0;
    default: return usage_error(usage, "unknown option %s", flag);
    }
}

int parse_options(int argc, char **argv, int first, const char *usage, const char *flags,
                  struct options *o)
{
    *o = (struct options){.shift = DEFAULT_SHIFT, .top = DEFAULT_TOP};
    int i = first;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--") == 0) {
            i++;
            break;
        }
        if (flag[2] != '\0')
            return usage_error(usage, "unknown option %s", flag);
        int takes_value = strchr("sibn", flag[1]) != NULL;
        const char *value = takes_value ? argv[i + 1] : NULL;
        if (takes_value && !value)
            return usage_error(usage, "option %s needs a value", flag);
        int st = one_option(o, flag, value, usage, flags);
        if (st)
            return st;
        i += takes_value;
    }
    if (o->nwant == 0)
        o->want[o->nwant++] = (struct wanted){.iv.src = prof_find_source("0")}; // ProfileTime
    o->first_arg = i;
    return 0;
}

int set_intervals(struct options *o, int privileged, char *note, size_t note_size)
{
    note[0] = '\0';
    for (int i = 0; i < o->nwant; i++) {
        struct wanted *w = &o->want[i];
        const struct sys_profile_source *s = w->iv.src;
        w->iv.asked = w->interval || o->interval;
        w->iv.want = w->interval ? w->interval : o->interval;
        if (!w->iv.asked)
            w->iv.want = s->source == ProfileTime ? s->min_interval : s->default_interval;
        int st = interval_set(&w->iv, privileged, 0, note, note_size);
        if (st)
            return st;
    }
    return 0;
}

void restore_intervals(const struct options *o)
{
    for (int i = 0; i < o->nwant; i++)
        interval_restore(&o->want[i].iv);
}

// ---------------------------------------------------------------------------
// Profile objects: one per (source, module).

int create_profile(struct profile *p, HANDLE process, const struct elf_image *img,
                   const char *module, uint32_t shift, const struct sys_profile_source *src)
{
    memset(p, 0, sizeof *p);
    struct prof_range *r = &p->range;
    r->module = module;
    r->image = img;
    r->base = img->text_base;
    r->size = img->text_end - img->text_base;
    r->shift = shift;
    r->nbuckets = (r->size + (1ull << shift) - 1) >> shift;
    r->buckets = calloc(r->nbuckets, sizeof(ULONG));
    if (!r->buckets) {
        fprintf(stderr, "profile: out of memory for %lu buckets\n", r->nbuckets);
        return -1;
    }
    NTSTATUS s = NtCreateProfile(&p->handle, process, (void *)r->base, r->size, shift, r->buckets,
                                 (ULONG)(r->nbuckets * sizeof(ULONG)), (KPROFILE_SOURCE)src->source,
                                 ALL_CPUS);
    if (!NT_SUCCESS(s)) {
        if (s == STATUS_PRIVILEGE_NOT_HELD)
            fprintf(stderr, "profile: profiling the kernel needs the system-profile privilege: "
                            "run it under sudo\n");
        else
            fprintf(stderr, "profile: NtCreateProfile(%s, %s): %s\n", module, src->name,
                    nt_status_name(s));
        free(r->buckets);
        r->buckets = NULL;
        p->handle = NULL;
        return -1;
    }
    return 0;
}

void close_profile(struct profile *p)
{
    if (p->started)
        NtStopProfile(p->handle);
    if (p->handle)
        NtClose(p->handle);
    free(p->range.buckets);
    memset(p, 0, sizeof *p);
}

int start_all(struct profile *ps, int n)
{
    for (int i = 0; i < n; i++) {
        NTSTATUS s = NtStartProfile(ps[i].handle);
        if (!NT_SUCCESS(s)) {
            fprintf(stderr, "profile: NtStartProfile(%s): %s\n", ps[i].range.module,
                    nt_status_name(s));
            return -1;
        }
        ps[i].started = 1;
    }
    return 0;
}

void stop_all(struct profile *ps, int n)
{
    for (int i = 0; i < n; i++) {
        if (ps[i].started)
            NtStopProfile(ps[i].handle);
        ps[i].started = 0;
        SysProfileStats(ps[i].handle, &ps[i].range.stats);
    }
}

// ---------------------------------------------------------------------------
// Reports.

static uint32_t cpu_count(void)
{
    struct sys_info info;
    return NT_SUCCESS(SysInfo(&info)) ? info.ncpus : 0;
}

// The file name a histogram leaves under: PROG.gmon.out, or with several
// sources PROG.SOURCE.gmon.out.
static void export_gmon(const struct options *o, const struct wanted *w, const struct prof_range *r)
{
    char name[96];
    if (o->nwant > 1)
        snprintf(name, sizeof name, "%s.%s.gmon.out", r->module, w->iv.src->name);
    else
        snprintf(name, sizeof name, "%s.gmon.out", r->module);
    uint32_t rate = w->iv.src->source == ProfileTime ? (uint32_t)(10000000 / w->iv.in_force) : 0;
    if (gmon_emit(name, r, rate) < 0)
        fprintf(stderr, "profile: out of memory for %s\n", name);
}

// What every source's report takes from the machine: processors, ProfileTime's
// periods and missed ticks, whether time sampling is approximate.
static struct prof_report machine_report(void)
{
    struct prof_report rep = {.ncpus = cpu_count()};
    struct sys_cpu_info cpu[64];
    uint32_t n = 0;
    if (NT_SUCCESS(SysCpuInfo(cpu, 64, &n)))
        for (uint32_t i = 0; i < n; i++) {
            rep.periods += cpu[i].profile_ticks;
            rep.missed += cpu[i].profile_ticks_skipped;
        }
    struct sys_info info;
    rep.approximate_time = NT_SUCCESS(SysInfo(&info)) && info.time_sampling_approximate;
    return rep;
}

void report_all(const struct options *o, struct profile *ps, int per_source, const char *title,
                uint64_t elapsed_ns, const char *note)
{
    const struct prof_report machine = machine_report();
    for (int k = 0; k < o->nwant; k++) {
        int time = o->want[k].iv.src->source == ProfileTime;
        struct prof_range ranges[2];
        for (int m = 0; m < per_source; m++)
            ranges[m] = ps[k * per_source + m].range;
        struct prof_report rep = {
            .title = title,
            .source = o->want[k].iv.src,
            .interval = o->want[k].iv.in_force,
            .elapsed_ns = elapsed_ns,
            .ncpus = machine.ncpus,
            .ranges = ranges,
            .nranges = (size_t)per_source,
            .top = o->top,
            .note = note && note[0] ? note : NULL,
            .periods = time ? machine.periods : 0,
            .missed = time ? machine.missed : 0,
            .approximate_time = time && machine.approximate_time,
        };
        prof_report_print(&rep);
    }
    if (!o->gmon)
        return;
    printf("\n");
    for (int k = 0; k < o->nwant; k++)
        for (int m = 0; m < per_source; m++)
            export_gmon(o, &o->want[k], &ps[k * per_source + m].range);
}
