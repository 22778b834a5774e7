// Off-CPU time: `profile record --off-cpu` and `profile report --off-cpu`.
//
// A sampling profiler sees only the time a program spends on a CPU. With
// --off-cpu the kernel also logs, for each switch-out of a target, the call
// chain and why it left (PMCLOG_OFFCPU: sleep, child, console, mutex, or
// runnable when it was preempted or yielded), and at the switch-in that ends
// the absence the time away (PMCLOG_ONCPU): Brendan Gregg's off-CPU analysis
// ("Off-CPU Analysis", brendangregg.com), perf record --off-cpu's
// offcpu-time event. The report adds the two pictures per process: time on
// CPU (samples times the interval) and time away by reason, then the
// off-CPU stacks weighted by microseconds with the reason as their leaf.
#include <callgraph.h>
#include <nt.h>
#include <samplelog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "offcpu.h"

static const char usage_offcpu_report[] =
    "usage: profile report --off-cpu [--folded] [-n TOP] [FILE]";

int profile_offcpu_main(int argc, char **argv)
{
    // profile offcpu ARGS: profile record --off-cpu ARGS, then the report.
    static char *rec[64];
    static char flag[] = "--off-cpu", cmd[] = "record", rep[] = "report";
    if (argc < 3 || argc > 62)
        return usage_error(
            "usage: profile offcpu [record options] (PROG [ARGS] | -p PID [-d SECONDS])",
            argc < 3 ? "no program" : "too many arguments");
    rec[0] = argv[0], rec[1] = cmd, rec[2] = flag;
    for (int i = 2; i < argc; i++)
        rec[i + 1] = argv[i];
    rec[argc + 1] = NULL;
    int st = profile_record_main(argc + 1, rec);
    if (st)
        return st;
    // The report reads what was recorded: record's -o FILE, if it was given
    // among the options before PROG (those of one letter take a value).
    char *file = NULL;
    for (int i = 2; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        int value = strchr("soirdep", argv[i][1]) && !argv[i][2] && i + 1 < argc;
        if (value && argv[i][1] == 'o')
            file = argv[i + 1];
        i += value;
    }
    char *report[] = {argv[0], rep, flag, file, NULL};
    return profile_offcpu_report_main(file ? 4 : 3, report);
}

int offcpu_take_flag(int *argc, char **argv)
{
    int found = 0, k = 2;
    for (int i = 2; i < *argc; i++) {
        if (!strcmp(argv[i], "--off-cpu"))
            found = 1;
        else
            argv[k++] = argv[i];
    }
    *argc = k;
    argv[k] = NULL;
    return found;
}

struct pid_times {
    uint32_t pid;
    uint64_t samples;
    uint64_t ns[WAIT_KINDS], switches[WAIT_KINDS], stopped[WAIT_KINDS];
};

// The row of pid, added when new; NULL when the table is full.
static struct pid_times *pid_row(struct pid_times *t, unsigned *n, unsigned max, uint32_t pid)
{
    for (unsigned i = 0; i < *n; i++)
        if (t[i].pid == pid)
            return &t[i];
    if (*n == max)
        return NULL;
    t[*n] = (struct pid_times){.pid = pid};
    return &t[(*n)++];
}

#define MAX_PIDS 32

// Samples and time away by reason, per process.
static unsigned tally_pids(const struct callgraph *cg, const struct samplelog *log,
                           struct pid_times *t)
{
    unsigned n = 0;
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(log, &pos))) {
        if (h->type == PMCLOG_SAMPLE) {
            struct pid_times *row =
                pid_row(t, &n, MAX_PIDS, ((const struct pmclog_sample *)h)->pid);
            if (row)
                row->samples++;
        } else if (h->type == PMCLOG_OFFCPU) {
            const struct pmclog_offcpu *r = (const struct pmclog_offcpu *)h;
            const struct pmclog_oncpu *in = callgraph_offcpu_end(cg, r);
            struct pid_times *row = pid_row(t, &n, MAX_PIDS, r->pid);
            if (in && row && r->reason < WAIT_KINDS) {
                row->ns[r->reason] += in->off_ns;
                row->switches[r->reason]++;
                row->stopped[r->reason] += (in->flags & PMCLOG_ONCPU_STOPPED) != 0;
            }
        }
    }
    return n;
}

static void print_share(const char *what, uint64_t ns, uint64_t all, const char *count)
{
    uint64_t h = all ? (ns * 10000 + all / 2) / all : 0;
    printf("  %-10s %10lu.%03lu ms %6lu.%02lu%%  %s\n", what, ns / 1000000, ns / 1000 % 1000,
           h / 100, h % 100, count);
}

