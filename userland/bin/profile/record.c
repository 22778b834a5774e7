// `profile record` and `profile report` (see profrecord.h and docs/profile.md).
//
// record: configure the kernel's sample log, allocate one sampling PMC
// (process scope on PROG and its descendants, or system scope with -a),
// start it, run PROG (or wait SECONDS), drain the log into the file every
// DRAIN_MS, stop, drain the rest, append a trailer with the driver's
// statistics, release the log.
//
// report: read the file, symbolize every chain (callgraph.c), print.
#include <callgraph.h>
#include <clock.h>
#include <ctype.h>
#include "record.h"
#include "cli.h"
#include "stat.h"
#include <samplelog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define EXIT_USAGE 2
#define EXIT_FAIL  1
#define DRAIN_MS   20
#define DRAIN_BUF  (128u << 10)

static const char usage_record[] =
    "usage: profile record [-g] [-s SOURCE] [-i INTERVAL] [-k] [-a] [-o FILE] [-r RINGKB] "
    "[-d DEPTH] (PROG [ARGS] | -a SECONDS)";
static const char usage_report[] =
    "usage: profile report [--folded | --export] [--sort pid,cpu] [-n TOP] [FILE]";

PRINTF_LIKE(2, 3) static int usage(const char *u, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "profile: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s (see 'profile help')\n", u);
    return EXIT_USAGE;
}

// A source by name or number, copied into *out: 0, or -1 when there is none.
static int find_source(const char *text, struct sys_profile_source *out)
{
    static struct sys_profile_source rows[ProfileSourceCount];
    uint32_t n = 0;
    if (prof_load_sources(rows, &n) < 0)
        return -1;
    const struct sys_profile_source *s = prof_find_source(rows, n, text);
    if (!s)
        return -1;
    *out = *s;
    return 0;
}

static int exited(uint32_t pid)
{
    static struct sys_process_info list[256];
    uint32_t count = 0;
    if (!NT_SUCCESS(SysProcessList(list, 256, &count)))
        return 1;
    for (uint32_t i = 0; i < count && i < 256; i++)
        if (list[i].pid == pid)
            return list[i].state == PROC_ZOMBIE;
    return 1;
}

struct record_opts {
    int chain, kernel, system;
    const char *file;
    struct sys_profile_source src;
    uint64_t interval; // -i, 0 = the source's finest
    uint32_t ring_kb, depth;
    int first; // argv index of PROG or SECONDS
};

static int parse_record(int argc, char **argv, struct record_opts *o)
{
    memset(o, 0, sizeof *o);
    o->file = SAMPLELOG_DEFAULT_FILE;
    if (find_source("ProfileTime", &o->src))
        return usage(usage_record, "cannot read the source table");
    int i = 2;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (!strcmp(a, "-g")) {
            o->chain = 1;
        } else if (!strcmp(a, "-k")) {
            o->kernel = 1;
        } else if (!strcmp(a, "-a")) {
            o->system = 1;
        } else if (!strcmp(a, "-s") || !strcmp(a, "-i") || !strcmp(a, "-o") || !strcmp(a, "-r") ||
                   !strcmp(a, "-d")) {
            if (i + 1 >= argc)
                return usage(usage_record, "%s needs an argument", a);
            const char *arg = argv[++i];
            if (a[1] == 's') {
                if (find_source(arg, &o->src))
                    return usage(usage_record, "unknown source '%s'", arg);
            } else if (a[1] == 'o') {
                o->file = arg;
            } else if (prof_parse_number(arg, &v)) {
                return usage(usage_record, "%s wants a number, not '%s'", a, arg);
            } else if (a[1] == 'i') {
                o->interval = v;
            } else if (a[1] == 'r') {
                o->ring_kb = (uint32_t)v;
            } else {
                o->depth = (uint32_t)v;
            }
        } else {
            return usage(usage_record, "unknown option '%s'", a);
        }
    }
    if (i >= argc)
        return usage(usage_record, o->system ? "-a wants SECONDS or a program" : "no program");
    o->first = i;
    return 0;
}

static void join(char *out, size_t size, int argc, char **argv, int first)
{
    size_t pos = 0;
    out[0] = '\0';
    for (int i = first; i < argc && pos + 1 < size; i++)
        pos += (size_t)snprintf(out + pos, size - pos, "%s%s", i > first ? " " : "", argv[i]);
}

static int has_cswitch(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--cswitch") == 0)
            return 1;
    return 0;
}

