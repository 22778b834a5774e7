// profile: kernrate-style profiling from the shell.
//
//   profile sources                     every KPROFILE_SOURCE and its intervals
//   profile run [options] PROG [ARGS]   profile one program from start to exit
//   profile kernel [options] SECONDS    profile the kernel on every CPU (sudo)
//
// A run creates PROG suspended, puts one profile object per source over the
// executable PT_LOAD range of PROG's ELF file (and with -k a system-scope one
// over the kernel's), starts them, resumes PROG, waits for it, stops them and
// prints one report per source (lib/profreport.c). With -g each program
// histogram also leaves the machine as a gmon.out (lib/gmon.c).
#include "cli.h"
#include "stat.h"
#include <clock.h>
#include <ctype.h>
#include <elfsym.h>
#include <gmon.h>
#include <process.h>
#include "record.h"
#include "kernrate.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define MAX_SOURCES   8 // -s given at most this many times
#define DEFAULT_SHIFT 2 // 4-byte buckets: one per instruction or two
#define DEFAULT_TOP   20
#define ALL_CPUS      ((KAFFINITY)-1)

static const char usage_run[] = "usage: profile run [-s SOURCE[:INTERVAL]]... [-i INTERVAL] [-b "
                                "BUCKETSHIFT] [-k] [-n TOP] [-g] PROG [ARGS]";
static const char usage_kernel[] = "usage: profile kernel [-s SOURCE[:INTERVAL]]... [-i INTERVAL] "
                                   "[-b BUCKETSHIFT] [-n TOP] [-g] SECONDS";
static const char usage_all[] =
    "usage: profile sources | run ... | kernel ... | stat ... | record ... | report ... | help";

// Exit statuses: 2 for a command line that cannot work, 1 for a failure later.
#define EXIT_USAGE 2
#define EXIT_FAIL  1

// The source table, read once.
static struct sys_profile_source sources[ProfileSourceCount];
static uint32_t nsources;

// One source asked for, and what happened to its interval.
struct wanted {
    const struct sys_profile_source *src;
    uint64_t interval; // asked for; 0 = the default
    uint64_t in_force; // during the run
    uint64_t previous; // to restore afterwards
    int changed;       // we set it, so we restore it
};

struct options {
    struct wanted want[MAX_SOURCES];
    int nwant;
    uint64_t interval; // -i, 0 when absent
    uint32_t shift;
    unsigned top;
    int kernel, gmon;
    int first_arg; // argv index of PROG or SECONDS
};

// One line saying what is wrong, then the usage: exit status EXIT_USAGE.
PRINTF_LIKE(2, 3) static int usage_error(const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "profile: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s (see 'profile help')\n", usage);
    return EXIT_USAGE;
}

static const char *kind_name(uint32_t kind)
{
    static const char *const names[] = {
        [COUNTER_TIMER] = "timer",
        [COUNTER_FIXED] = "fixed",
        [COUNTER_GENERAL] = "general",
        [COUNTER_NONE] = "none",
    };
    return kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

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
            return usage_error(usage, "bad interval in -s %s", arg);
    }
    const struct sys_profile_source *src = prof_find_source(sources, nsources, name);
    if (!src)
        return usage_error(usage, "unknown source '%s' (the list: profile sources)", name);
    if (!src->supported) {
        fprintf(stderr, "profile: source %s is not supported here: %s\n", src->name, src->reason);
        fprintf(stderr, "%s (see 'profile sources')\n", usage);
        return EXIT_USAGE;
    }
    for (int i = 0; i < o->nwant; i++)
        if (o->want[i].src == src)
            return usage_error(usage, "source %s given twice", src->name);
    if (o->nwant == MAX_SOURCES)
        return usage_error(usage, "at most %d sources at once, -s %s is one too many", MAX_SOURCES,
                           arg);
    o->want[o->nwant++] = (struct wanted){.src = src, .interval = interval};
    return 0;
}

