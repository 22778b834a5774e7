// `profile stat` (perf-stat-like counting) over the counting-PMC system calls
// (lib/abi/pmc.h): PROG run N times with every event counted, then one line per
// event with perf's derived figures (CPUs utilized, IPC, miss ratios, /sec).
#include <clock.h>
#include <nt.h>
#include <process.h>
#include <statfmt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "cli.h"
#include "events.h"

#define MAX_EVENTS 16
#define MAX_RUNS   100
#define MAX_CPUS   64

struct row {
    uint32_t event;
    NTSTATUS status;          // of the allocation: not supported, ...
    uint64_t value[MAX_RUNS]; // scaled, per run
    uint64_t enabled, running;
    uint64_t cpu_value[MAX_CPUS]; // --per-cpu, last run
};

struct stat_opts {
    uint32_t events[MAX_EVENTS];
    unsigned nevents;
    int system, per_cpu;
    unsigned runs;
    int first_arg;
    struct attach at; // -p PID [-d SECONDS]
};

// The counters of one run: one per event, or with --per-cpu one per event and CPU.
typedef HANDLE counters[MAX_EVENTS][MAX_CPUS];

static void close_all(HANDLE *h, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (h[i])
            NtClose(h[i]);
}

// A run the privilege is missing for: every counter closed, the child killed and reaped.
static void stat_abandon(counters h, unsigned ncpu, HANDLE child)
{
    fprintf(stderr, "profile: -a and --per-cpu count the whole system: sudo\n");
    for (unsigned k = 0; k < MAX_EVENTS; k++)
        close_all(h[k], ncpu);
    uint32_t pid;
    if (NT_SUCCESS(SysProcessId(child, &pid)))
        SysKill(pid);
    SysResume(child);
    prof_wait(child, NULL);
    NtClose(child);
}

// Every event's counters allocated, attached to the child and started; an
// event that cannot be counted keeps its status in its row. -1 when the
// privilege is missing (the run is abandoned), else 0.
static int stat_open(const struct stat_opts *o, struct row *rows, counters h, unsigned ncpu,
                     HANDLE child)
{
    for (unsigned e = 0; e < o->nevents; e++) {
        for (unsigned c = 0; c < ncpu; c++) {
            uint32_t ev = rows[e].event;
            struct pmc_alloc a = {EV_BASE(ev), o->system ? PMC_MODE_SC : PMC_MODE_TC,
                                  (o->system ? 0 : PMC_F_DESCENDANTS) | event_pmc_flags(ev),
                                  o->per_cpu ? c : PMC_CPU_ANY, 0};
            NTSTATUS s = NtPmcAllocate(&h[e][c], &a);
            if (NT_SUCCESS(s) && !o->system)
                s = NtPmcAttach(h[e][c], child);
            if (NT_SUCCESS(s))
                s = NtPmcStart(h[e][c]);
            if (NT_SUCCESS(s))
                continue;
            rows[e].status = s;
            if (h[e][c])
                NtClose(h[e][c]);
            h[e][c] = 0;
            if (s == STATUS_PRIVILEGE_NOT_HELD) {
                stat_abandon(h, ncpu, child);
                return -1;
            }
            break;
        }
    }
    return 0;
}

// Each event's counters stopped, read, scaled for multiplexing and closed:
// row values for run r.
static void stat_collect(const struct stat_opts *o, struct row *rows, counters h, unsigned ncpu,
                         unsigned r)
{
    for (unsigned e = 0; e < o->nevents; e++) {
        uint64_t sum = 0;
        rows[e].enabled = rows[e].running = 0;
        for (unsigned c = 0; c < ncpu; c++) {
            if (!h[e][c])
                continue;
            NtPmcStop(h[e][c]);
            struct pmc_value v;
            if (NT_SUCCESS(NtPmcQuery(h[e][c], &v))) {
                uint64_t scaled = stat_scale(v.value, v.time_enabled, v.time_running);
                sum += scaled;
                rows[e].cpu_value[c] = scaled;
                rows[e].enabled += v.time_enabled;
                rows[e].running += v.time_running;
            }
            NtClose(h[e][c]);
        }
        rows[e].value[r] = sum;
    }
}