int profile_record_main(int argc, char **argv)
{
    if (has_cswitch(argc, argv)) // counter values at context switches (lib/profstat.c)
        return profile_cswitch_record_main(argc, argv);
    struct record_opts o;
    int r = parse_record(argc, argv, &o);
    if (r)
        return r;
    if (!o.src.supported) {
        fprintf(stderr, "profile: %s is not supported here: %s\n", o.src.name, o.src.reason);
        return EXIT_FAIL;
    }
    uint64_t seconds = 0;
    int timed = o.system && prof_parse_number(argv[o.first], &seconds) == 0;
    int privileged = prof_holds_privilege();
    if ((o.system || o.kernel) && !privileged) {
        fprintf(stderr, "profile: %s needs the system-profile privilege (run under sudo)\n",
                o.system ? "-a" : "-k");
        return EXIT_FAIL;
    }
    // The interval: set the source's when we may (and put it back), else subsample.
    uint64_t want = o.interval ? o.interval : o.src.min_interval;
    ULONG in_force = 0, previous;
    NtQueryIntervalProfile((KPROFILE_SOURCE)o.src.source, &in_force);
    previous = in_force;
    int changed = 0;
    if (want < o.src.min_interval || want > o.src.max_interval) {
        fprintf(stderr, "profile: interval %lu is outside %s's range %lu..%lu\n", want, o.src.name,
                o.src.min_interval, o.src.max_interval);
        return EXIT_USAGE;
    }
    if (privileged && want != in_force &&
        NT_SUCCESS(NtSetIntervalProfile((ULONG)want, (KPROFILE_SOURCE)o.src.source))) {
        changed = 1;
        NtQueryIntervalProfile((KPROFILE_SOURCE)o.src.source, &in_force);
    }
    uint64_t count = want == in_force ? 0 : want;

    HANDLE child = 0, pmc = 0;
    uint32_t pid = 0;
    int status = 0, rc = EXIT_FAIL, log_on = 0;
    char command[128];
    join(command, sizeof command, argc, argv, o.first);
    if (timed)
        snprintf(command, sizeof command, "-a %lu (the whole machine for %lu s)", seconds, seconds);
    void *buf = malloc(DRAIN_BUF);
    struct pmc_log_config cfg = {o.ring_kb * 1024, o.depth};
    NTSTATUS s = buf ? NtPmcConfigureLog(&cfg) : STATUS_NO_MEMORY;
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot configure the sample log: %s\n", nt_status_name(s));
        goto out;
    }
    log_on = 1;
    if (!timed) {
        s = SysSpawn(argv[o.first], (const char *const *)&argv[o.first], SPAWN_SUSPENDED, &child);
        if (!NT_SUCCESS(s)) {
            fprintf(stderr, "profile: cannot start %s: %s\n", argv[o.first], nt_status_name(s));
            goto out;
        }
        SysProcessId(child, &pid);
    }
    struct pmc_alloc a = {
        .source = o.src.source,
        .mode = o.system ? PMC_MODE_SS : PMC_MODE_TS,
        .flags = (o.chain ? PMC_F_CALLCHAIN : 0) | (o.kernel || o.system ? PMC_F_KERNEL : 0) |
                 (o.system ? 0 : PMC_F_DESCENDANTS | PMC_F_LOG_PROCEXIT),
        .cpu = PMC_CPU_ANY,
        .count = count,
    };
    s = NtPmcAllocate(&pmc, &a);
    if (NT_SUCCESS(s) && !o.system)
        s = NtPmcAttach(pmc, child);
    if (NT_SUCCESS(s))
        s = SysTmpWrite(o.file, "", 0, TMP_TRUNCATE);
    if (NT_SUCCESS(s))
        s = NtPmcStart(pmc);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot start sampling: %s\n", nt_status_name(s));
        if (child)
            SysKill(pid);
        goto out;
    }
    uint64_t start = clock_ns();
    if (child)
        SysResume(child);
    long bytes = 0;
    for (;;) {
        SysSleep(DRAIN_MS);
        long got = samplelog_drain(o.file, buf, DRAIN_BUF);
        if (got < 0) {
            fprintf(stderr, "profile: cannot save the log to %s\n", o.file);
            break;
        }
        bytes += got;
        if (timed ? clock_ns() - start >= seconds * 1000000000ull : exited(pid))
            break;
    }
    NtPmcStop(pmc);
    NtPmcFlushLog();
    long got = samplelog_drain(o.file, buf, DRAIN_BUF);
    bytes += got > 0 ? got : 0;
    if (child)
        SysWait(child, &status);
    struct samplelog_trailer t = {.h = {.type = PMCLOG_TRAILER, .size = sizeof t}};
    t.source = o.src.source;
    t.mode = a.mode;
    t.flags = a.flags;
    t.interval = count ? count : in_force;
    NtPmcGetDriverStats(&t.stats);
    strlcpy(t.command, command, sizeof t.command);
    SysTmpWrite(o.file, &t, sizeof t, 0);
    uint64_t delivered = 0, logged = 0, lost = 0;
    for (unsigned c = 0; c < t.stats.ncpus && c < PMC_STATS_CPUS; c++) {
        delivered += t.stats.cpu[c].delivered;
        logged += t.stats.cpu[c].logged;
        lost += t.stats.cpu[c].lost;
        printf("record: cpu%u delivered %lu logged %lu lost %lu\n", c, t.stats.cpu[c].delivered,
               t.stats.cpu[c].logged, t.stats.cpu[c].lost);
    }
    printf("record: %s: %lu samples logged, %lu lost, %lu truncated chains, %lu bytes in %s\n",
           command, logged, lost, t.stats.chains_truncated, (unsigned long)bytes + sizeof t,
           o.file);
    if (child)
        printf("record: %s exited with status %d\n", argv[o.first], status);
    rc = delivered == logged + lost ? 0 : EXIT_FAIL;
