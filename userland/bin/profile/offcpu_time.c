// Off-CPU time: `profile record --off-cpu` and `profile report --off-cpu`.
//
// A sampling profiler sees only the time a program spends on a CPU. With
// --off-cpu the kernel also logs, for each switch-out of a target, the call
// chain and why it left (PMCLOG_OFFCPU: sleep, child, console, mutex, or
// runnable when it was preempted or yielded), and at the switch-in that ends
// the absence the time away (PMCLOG_ONCPU): Brendan Gregg's off-CPU analysis
// ("Off-CPU Analysis", brendangregg.com), perf record --off-cpu's
// offcpu-time event. The report adds the two pictures per process: time on
// CPU (its time in the recording less its time away, from the switch
// timestamps) and time away by reason, then the off-CPU stacks weighted by
// microseconds with the reason as their leaf.
#include <callgraph.h>
#include <nt.h>
#include <samplelog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "offcpu_time.h"

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

struct pid_times {
    uint32_t pid;
    uint64_t samples;
    uint64_t ns[WAIT_KINDS], switches[WAIT_KINDS], stopped[WAIT_KINDS];
    uint64_t born, died; // TSC of its PMCLOG_MAP (exec) and PMCLOG_EXIT; 0: none in the log
};

// What the whole log says of time: its TSC rate and record's marks (samplelog.h).
struct log_clock {
    uint64_t tsc_hz, start, stop; // 0: not in the log
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

#define MAX_PIDS 64 // the log names every process alive when it began

// A switch-out whose switch-in is in the log: its time away, by reason.
static void tally_away(const struct callgraph *cg, const struct pmclog_offcpu *r,
                       struct pid_times *row)
{
    const struct pmclog_oncpu *in = callgraph_offcpu_end(cg, r);
    if (in && row && r->reason < WAIT_KINDS) {
        row->ns[r->reason] += in->off_ns;
        row->switches[r->reason]++;
        row->stopped[r->reason] += (in->flags & PMCLOG_ONCPU_STOPPED) != 0;
    }
}

// The time base, record's marks, and each process's birth and exit.
static void tally_clock(const struct pmclog_header *h, struct log_clock *c, struct pid_times *t,
                        unsigned *n)
{
    if (h->type == PMCLOG_INITIALIZE) {
        c->tsc_hz = ((const struct pmclog_initialize *)h)->tsc_hz;
    } else if (h->type == PMCLOG_USER) {
        uint64_t mark = ((const struct pmclog_user *)h)->userdata;
        if (mark == SAMPLELOG_MARK_START)
            c->start = h->tsc;
        else if (mark == SAMPLELOG_MARK_STOP)
            c->stop = h->tsc;
    } else if (h->type == PMCLOG_MAP && ((const struct pmclog_map *)h)->pid) {
        struct pid_times *row = pid_row(t, n, MAX_PIDS, ((const struct pmclog_map *)h)->pid);
        if (row)
            row->born = h->tsc;
    } else if (h->type == PMCLOG_EXIT) {
        struct pid_times *row = pid_row(t, n, MAX_PIDS, ((const struct pmclog_exit *)h)->pid);
        if (row)
            row->died = h->tsc;
    }
}

// Samples and time away by reason, per process, and the log's clock.
static unsigned tally_pids(const struct callgraph *cg, const struct samplelog *log,
                           struct pid_times *t, struct log_clock *c)
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
            tally_away(cg, r, pid_row(t, &n, MAX_PIDS, r->pid));
        } else {
            tally_clock(h, c, t, &n);
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

static uint64_t away_count(const struct pid_times *p)
{
    uint64_t n = 0;
    for (unsigned r = 0; r < WAIT_KINDS; r++)
        n += p->switches[r];
    return n;
}

// Whether on-CPU time comes from the switches: the log has its time base and
// record's marks (a recording made before them has neither).
static int clock_known(const struct log_clock *c)
{
    return c->tsc_hz && c->start && c->stop > c->start;
}

// One process's time on CPU, in ns: from the switches when the log's clock
// is known (its time in the recording less its time away: exact however
// many ticks the host let the guest miss), else ProfileTime samples times
// the interval (100 ns units), which is low when ticks were missed.
static uint64_t on_cpu_ns(const struct pid_times *p, const struct log_clock *c,
                          const struct samplelog_trailer *tr)
{
    if (!clock_known(c))
        return tr && tr->source == ProfileTime ? p->samples * tr->interval * 100 : 0;
    uint64_t from = p->born > c->start ? p->born : c->start;
    uint64_t to = p->died && p->died < c->stop ? p->died : c->stop;
    uint64_t d = to > from ? to - from : 0;
    uint64_t life = d / c->tsc_hz * 1000000000ull + d % c->tsc_hz * 1000000000ull / c->tsc_hz;
    uint64_t away = 0;
    for (unsigned r = 0; r < WAIT_KINDS; r++)
        away += p->ns[r];
    return life > away ? life - away : 0;
}

// One process: time on CPU (on_cpu_ns), then time away by reason, as shares
// of their sum; the samples say where the time on CPU went.
static void print_pid(const struct pid_times *p, const struct samplelog_trailer *tr,
                      const struct log_clock *c, const char *name)
{
    uint64_t on = on_cpu_ns(p, c, tr), all = on;
    for (unsigned r = 0; r < WAIT_KINDS; r++)
        all += p->ns[r];
    printf("Pid %u %s: %lu.%03lu ms on and off CPU\n", p->pid, name, all / 1000000,
           all / 1000 % 1000);
    char count[64];
    int timed = clock_known(c) || (tr && tr->source == ProfileTime);
    snprintf(count, sizeof count, "%lu sample%s%s", p->samples, p->samples == 1 ? "" : "s",
             timed ? "" : " (not a time source)");
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

// Says where the on-CPU figures came from, and so what they are worth. A
// process attached to (-p) may have been away when the recording began: the
// kernel logs no switch-in for an absence it did not see begin
// (kind_sampling.c:offcpu_in), so that time counts as on CPU, and it says so.
static void print_time_basis(const struct log_clock *c, const struct samplelog_trailer *tr)
{
    if (clock_known(c))
        printf("\nOn-CPU time: each process's time in the recording less its time away, from\n"
               "the switch timestamps (exact, whatever ticks were missed); the samples say\n"
               "only where it went.\n%s",
               tr && !strncmp(tr->command, "-p ", 3)
                   ? "Attached (-p): its time before its first switch-out counts as on CPU,\n"
                     "whether it ran then or was already away.\n"
                   : "");
    uint64_t lost = tr ? tr->stats.records_dropped : 0;
    for (unsigned i = 0; tr && i < tr->stats.ncpus && i < PMC_STATS_CPUS; i++)
        lost += tr->stats.cpu[i].lost;
    if (clock_known(c) && lost)
        printf("%lu records were lost with a full ring: a switch among them leaves its time\n"
               "away counted as on CPU (record again with a larger ring: -r RINGKB).\n",
               lost);
    else if (tr && tr->source == ProfileTime)
        printf("\nOn-CPU time: samples times the interval (this recording has no start and\n"
               "stop marks): low when the guest missed ticks; record it again for exact times.\n");
    else
        printf("\nOn-CPU time: not known (this recording has no start and stop marks and its\n"
               "source does not count time); record it again for exact times.\n");
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
    struct log_clock c = {0};
    unsigned n = tally_pids(cg, log, t, &c);
    printf("===== profile report --off-cpu: %s =====\n", file);
    printf("Command     %s\n", tr ? tr->command : "(recording did not finish)");
    printf("Off-CPU     %lu switch-outs ended, %lu.%03lu ms away\n\n", callgraph_samples(cg),
           callgraph_total(cg) / 1000, callgraph_total(cg) % 1000);
    for (unsigned i = 0; i < n; i++) {
        char name[PROCESS_NAME_MAX];
        if (!t[i].samples && !t[i].died && !away_count(&t[i]))
            continue; // named by the log, never a target
        pid_name(log, t[i].pid, name, sizeof name);
        print_pid(&t[i], tr, &c, name);
    }
    print_time_basis(&c, tr);
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
                return number_error(usage_offcpu_report, "-n", argv[i], "a positive number");
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
    if (log.trailer && !(log.trailer->flags & PMC_F_LOG_OFFCPU)) {
        fprintf(stderr,
                "profile: %s has no off-CPU records: it was recorded without --off-cpu\n"
                "(record one with 'profile record --off-cpu PROG', or 'profile offcpu PROG')\n",
                file);
        samplelog_free(&log);
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