// One run of the program: every event counted, rows filled for run r.
static int stat_once(const struct stat_opts *o, char **argv, struct row *rows, unsigned r,
                     uint64_t *wall_ns, int *exit_status)
{
    unsigned ncpu = 1;
    struct sys_info info;
    if (o->per_cpu && NT_SUCCESS(SysInfo(&info)))
        ncpu = info.ncpus < MAX_CPUS ? info.ncpus : MAX_CPUS;
    static counters h;
    memset(h, 0, sizeof h);
    HANDLE child = o->at.process;
    NTSTATUS s = child ? STATUS_SUCCESS
                       : SysSpawn(argv[0], (const char *const *)argv, SPAWN_SUSPENDED, &child);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot start %s: %s\n", argv[0], nt_status_name(s));
        return -1;
    }
    if (stat_open(o, rows, h, ncpu, child) < 0)
        return -1;
    uint64_t t0 = clock_ns();
    int status = 0;
    if (o->at.process) { // attached: until -d SECONDS pass or it exits
        attach_wait((struct attach *)&o->at);
        status = o->at.exit_status;
    } else {
        SysResume(child);
        prof_wait(child, &status);
    }
    *wall_ns = clock_ns() - t0;
    *exit_status = status;
    stat_collect(o, rows, h, ncpu, r);
    if (!o->at.process)
        NtClose(child);
    return 0;
}

// ---------------------------------------------------------------------------
// The lines.

static int find_row(const struct row *rows, unsigned n, uint32_t ev)
{
    for (unsigned i = 0; i < n; i++)
        if (rows[i].event == ev && NT_SUCCESS(rows[i].status))
            return (int)i;
    return -1;
}

// An event that was not counted: why.
static void print_uncounted(const struct row *rw, const char *name)
{
    if (rw->status == STATUS_PMC_LEVEL_UNSUPPORTED) {
        printf("%19s      %-22s (it counts no ring apart: only task-clock and hardware events "
               "take :u or :k)\n",
               "<not supported>", name);
    } else if (rw->status == STATUS_PMC_SOURCE_UNSUPPORTED ||
               rw->status == STATUS_PMC_COUNTING_UNSUPPORTED) {
        const char *why = event_reason(rw->event);
        printf("%19s      %-22s (%s)\n", "<not supported>", name,
               *why ? why : nt_status_name(rw->status));
    } else {
        printf("%19s      %-22s (%s)\n", "<not counted>", name, nt_status_name(rw->status));
    }
}

// perf's comment after a count ("#  0.85 insn per cycle"), from the other
// rows it depends on; extra is left empty when there is none.
static void derived(const struct row *rows, unsigned n, const struct row *rw, uint64_t mean,
                    unsigned runs, char *extra, size_t size)
{
    uint32_t mods = rw->event & EV_LEVELS, ev = EV_BASE(rw->event); // ratios of like modifiers
    int tc = find_row(rows, n, PMC_EVENT_SW(PMC_SW_TASK_CLOCK) | mods);
    int cyc = find_row(rows, n, ProfileTotalCycles | mods);
    int br = find_row(rows, n, ProfileBranchInstructionRetired | mods);
    int refs = find_row(rows, n, ProfileLLCReference | mods);
    char r[32];
    if (ev == ProfileInstructionRetired && cyc >= 0) {
        stat_fmt_fixed(r, sizeof r, stat_ratio_x100(mean, stat_mean(rows[cyc].value, runs)), 2);
        snprintf(extra, size, "#  %s insn per cycle", r);
    } else if (ev == ProfileBranchMispredictsRetired && br >= 0) {
        stat_fmt_fixed(r, sizeof r, stat_ratio_x100(mean * 100, stat_mean(rows[br].value, runs)),
                       2);
        snprintf(extra, size, "#  %s%% of all branches", r);
    } else if (ev == ProfileLLCMisses && refs >= 0) {
        stat_fmt_fixed(r, sizeof r, stat_ratio_x100(mean * 100, stat_mean(rows[refs].value, runs)),
                       2);
        snprintf(extra, size, "#  %s%% of all cache refs", r);
    } else if (tc >= 0) {
        uint64_t task_ns = stat_mean(rows[tc].value, runs);
        if (task_ns) { // events per second of CPU time, as perf's "/sec"
            stat_fmt_fixed(r, sizeof r, stat_ratio(mean, task_ns, 1000000000000ull), 3);
            snprintf(extra, size, "#  %s /sec", r);
        }
    }
}