out:
    if (pmc)
        NtClose(pmc);
    if (child)
        NtClose(child);
    if (log_on)
        NtPmcConfigureLog(NULL);
    if (changed)
        NtSetIntervalProfile(previous, (KPROFILE_SOURCE)o.src.source);
    free(buf);
    return rc;
}

int profile_report_main(int argc, char **argv)
{
    if (has_cswitch(argc, argv))
        return profile_cswitch_report_main(argc, argv);
    int folded = 0, export = 0, by_pid = 0, by_cpu = 0;
    uint64_t top = 15;
    const char *file = SAMPLELOG_DEFAULT_FILE;
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--folded")) {
            folded = 1;
        } else if (!strcmp(a, "--export")) {
            export = 1;
        } else if (!strcmp(a, "--sort") || !strcmp(a, "-n")) {
            if (i + 1 >= argc)
                return usage(usage_report, "%s needs an argument", a);
            const char *arg = argv[++i];
            if (a[1] == 'n') {
                if (prof_parse_number(arg, &top) || !top)
                    return usage(usage_report, "-n wants a positive number, not '%s'", arg);
                continue;
            }
            for (const char *k = arg; *k;) {
                if (!strncmp(k, "pid", 3))
                    by_pid = 1, k += 3;
                else if (!strncmp(k, "cpu", 3))
                    by_cpu = 1, k += 3;
                else
                    return usage(usage_report, "--sort takes pid, cpu or pid,cpu, not '%s'", arg);
                if (*k == ',')
                    k++;
            }
        } else {
            return usage(usage_report, "unknown option '%s'", a);
        }
    }
    if (i < argc)
        file = argv[i++];
    if (i < argc)
        return usage(usage_report, "one file at most");
    struct samplelog log;
    NTSTATUS s = samplelog_load(file, &log);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot read %s: %s (run 'profile record' first)\n", file,
                nt_status_name(s));
        return EXIT_FAIL;
    }
    struct callgraph *cg = callgraph_build(&log);
    if (!cg) {
        fprintf(stderr, "profile: out of memory reading %s\n", file);
        samplelog_free(&log);
        return EXIT_FAIL;
    }
    if (export) {
        callgraph_print_export(cg, &log);
    } else if (folded) {
        callgraph_print_folded(cg, "");
    } else {
        const struct samplelog_trailer *t = log.trailer;
        printf("===== profile report: %s =====\n", file);
        if (t) {
            uint64_t lost = 0;
            for (unsigned c = 0; c < t->stats.ncpus && c < PMC_STATS_CPUS; c++)
                lost += t->stats.cpu[c].lost;
            printf("Command     %s\n", t->command);
            printf("Source      %u, %lu units per sample, %s%s\n", t->source, t->interval,
                   t->mode == PMC_MODE_SS ? "system-wide" : "process and descendants",
                   t->flags & PMC_F_CALLCHAIN ? ", call chains" : "");
            printf("Samples     %lu (%lu lost, %lu chains truncated)\n", callgraph_samples(cg),
                   lost, t->stats.chains_truncated);
        } else {
            printf("Samples     %lu (recording did not finish)\n", callgraph_samples(cg));
        }
        printf("\n");
        if (by_pid || by_cpu) {
            callgraph_print_breakdown(cg, by_pid, by_cpu);
            printf("\n");
        }
        callgraph_print_flat(cg, (unsigned)top);
        printf("\n");
        callgraph_print_tree(cg, (unsigned)(top < 5 ? top : 5));
    }
    callgraph_free(cg);
    samplelog_free(&log);
    return 0;
}
