// `profile report`: the reports made from a sample log `profile record`
// (record.c) saved: read the file, symbolize every chain (lib/callgraph.c),
// print a summary, the functions by self and children time and the call tree,
// or the folded stacks (--folded) or the export block (--export).
#include <callgraph.h>
#include <clock.h>
#include <nt.h>
#include <samplelog.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "offcpu_time.h"

struct report_opts {
    int folded, export, host, by_pid, by_cpu;
    uint64_t top;
    const char *file;
};

// --sort KEYS: pid, cpu or pid,cpu. 0 or EXIT_USAGE.
static int parse_sort(struct report_opts *o, const char *arg)
{
    for (const char *k = arg; *k;) {
        if (!strncmp(k, "pid", 3))
            o->by_pid = 1, k += 3;
        else if (!strncmp(k, "cpu", 3))
            o->by_cpu = 1, k += 3;
        else
            return usage_error(usage_report, "--sort takes pid, cpu or pid,cpu, not '%s'", arg);
        if (*k == ',')
            k++;
    }
    return 0;
}

static int parse_report(int argc, char **argv, struct report_opts *o)
{
    *o = (struct report_opts){.top = 15, .file = SAMPLELOG_DEFAULT_FILE};
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--folded")) {
            o->folded = 1;
        } else if (!strcmp(a, "--export")) {
            o->export = 1;
        } else if (!strcmp(a, "--host")) {
            o->host = 1;
        } else if (!strcmp(a, "--sort") || !strcmp(a, "-n")) {
            if (i + 1 >= argc)
                return usage_error(usage_report, "%s needs an argument", a);
            const char *arg = argv[++i];
            if (a[1] != 'n') {
                int st = parse_sort(o, arg);
                if (st)
                    return st;
            } else if (prof_parse_number(arg, &o->top) || !o->top) {
                return number_error(usage_report, "-n", arg, "a positive number");
            }
        } else {
            return usage_error(usage_report, "unknown option '%s'", a);
        }
    }
    if (i < argc)
        o->file = argv[i++];
    if (i < argc)
        return usage_error(usage_report, "one file at most");
    return 0;
}

// The lines above the tables: what was recorded, how, how many samples.
static void print_summary(const struct report_opts *o, const struct callgraph *cg,
                          const struct samplelog *log)
{
    const struct samplelog_trailer *t = log->trailer;
    printf("===== profile report: %s =====\n", o->file);
    if (!t) {
        printf("Samples     %lu (recording did not finish)\n", callgraph_samples(cg));
        return;
    }
    uint64_t lost = 0;
    for (unsigned c = 0; c < t->stats.ncpus && c < PMC_STATS_CPUS; c++)
        lost += t->stats.cpu[c].lost;
    printf("Command     %s\n", t->command);
    printf("Source      %u, %lu units per sample, %s%s\n", t->source, t->interval,
           t->mode == PMC_MODE_SS ? "system-wide" : "process and descendants",
           t->flags & PMC_F_CALLCHAIN ? ", call chains" : "");
    printf("Samples     %lu (%lu lost, %lu chains truncated)\n", callgraph_samples(cg), lost,
           t->stats.chains_truncated);
}

// --host: the recording, as it is, to the host's file (the virtio console)
// behind a recording header, as `profile record --host` would have written
// it; with the rate, in the guest's time.
static int send_to_host(const struct report_opts *o, const struct samplelog *log)
{
    uint64_t start = clock_ns();
    NTSTATUS s = samplelog_begin(SAMPLELOG_HOST);
    if (NT_SUCCESS(s))
        s = samplelog_save(SAMPLELOG_HOST, log->data, log->size);
    if (!NT_SUCCESS(s)) {
        samplelog_error("write", SAMPLELOG_HOST, s,
                        s == STATUS_NO_SUCH_DEVICE ? "this machine has no virtio console; "
                                                     "--export sends it over the serial console"
                                                   : NULL);
        return EXIT_FAIL;
    }
    uint64_t us = (clock_ns() - start) / 1000;
    printf("report: %s: %lu bytes to the host's file in %lu us (%lu KB/s)\n", o->file,
           (unsigned long)log->size, us, us ? (unsigned long)(log->size * 1000 / us) : 0);
    return 0;
}

static void print_report(const struct report_opts *o, const struct callgraph *cg,
                         const struct samplelog *log)
{
    print_summary(o, cg, log);
    printf("\n");
    if (o->by_pid || o->by_cpu) {
        callgraph_print_breakdown(cg, o->by_pid, o->by_cpu);
        printf("\n");
    }
    callgraph_print_flat(cg, (unsigned)o->top);
    printf("\n");
    callgraph_print_tree(cg, (unsigned)(o->top < 5 ? o->top : 5));
    if (log->trailer && (log->trailer->notes & SAMPLELOG_NOTE_APPROXIMATE_TIME))
        fputs(note_approximate_time, stdout);
}

int profile_report_main(int argc, char **argv)
{
    if (argv_has(argc, argv, "--cswitch")) // counter values at context switches (cswitch.c)
        return profile_cswitch_report_main(argc, argv);
    if (argv_has(argc, argv, "--pmc-events")) // hook events (cswitch.c)
        return profile_hook_report_main(argc, argv);
    if (argv_has(argc, argv, "--off-cpu")) // time away from the CPU (offcpu_time.c)
        return profile_offcpu_report_main(argc, argv);
    struct report_opts o;
    int st = parse_report(argc, argv, &o);
    if (st)
        return st;
    struct samplelog log;
    NTSTATUS s = samplelog_load(o.file, &log);
    if (!NT_SUCCESS(s)) {
        samplelog_error("read", o.file, s,
                        s == STATUS_OBJECT_NAME_NOT_FOUND ? "run 'profile record' first" : NULL);
        return EXIT_FAIL;
    }
    if (o.host) {
        st = send_to_host(&o, &log);
        samplelog_free(&log);
        return st;
    }
    struct callgraph *cg = callgraph_build(&log);
    if (!cg) {
        fprintf(stderr, "profile: out of memory reading %s\n", o.file);
        samplelog_free(&log);
        return EXIT_FAIL;
    }
    if (o.export)
        callgraph_print_export(cg, &log);
    else if (o.folded)
        callgraph_print_folded(cg, "");
    else
        print_report(&o, cg, &log);
    callgraph_free(cg);
    samplelog_free(&log);
    return 0;
}