static void print_row(const struct row *rows, unsigned n, unsigned i, unsigned runs,
                      uint64_t wall_mean)
{
    const struct row *rw = &rows[i];
    const char *name = event_name(rw->event);
    char num[48], extra[96] = "";
    if (!NT_SUCCESS(rw->status)) {
        print_uncounted(rw, name);
        return;
    }
    uint64_t mean = stat_mean(rw->value, runs);
    if (EV_BASE(rw->event) == PMC_EVENT_SW(PMC_SW_TASK_CLOCK)) {
        stat_fmt_fixed(num, sizeof num, mean / 1000, 3); // ns -> msec with 3 decimals
        char cpus[24];
        stat_fmt_fixed(cpus, sizeof cpus, stat_ratio(mean, wall_mean, 1000), 3);
        snprintf(extra, sizeof extra, "#  %s CPUs utilized", cpus);
        printf("%14s msec      %-22s %s", num, name, extra);
    } else {
        snprintf(num, sizeof num, "%llu", (unsigned long long)mean);
        derived(rows, n, rw, mean, runs, extra, sizeof extra);
        printf("%19s      %-22s %s", num, name, extra);
    }
    unsigned permille = stat_running_permille(rw->running, rw->enabled);
    if (runs > 1) {
        char sd[16];
        stat_fmt_fixed(sd, sizeof sd, stat_rel_stderr_x100(rw->value, runs), 2);
        printf("  ( +- %s%% )", sd);
    }
    if (permille < 1000)
        printf("  [%u.%u%%]", permille / 10, permille % 10);
    printf("\n");
}

// " Performance counter stats for 'PROG ARGS' (system-wide) (N runs):"
static void print_title(const struct stat_opts *o, int argc, char **argv)
{
    int i = o->first_arg;
    if (o->at.pid) {
        printf("\n Performance counter stats for process id '%u' (%s):\n\n", o->at.pid, o->at.name);
        return;
    }
    printf("\n Performance counter stats for '");
    for (int k = i; k < argc; k++)
        printf("%s%s", k > i ? " " : "", argv[k]);
    printf("'%s", o->system ? " (system-wide)" : "");
    if (o->runs > 1)
        printf(" (%u runs)", o->runs);
    printf(":\n\n");
}

// --per-cpu: each counted event's value on each CPU in the last run.
static void print_per_cpu(const struct stat_opts *o, const struct row *rows)
{
    struct sys_info info;
    unsigned ncpu = NT_SUCCESS(SysInfo(&info)) ? info.ncpus : 1;
    printf("\n per CPU (last run):\n");
    for (unsigned e = 0; e < o->nevents; e++) {
        if (!NT_SUCCESS(rows[e].status))
            continue;
        for (unsigned c = 0; c < ncpu && c < MAX_CPUS; c++)
            printf("   CPU%-3u %19llu      %s\n", c, (unsigned long long)rows[e].cpu_value[c],
                   event_name(rows[e].event));
    }
}

// The elapsed time (mean of the runs), then each hardware event's time
// enabled and running (multiplexing).
static void print_times(const struct stat_opts *o, const struct row *rows, const uint64_t *wall)
{
    char secs[32];
    stat_fmt_fixed(secs, sizeof secs, stat_mean(wall, o->runs), 9);
    printf("\n %19s seconds time elapsed", secs);
    if (o->runs > 1) {
        char sd[16];
        stat_fmt_fixed(sd, sizeof sd, stat_rel_stderr_x100(wall, o->runs), 2);
        printf("  ( +- %s%% )", sd);
    }
    printf("\n");
    for (unsigned e = 0; e < o->nevents; e++)
        if (NT_SUCCESS(rows[e].status) && !PMC_EVENT_IS_SW(EV_BASE(rows[e].event))) {
            char en[32], ru[32];
            stat_fmt_fixed(en, sizeof en, rows[e].enabled / 1000, 3);
            stat_fmt_fixed(ru, sizeof ru, rows[e].running / 1000, 3);
            printf(" %s: time enabled %s ms, running %s ms\n", event_name(rows[e].event), en, ru);
        }
}