// One process: time on CPU (ProfileTime samples times the interval, in
// 100 ns units), then time away by reason, as shares of their sum.
static void print_pid(const struct pid_times *p, const struct samplelog_trailer *tr,
                      const char *name)
{
    int timed = tr && tr->source == ProfileTime;
    uint64_t on = timed ? p->samples * tr->interval * 100 : 0, all = on;
    for (unsigned r = 0; r < WAIT_KINDS; r++)
        all += p->ns[r];
    printf("Pid %u %s: %lu.%03lu ms on and off CPU\n", p->pid, name, all / 1000000,
           all / 1000 % 1000);
    char count[64];
    snprintf(count, sizeof count, "%lu samples%s", p->samples, timed ? "" : " (not a time source)");
    print_share("on-CPU", on, all, count);
    for (unsigned r = 0; r < WAIT_KINDS; r++) {
        if (!p->switches[r])
            continue;
        int n = snprintf(count, sizeof count, "%lu switch%s", p->switches[r],
                         p->switches[r] == 1 ? "" : "es");
        if (p->stopped[r] && n > 0)
            snprintf(count + n, sizeof count - (size_t)n, ", %lu still away at the end",
                     p->stopped[r]);
        print_share(callgraph_reason_name(r), p->ns[r], all, count);
    }
}

// The process name of pid, from the log's map records.
static void pid_name(const struct samplelog *log, uint32_t pid, char *out, size_t size)
{
    size_t pos = 0;
    const struct pmclog_header *h;
    snprintf(out, size, "?");
    while ((h = samplelog_next(log, &pos)))
        if (h->type == PMCLOG_MAP && ((const struct pmclog_map *)h)->pid == pid)
            snprintf(out, size, "%.*s", (int)PROCESS_NAME_MAX - 1,
                     ((const struct pmclog_map *)h)->name);
}

static void print_offcpu_report(const char *file, const struct callgraph *cg,
                                const struct samplelog *log, unsigned top)
{
    const struct samplelog_trailer *tr = log->trailer;
    static struct pid_times t[MAX_PIDS];
    unsigned n = tally_pids(cg, log, t);
    printf("===== profile report --off-cpu: %s =====\n", file);
    printf("Command     %s\n", tr ? tr->command : "(recording did not finish)");
    printf("Off-CPU     %lu switch-outs ended, %lu.%03lu ms away\n\n", callgraph_samples(cg),
           callgraph_total(cg) / 1000, callgraph_total(cg) % 1000);
    for (unsigned i = 0; i < n; i++) {
        char name[PROCESS_NAME_MAX];
        pid_name(log, t[i].pid, name, sizeof name);
        print_pid(&t[i], tr, name);
    }
    printf("\nOff-CPU functions (us away; the reason is the leaf frame)\n");
    callgraph_print_flat(cg, top);
    printf("\nOff-CPU stacks by reason (root first; us away)\n");
    callgraph_print_folded(cg, "  ");
}

static int parse_offcpu_report(int argc, char **argv, int *folded, uint64_t *top, const char **file)
{
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--folded")) {
            *folded = 1;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            if (prof_parse_number(argv[++i], top) || !*top)
                return usage_error(usage_offcpu_report, "-n wants a positive number");
        } else if (strcmp(argv[i], "--off-cpu")) {
            return usage_error(usage_offcpu_report, "unknown option '%s'", argv[i]);
        }
    }
    if (i < argc)
        *file = argv[i++];
    return i < argc ? usage_error(usage_offcpu_report, "one file at most") : 0;
}

int profile_offcpu_report_main(int argc, char **argv)
{
    int folded = 0;
    uint64_t top = 15;
    const char *file = SAMPLELOG_DEFAULT_FILE;
    int st = parse_offcpu_report(argc, argv, &folded, &top, &file);
    if (st)
        return st;
    struct samplelog log;
    NTSTATUS s = samplelog_load(file, &log);
    if (!NT_SUCCESS(s)) {
        samplelog_error("read", file, s,
                        s == STATUS_OBJECT_NAME_NOT_FOUND ? "run 'profile record --off-cpu' first"
                                                          : NULL);
        return EXIT_FAIL;
    }
    struct callgraph *cg = callgraph_build_offcpu(&log);
    if (!cg) {
        fprintf(stderr, "profile: out of memory reading %s\n", file);
        samplelog_free(&log);
        return EXIT_FAIL;
    }
    if (folded)
        callgraph_print_folded(cg, "");
    else
        print_offcpu_report(file, cg, &log, (unsigned)top);
    callgraph_free(cg);
    samplelog_free(&log);
    return 0;
}