// Options up to the first word that is not one; flags names the optional
// flags this command takes besides -s -i -b -n ("kg" for run: -k and -g).
// Returns 0 or an exit status.
static int parse_options(int argc, char **argv, int first, const char *usage, const char *flags,
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
        uint64_t n = 0;
        int st = 0;
        switch (flag[1]) {
        case 's': st = add_source(o, value, usage); break;
        case 'i':
            if (prof_parse_number(value, &n) < 0 || n == 0)
                return usage_error(usage, "bad interval '%s'", value);
            o->interval = n;
            break;
        case 'b':
            if (prof_parse_number(value, &n) < 0 || n < 2 || n > 31)
                return usage_error(usage, "bucket shift '%s' is not 2..31", value);
            o->shift = (uint32_t)n;
            break;
        case 'n':
            if (prof_parse_number(value, &n) < 0 || n == 0 || n > 100000)
                return usage_error(usage, "bad count of functions '%s'", value);
            o->top = (unsigned)n;
            break;
        case 'k':
        case 'g':
            if (!strchr(flags, flag[1]))
                return usage_error(usage, "unknown option %s", flag);
            *(flag[1] == 'k' ? &o->kernel : &o->gmon) = 1;
            break;
        default: return usage_error(usage, "unknown option %s", flag);
        }
        if (st)
            return st;
        i += takes_value;
    }
    if (o->nwant == 0)
        o->want[o->nwant++] =
            (struct wanted){.src = prof_find_source(sources, nsources, "0")}; // ProfileTime
    o->first_arg = i;
    return 0;
}

// Each source gets its own interval, else -i, else its default (ProfileTime:
// the minimum, for a short program). Setting one needs the privilege: without
// it the interval in force is kept, with a note, unless one was asked for.
static int set_intervals(struct options *o, int privileged, char *note, size_t note_size)
{
    note[0] = '\0';
    for (int i = 0; i < o->nwant; i++) {
        struct wanted *w = &o->want[i];
        const struct sys_profile_source *s = w->src;
        int asked = w->interval || o->interval;
        uint64_t want = w->interval ? w->interval : o->interval;
        if (!asked)
            want = s->source == ProfileTime ? s->min_interval : s->default_interval;
        ULONG now = 0;
        NtQueryIntervalProfile((KPROFILE_SOURCE)s->source, &now);
        w->previous = w->in_force = now;
        if (want < s->min_interval || want > s->max_interval) {
            fprintf(stderr, "profile: interval %lu is outside %s's range %lu..%lu %s\n", want,
                    s->name, s->min_interval, s->max_interval, s->units);
            return EXIT_USAGE;
        }
        if (want == now)
            continue;
        if (!privileged) {
            if (asked) {
                fprintf(stderr,
                        "profile: setting %s's interval needs the system-profile "
                        "privilege (run under sudo); the interval in force is %u\n",
                        s->name, now);
                return EXIT_FAIL;
            }
            snprintf(note, note_size, "interval %u in force (the default %lu needs sudo to set)",
                     now, want);
            continue;
        }
        NTSTATUS st = NtSetIntervalProfile((ULONG)want, (KPROFILE_SOURCE)s->source);
        if (!NT_SUCCESS(st)) {
            fprintf(stderr, "profile: cannot set %s's interval to %lu: %s\n", s->name, want,
                    nt_status_name(st));
            return EXIT_FAIL;
        }
        w->changed = 1;
        NtQueryIntervalProfile((KPROFILE_SOURCE)s->source, &now);
        w->in_force = now;
    }
    return 0;
}

static void restore_intervals(struct options *o)
{
    for (int i = 0; i < o->nwant; i++)
        if (o->want[i].changed)
            NtSetIntervalProfile((ULONG)o->want[i].previous,
                                 (KPROFILE_SOURCE)o->want[i].src->source);
}

// ---------------------------------------------------------------------------
// Profile objects: one per (source, module).

struct profile {
    HANDLE handle;
    struct prof_range range;
    int started;
};