// ---------------------------------------------------------------------------
// The command line.

// -e EVENTS or -r N with its value v: 0 or EXIT_USAGE.
static int stat_value_option(struct stat_opts *o, const char *f, char *v)
{
    if (f[1] == 'e')
        return parse_event_list(v, o->events, &o->nevents, MAX_EVENTS, usage_stat) < 0 ? EXIT_USAGE
                                                                                       : 0;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    if (!*v || *end || n < 1 || n > MAX_RUNS)
        return usage_short(usage_stat, "-r '%s' is not a number of runs (1..%d)", v, MAX_RUNS);
    o->runs = (unsigned)n;
    return 0;
}

// perf's default set: every software event, then the main hardware ones.
static void default_events(struct stat_opts *o)
{
    for (unsigned e = 0; e < PMC_SW_COUNT; e++)
        o->events[o->nevents++] = PMC_EVENT_SW(e);
    static const KPROFILE_SOURCE hw[] = {ProfileTotalCycles, ProfileInstructionRetired,
                                         ProfileBranchInstructionRetired,
                                         ProfileBranchMispredictsRetired};
    for (size_t k = 0; k < sizeof hw / sizeof hw[0]; k++)
        o->events[o->nevents++] = hw[k];
}

static int parse_stat(int argc, char **argv, struct stat_opts *o)
{
    *o = (struct stat_opts){.runs = 1};
    int st = attach_extract(&argc, argv, 2, "er", 0, usage_stat, &o->at);
    if (st)
        return st;
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *f = argv[i];
        if (strcmp(f, "-a") == 0) {
            o->system = 1;
        } else if (strcmp(f, "--per-cpu") == 0) {
            o->per_cpu = o->system = 1;
        } else if (strcmp(f, "-e") == 0 || strcmp(f, "-r") == 0) {
            if (i + 1 >= argc)
                return usage_short(usage_stat, "option %s needs a value", f);
            int st = stat_value_option(o, f, argv[++i]);
            if (st)
                return st;
        } else {
            return usage_short(usage_stat, "unknown option %s", f);
        }
    }
    if (o->at.pid && (i < argc || o->system || o->runs > 1))
        return usage_short(usage_stat, "-p PID goes without PROG, -a, --per-cpu and -r");
    if (o->at.pid)
        o->first_arg = i;
    if (o->at.pid && !o->nevents)
        default_events(o);
    if (o->at.pid)
        return 0;
    if (i >= argc)
        return usage_short(usage_stat, "no program to run");
    if (!program_exists(argv[i]))
        return usage_short(usage_stat, "no program '%s' in the ramdisk", argv[i]);
    if (o->nevents == 0)
        default_events(o);
    o->first_arg = i;
    return 0;
}

int profile_stat_main(int argc, char **argv)
{
    struct stat_opts o;
    int st = parse_stat(argc, argv, &o);
    if (st)
        return st;
    static struct row rows[MAX_EVENTS];
    memset(rows, 0, sizeof rows);
    for (unsigned e = 0; e < o.nevents; e++)
        rows[e].event = o.events[e];
    uint64_t wall[MAX_RUNS];
    int status = 0;
    char words[40];
    if (o.at.pid && (st = attach_open(&o.at)) != 0)
        return st;
    for (unsigned r = 0; r < o.runs; r++) {
        if (stat_once(&o, &argv[o.first_arg], rows, r, &wall[r], &status) < 0)
            return EXIT_FAIL;
        if (prof_interrupted()) { // Ctrl-C: the runs so far, as perf stat -r
            o.runs = r + 1;
            break;
        }
    }
    print_title(&o, argc, argv);
    uint64_t wall_mean = stat_mean(wall, o.runs);
    for (unsigned e = 0; e < o.nevents; e++)
        print_row(rows, o.nevents, e, o.runs, wall_mean);
    if (o.per_cpu)
        print_per_cpu(&o, rows);
    print_times(&o, rows, wall);
    if (o.at.pid)
        attach_say_end(&o.at, "profile");
    else if (status != 0)
        printf(" (%s %s)\n", argv[o.first_arg], exit_words(status, words, sizeof words));
    attach_close(&o.at);
    return 0;
}