static int create_profile(struct profile *p, HANDLE process, const struct elf_image *img,
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

static void close_profile(struct profile *p)
{
    if (p->started)
        NtStopProfile(p->handle);
    if (p->handle)
        NtClose(p->handle);
    free(p->range.buckets);
    memset(p, 0, sizeof *p);
}

static int start_all(struct profile *ps, int n)
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

static void stop_all(struct profile *ps, int n)
{
    for (int i = 0; i < n; i++) {
        if (ps[i].started)
            NtStopProfile(ps[i].handle);
        ps[i].started = 0;
        SysProfileStats(ps[i].handle, &ps[i].range.stats);
    }
}

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
        snprintf(name, sizeof name, "%s.%s.gmon.out", r->module, w->src->name);
    else
        snprintf(name, sizeof name, "%s.gmon.out", r->module);
    uint32_t rate = w->src->source == ProfileTime ? (uint32_t)(10000000 / w->in_force) : 0;
    if (gmon_emit(name, r, rate) < 0)
        fprintf(stderr, "profile: out of memory for %s\n", name);
}

static void report_all(const struct options *o, struct profile *ps, int per_source,
                       const char *title, uint64_t elapsed_ns, const char *note)
{
    uint32_t ncpus = cpu_count();
    uint64_t periods = 0, missed = 0;
    struct sys_cpu_info cpu[64];
    uint32_t n = 0;
    if (NT_SUCCESS(SysCpuInfo(cpu, 64, &n)))
        for (uint32_t i = 0; i < n; i++) {
            periods += cpu[i].profile_ticks;
            missed += cpu[i].profile_ticks_skipped;
        }
    struct sys_info info;
    int approximate = NT_SUCCESS(SysInfo(&info)) && info.time_sampling_approximate;
    for (int k = 0; k < o->nwant; k++) {
        int time = o->want[k].src->source == ProfileTime;
        struct prof_range ranges[2];
        for (int m = 0; m < per_source; m++)
            ranges[m] = ps[k * per_source + m].range;
        struct prof_report rep = {
            .title = title,
            .source = o->want[k].src,
            .interval = o->want[k].in_force,
            .elapsed_ns = elapsed_ns,
            .ncpus = ncpus,
            .ranges = ranges,
            .nranges = (size_t)per_source,
            .top = o->top,
            .note = note && note[0] ? note : NULL,
            .periods = time ? periods : 0,
            .missed = time ? missed : 0,
            .approximate_time = time && approximate,
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

// A process left suspended by a failed run is killed: it is our child, not
// yet started, with the program's name.
static void kill_suspended_child(const char *name)
{
    static struct sys_process_info list[256];
    uint32_t count = 0, me = SysGetPid();
    if (!NT_SUCCESS(SysProcessList(list, 256, &count)))
        return;
    for (uint32_t i = 0; i < count && i < 256; i++)
        if (list[i].parent == me && list[i].state == PROC_SUSPENDED &&
            strncmp(list[i].name, name, PROCESS_NAME_MAX) == 0)
            SysKill(list[i].pid);
}

static void join_words(char *out, size_t size, int argc, char **argv)
{
    out[0] = '\0';
    for (int i = 0; i < argc; i++) {
        if (i)
            strlcpy(out + strlen(out), " ", size - strlen(out));
        strlcpy(out + strlen(out), argv[i], size - strlen(out));
    }
}

// ---------------------------------------------------------------------------
// The commands.

static int cmd_run(int argc, char **argv)
{
    struct options o;
    int st = parse_options(argc, argv, 2, usage_run, "kg", &o);
    if (st)
        return st;
    if (o.first_arg >= argc)
        return usage_error(usage_run, "%s", "no program to run");
    const char *prog = argv[o.first_arg];
    if (!program_exists(prog))
        return usage_error(usage_run, "no program '%s' in the ramdisk", prog);
    int privileged = prof_holds_privilege();
    if (o.kernel && !privileged) {
        fprintf(stderr, "profile: -k (the kernel, system scope) needs the system-profile "
                        "privilege: run 'sudo profile run -k ...'\n");
        return EXIT_FAIL;
    }

    static struct elf_image prog_img, kernel_img;
    NTSTATUS s = elf_image_load(prog, &prog_img);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: %s: cannot read its ELF symbols: %s\n", prog, nt_status_name(s));
        return EXIT_FAIL;
    }
    if (o.kernel && !NT_SUCCESS(s = elf_image_load("kernel", &kernel_img))) {
        fprintf(stderr, "profile: kernel: cannot read its ELF symbols: %s\n", nt_status_name(s));
        elf_image_free(&prog_img);
        return EXIT_FAIL;
    }
    char note[128];
    if ((st = set_intervals(&o, privileged, note, sizeof note)) != 0) {
        elf_image_free(&prog_img);
        elf_image_free(&kernel_img);
        return st;
    }

    int per_source = o.kernel ? 2 : 1, nprof = 0, status = EXIT_FAIL, exit_status = 0;
    struct profile ps[MAX_SOURCES * 2];
    HANDLE child = NULL;
    s = SysSpawn(prog, (const char *const *)&argv[o.first_arg], SPAWN_SUSPENDED, &child);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot start %s: %s\n", prog, nt_status_name(s));
        child = NULL;
        goto out;
    }
    for (int k = 0; k < o.nwant; k++) {
        if (create_profile(&ps[nprof], child, &prog_img, prog, o.shift, o.want[k].src) < 0)
            goto out;
        nprof++;
        if (o.kernel) {
            if (create_profile(&ps[nprof], NULL, &kernel_img, "kernel", o.shift, o.want[k].src) < 0)
                goto out;
            nprof++;
        }
    }
    if (start_all(ps, nprof) < 0)
        goto out;
    uint64_t t0 = clock_ns();
    s = SysResume(child);
    if (NT_SUCCESS(s))
        s = SysWait(child, &exit_status);
    uint64_t elapsed = clock_ns() - t0;
    stop_all(ps, nprof);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: running %s: %s\n", prog, nt_status_name(s));
        goto out;
    }
    if (exit_status == EXIT_STATUS_KILLED)
        printf("profile: %s was killed; the report covers what was sampled until then\n", prog);
    else
        printf("profile: %s exited with status %d\n", prog, exit_status);

    char title[160];
    join_words(title, sizeof title, argc - o.first_arg, argv + o.first_arg);
    report_all(&o, ps, per_source, title, elapsed, note);
    status = 0;
out:
    for (int i = 0; i < nprof; i++)
        close_profile(&ps[i]);
    if (child) {
        if (status)
            kill_suspended_child(prog);
        NtClose(child);
    }
    restore_intervals(&o);
    elf_image_free(&prog_img);
    elf_image_free(&kernel_img);
    return status;
}

static int cmd_kernel(int argc, char **argv)
{
    struct options o;
    int st = parse_options(argc, argv, 2, usage_kernel, "g", &o);
    if (st)
        return st;
    uint64_t seconds;
    if (o.first_arg >= argc)
        return usage_error(usage_kernel, "%s", "how many SECONDS?");
    if (o.first_arg + 1 < argc)
        return usage_error(usage_kernel, "unexpected word '%s'", argv[o.first_arg + 1]);
    if (prof_parse_number(argv[o.first_arg], &seconds) < 0 || seconds == 0 || seconds > 3600)
        return usage_error(usage_kernel, "'%s' is not a number of seconds (1..3600)",
                           argv[o.first_arg]);
    if (!prof_holds_privilege()) {
        fprintf(stderr, "profile: a kernel profile needs the system-profile privilege: "
                        "run 'sudo profile kernel ...'\n");
        return EXIT_FAIL;
    }
    static struct elf_image kernel_img;
    NTSTATUS s = elf_image_load("kernel", &kernel_img);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: kernel: cannot read its ELF symbols: %s\n", nt_status_name(s));
        return EXIT_FAIL;
    }
    char note[128];
    if ((st = set_intervals(&o, 1, note, sizeof note)) != 0) {
        elf_image_free(&kernel_img);
        return st;
    }
    struct profile ps[MAX_SOURCES];
    int nprof = 0, status = EXIT_FAIL;
    for (; nprof < o.nwant; nprof++)
        if (create_profile(&ps[nprof], NULL, &kernel_img, "kernel", o.shift, o.want[nprof].src) < 0)
            goto out;
    if (start_all(ps, nprof) < 0)
        goto out;
    uint64_t t0 = clock_ns();
    SysSleep(seconds * 1000);
    uint64_t elapsed = clock_ns() - t0;
    stop_all(ps, nprof);
    char title[64];
    snprintf(title, sizeof title, "kernel, %lu s, every CPU", seconds);
    report_all(&o, ps, 1, title, elapsed, note);
    status = 0;
out:
    for (int i = 0; i < nprof; i++)
        close_profile(&ps[i]);
    restore_intervals(&o);
    elf_image_free(&kernel_img);
    return status;
}

static int cmd_sources(int argc, char **argv)
{
    (void)argv;
    if (argc > 2)
        return usage_error("usage: profile sources", "%s", "sources takes no arguments");
    printf("%4s %-32s %-7s %10s %10s %10s %10s %-6s %s\n", "Src", "Name", "Kind", "Default",
           "Current", "Min", "Max", "Units", "Supported");
    for (uint32_t i = 0; i < nsources; i++) {
        const struct sys_profile_source *s = &sources[i];
        printf("%#4x %-32s %-7s %10lu %10lu %10lu %10lu %-6s %s%s\n", s->source, s->name,
               kind_name(s->kind), s->default_interval, s->interval, s->min_interval,
               s->max_interval, s->units, s->supported ? "yes" : "no: ", s->reason);
    }
    return 0;
}

static int cmd_help(int argc, char **argv)
{
    (void)argc, (void)argv;
    printf("%s\n%s\n", usage_run, usage_kernel);
    printf("usage: profile sources | help\n\n"
           "  sources        every profile source: number, name, counter kind, intervals, support\n"
           "  run            profile PROG from start to exit; one report per source\n"
           "  kernel         profile the kernel on every CPU for SECONDS (needs sudo)\n\n"
           "  -s SOURCE[:N]  a source by name (Time, ProfileTime, totalcycles...) or number,\n"
           "                 optionally with its own interval; repeat for several (default Time)\n"
           "  -i N           interval for sources without their own: 100 ns units for Time,\n"
           "                 events otherwise (default: Time's minimum, 1221 = 122.1 us;\n"
           "                 a counter's default interval). Setting it needs sudo: without,\n"
           "                 the interval in force is used and the report says so\n"
           "  -b SHIFT       bucket size 2^SHIFT bytes, 2..31 (default 2: 4-byte buckets)\n"
           "  -k             also the kernel's text, system scope, every CPU (needs sudo)\n"
           "  -n TOP         functions listed per module (default 20)\n"
           "  -g             also send each histogram as gmon.out on the console (between\n"
           "                 'gmon: begin' and 'gmon: end'; scripts/gmon-extract.py saves it;\n"
           "                 gprof reads it with the program's ELF, or build/kernel.elf)\n\n"
           "A short program wants the 1221 interval, which only sudo may set:\n"
           "  sudo profile run primes 300000\n\n"
           "Exit status: 0 when the report was printed (whatever PROG's status), 1 when\n"
           "profiling failed, 2 for a bad command line.\n");
    return 0;
}

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"sources", cmd_sources},        {"run", cmd_run}, {"kernel", cmd_kernel}, {"help", cmd_help},
    {"stat", profile_stat_main},     // counting (lib/profstat.c)
    {"record", profile_record_main}, // sampling with call chains, or --cswitch (lib/profrecord.c)
    {"report", profile_report_main},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "profile: which command?\n%s\n", usage_all);
        return EXIT_USAGE;
    }
    if (prof_load_sources(sources, &nsources) < 0)
        return EXIT_FAIL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, argv[1]) == 0)
            return commands[i].run(argc, argv);
    fprintf(stderr, "profile: unknown command '%s'\n%s\n", argv[1], usage_all);
    return EXIT_USAGE;
}
