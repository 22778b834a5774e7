// `profile stat` (perf-stat-like counting) and `profile record/report --cswitch`
// (ETW-style counter values at every context switch), over the counting-PMC
// system calls (abi.h, numbers 70-79).
#include <ctype.h>
#include <nt.h>
#include <process.h>
#include "cli.h"
#include "stat.h"
#include <statfmt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define EXIT_USAGE 2
#define EXIT_FAIL  1
#define MAX_EVENTS 16
#define MAX_RUNS   100
#define MAX_CPUS   64

static const char usage_stat[] =
    "usage: profile stat [-e EVENT,...] [-a] [-r N] [--per-cpu] PROG [ARGS...]";
static const char usage_record[] = "usage: profile record --cswitch [-e EVENT,...] PROG [ARGS...]";
static const char usage_report[] = "usage: profile report --cswitch [--json] [-n LINES]";

static const char *const sw_names[PMC_SW_COUNT] = {
    "task-clock",   "context-switches",   "cpu-migrations", "page-faults",
    "system-calls", "profile-interrupts", "profile-ticks",
};

// perf's names for the hardware events, as KPROFILE_SOURCEs.
static const struct {
    const char *name;
    KPROFILE_SOURCE source;
} aliases[] = {
    {"cycles", ProfileTotalCycles},
    {"instructions", ProfileInstructionRetired},
    {"ref-cycles", ProfileUnhaltedReferenceCycles},
    {"cache-references", ProfileLLCReference},
    {"cache-misses", ProfileLLCMisses},
    {"branches", ProfileBranchInstructionRetired},
    {"branch-misses", ProfileBranchMispredictsRetired},
};

static struct sys_profile_source sources[ProfileSourceCount];
static uint32_t nsources;

static int same_name(const char *a, const char *b)
{
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b))
        a++, b++;
    return *a == *b;
}

// EVENT: a software name, a perf hardware name, a KPROFILE_SOURCE name (with or
// without "Profile") or number. 0 on success.
static int parse_event(const char *name, uint32_t *event)
{
    for (unsigned i = 0; i < PMC_SW_COUNT; i++)
        if (same_name(name, sw_names[i])) {
            *event = PMC_EVENT_SW(i);
            return 0;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (same_name(name, aliases[i].name)) {
            *event = aliases[i].source;
            return 0;
        }
    for (uint32_t i = 0; i < nsources; i++) {
        const char *n = sources[i].name;
        if (prof_same_source_name(name, n)) {
            *event = sources[i].source;
            return 0;
        }
    }
    char *end;
    unsigned long v = strtoul(name, &end, 0);
    if (*name && !*end && v < ProfileSourceCount) {
        *event = (uint32_t)v;
        return 0;
    }
    return -1;
}

// The row of KPROFILE_SOURCE ev (the list skips the table's end marker, so a
// row's index is not its value).
static const struct sys_profile_source *source_row(uint32_t ev)
{
    for (uint32_t i = 0; i < nsources; i++)
        if (sources[i].source == ev)
            return &sources[i];
    return NULL;
}

static const char *event_name(uint32_t ev)
{
    if (PMC_EVENT_IS_SW(ev))
        return sw_names[ev - PMC_EVENT_SW(0)];
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (aliases[i].source == ev)
            return aliases[i].name;
    const struct sys_profile_source *s = source_row(ev);
    return s ? s->name : "?";
}

static int parse_event_list(char *list, uint32_t *events, unsigned *n, unsigned max,
                            const char *usage)
{
    for (char *p = list; p && *p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*n >= max) {
            fprintf(stderr, "profile: at most %u events\n%s\n", max, usage);
            return -1;
        }
        if (parse_event(p, &events[*n]) < 0) {
            fprintf(stderr,
                    "profile: unknown event '%s' (software: task-clock, context-switches, "
                    "cpu-migrations, page-faults, system-calls, profile-interrupts, "
                    "profile-ticks; hardware: cycles, instructions, ... or a name from "
                    "'profile sources')\n",
                    p);
            return -1;
        }
        for (unsigned i = 0; i < *n; i++)
            if (events[i] == events[*n]) {
                fprintf(stderr, "profile: event '%s' given twice\n", p);
                return -1;
            }
        (*n)++;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

// ---- profile stat ----

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
};

static uint64_t now_ns(void)
{
    struct sys_clock c;
    SysClock(&c);
    return c.ns;
}

static void close_all(HANDLE *h, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (h[i])
            NtClose(h[i]);
}

// One run of the program: every event counted, rows filled for run r.
static int stat_once(const struct stat_opts *o, char **argv, struct row *rows, unsigned r,
                     uint64_t *wall_ns, int *exit_status)
{
    unsigned ncpu = 1;
    struct sys_info info;
    if (o->per_cpu && NT_SUCCESS(SysInfo(&info)))
        ncpu = info.ncpus < MAX_CPUS ? info.ncpus : MAX_CPUS;
    static HANDLE h[MAX_EVENTS][MAX_CPUS];
    memset(h, 0, sizeof h);
    HANDLE child = 0;
    NTSTATUS s = SysSpawn(argv[0], (const char *const *)argv, SPAWN_SUSPENDED, &child);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot start %s: %s\n", argv[0], nt_status_name(s));
        return -1;
    }
    for (unsigned e = 0; e < o->nevents; e++) {
        for (unsigned c = 0; c < ncpu; c++) {
            struct pmc_alloc a = {rows[e].event, o->system ? PMC_MODE_SC : PMC_MODE_TC,
                                  o->system ? 0 : PMC_F_DESCENDANTS, o->per_cpu ? c : PMC_CPU_ANY,
                                  0};
            s = NtPmcAllocate(&h[e][c], &a);
            if (NT_SUCCESS(s) && !o->system)
                s = NtPmcAttach(h[e][c], child);
            if (NT_SUCCESS(s))
                s = NtPmcStart(h[e][c]);
            if (!NT_SUCCESS(s)) {
                rows[e].status = s;
                if (h[e][c])
                    NtClose(h[e][c]);
                h[e][c] = 0;
                if (s == STATUS_PRIVILEGE_NOT_HELD) {
                    fprintf(stderr, "profile: -a and --per-cpu count the whole system: sudo\n");
                    SysKill(0);
                    for (unsigned k = 0; k < MAX_EVENTS; k++)
                        close_all(h[k], ncpu);
                    uint32_t pid;
                    if (NT_SUCCESS(SysProcessId(child, &pid)))
                        SysKill(pid);
                    SysResume(child);
                    SysWait(child, NULL);
                    NtClose(child);
                    return -1;
                }
                break;
            }
        }
    }
    uint64_t t0 = now_ns();
    SysResume(child);
    int status = 0;
    SysWait(child, &status);
    *wall_ns = now_ns() - t0;
    *exit_status = status;
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
    NtClose(child);
    return 0;
}

static const char *reason_of(uint32_t ev)
{
    const struct sys_profile_source *s = PMC_EVENT_IS_SW(ev) ? NULL : source_row(ev);
    if (s && !s->supported)
        return s->reason;
    return "";
}

static int find_row(const struct row *rows, unsigned n, uint32_t ev)
{
    for (unsigned i = 0; i < n; i++)
        if (rows[i].event == ev && NT_SUCCESS(rows[i].status))
            return (int)i;
    return -1;
}

static void print_row(const struct row *rows, unsigned n, unsigned i, unsigned runs,
                      uint64_t wall_mean)
{
    const struct row *rw = &rows[i];
    const char *name = event_name(rw->event);
    char num[48], extra[96] = "";
    if (!NT_SUCCESS(rw->status)) {
        if (rw->status == STATUS_PMC_SOURCE_UNSUPPORTED ||
            rw->status == STATUS_PMC_COUNTING_UNSUPPORTED) {
            const char *why = reason_of(rw->event);
            printf("%19s      %-22s (%s)\n", "<not supported>", name,
                   *why ? why : nt_status_name(rw->status));
        } else {
            printf("%19s      %-22s (%s)\n", "<not counted>", name, nt_status_name(rw->status));
        }
        return;
    }
    uint64_t mean = stat_mean(rw->value, runs);
    if (rw->event == PMC_EVENT_SW(PMC_SW_TASK_CLOCK)) {
        stat_fmt_fixed(num, sizeof num, mean / 1000, 3); // ns -> msec with 3 decimals
        char cpus[24];
        stat_fmt_fixed(cpus, sizeof cpus, stat_ratio_x100(mean, wall_mean) * 10, 3);
        snprintf(extra, sizeof extra, "#  %s CPUs utilized", cpus);
        printf("%14s msec      %-22s %s", num, name, extra);
    } else {
        snprintf(num, sizeof num, "%llu", (unsigned long long)mean);
        int tc = find_row(rows, n, PMC_EVENT_SW(PMC_SW_TASK_CLOCK));
        int cyc = find_row(rows, n, ProfileTotalCycles);
        int br = find_row(rows, n, ProfileBranchInstructionRetired);
        int refs = find_row(rows, n, ProfileLLCReference);
        char r[32];
        if (rw->event == ProfileInstructionRetired && cyc >= 0) {
            stat_fmt_fixed(r, sizeof r, stat_ratio_x100(mean, stat_mean(rows[cyc].value, runs)), 2);
            snprintf(extra, sizeof extra, "#  %s insn per cycle", r);
        } else if (rw->event == ProfileBranchMispredictsRetired && br >= 0) {
            stat_fmt_fixed(r, sizeof r,
                           stat_ratio_x100(mean * 100, stat_mean(rows[br].value, runs)), 2);
            snprintf(extra, sizeof extra, "#  %s%% of all branches", r);
        } else if (rw->event == ProfileLLCMisses && refs >= 0) {
            stat_fmt_fixed(r, sizeof r,
                           stat_ratio_x100(mean * 100, stat_mean(rows[refs].value, runs)), 2);
            snprintf(extra, sizeof extra, "#  %s%% of all cache refs", r);
        } else if (tc >= 0) {
            uint64_t task_ns = stat_mean(rows[tc].value, runs);
            if (task_ns) { // events per second of CPU time, as perf's "/sec"
                stat_fmt_fixed(r, sizeof r, stat_muldiv(mean, 1000000000000ull, task_ns), 3);
                snprintf(extra, sizeof extra, "#  %s /sec", r);
            }
        }
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

int profile_stat_main(int argc, char **argv)
{
    if (prof_load_sources(sources, &nsources) < 0)
        return EXIT_FAIL;
    struct stat_opts o = {.runs = 1};
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *f = argv[i];
        if (strcmp(f, "-a") == 0) {
            o.system = 1;
        } else if (strcmp(f, "--per-cpu") == 0) {
            o.per_cpu = o.system = 1;
        } else if (strcmp(f, "-e") == 0 || strcmp(f, "-r") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "profile: option %s needs a value\n%s\n", f, usage_stat);
                return EXIT_USAGE;
            }
            char *v = argv[++i];
            if (f[1] == 'e') {
                if (parse_event_list(v, o.events, &o.nevents, MAX_EVENTS, usage_stat) < 0)
                    return EXIT_USAGE;
            } else {
                char *end;
                unsigned long n = strtoul(v, &end, 10);
                if (!*v || *end || n < 1 || n > MAX_RUNS) {
                    fprintf(stderr, "profile: -r '%s' is not a number of runs (1..%d)\n%s\n", v,
                            MAX_RUNS, usage_stat);
                    return EXIT_USAGE;
                }
                o.runs = (unsigned)n;
            }
        } else {
            fprintf(stderr, "profile: unknown option %s\n%s\n", f, usage_stat);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "profile: no program to run\n%s\n", usage_stat);
        return EXIT_USAGE;
    }
    if (!program_exists(argv[i])) {
        fprintf(stderr, "profile: no program '%s' in the ramdisk\n%s\n", argv[i], usage_stat);
        return EXIT_USAGE;
    }
    if (o.nevents == 0) { // perf's default set: every software event, then the hardware ones
        for (unsigned e = 0; e < PMC_SW_COUNT; e++)
            o.events[o.nevents++] = PMC_EVENT_SW(e);
        static const KPROFILE_SOURCE hw[] = {ProfileTotalCycles, ProfileInstructionRetired,
                                             ProfileBranchInstructionRetired,
                                             ProfileBranchMispredictsRetired};
        for (size_t k = 0; k < sizeof hw / sizeof hw[0]; k++)
            o.events[o.nevents++] = hw[k];
    }
    static struct row rows[MAX_EVENTS];
    memset(rows, 0, sizeof rows);
    for (unsigned e = 0; e < o.nevents; e++)
        rows[e].event = o.events[e];
    uint64_t wall[MAX_RUNS];
    int status = 0;
    for (unsigned r = 0; r < o.runs; r++)
        if (stat_once(&o, &argv[i], rows, r, &wall[r], &status) < 0)
            return EXIT_FAIL;
    printf("\n Performance counter stats for '");
    for (int k = i; k < argc; k++)
        printf("%s%s", k > i ? " " : "", argv[k]);
    printf("'%s", o.system ? " (system-wide)" : "");
    if (o.runs > 1)
        printf(" (%u runs)", o.runs);
    printf(":\n\n");
    uint64_t wall_mean = stat_mean(wall, o.runs);
    for (unsigned e = 0; e < o.nevents; e++)
        print_row(rows, o.nevents, e, o.runs, wall_mean);
    if (o.per_cpu) {
        struct sys_info info;
        unsigned ncpu = NT_SUCCESS(SysInfo(&info)) ? info.ncpus : 1;
        printf("\n per CPU (last run):\n");
        for (unsigned e = 0; e < o.nevents; e++) {
            if (!NT_SUCCESS(rows[e].status))
                continue;
            for (unsigned c = 0; c < ncpu && c < MAX_CPUS; c++)
                printf("   CPU%-3u %19llu      %s\n", c, (unsigned long long)rows[e].cpu_value[c],
                       event_name(rows[e].event));
        }
    }
    char secs[32];
    stat_fmt_fixed(secs, sizeof secs, wall_mean, 9);
    printf("\n %19s seconds time elapsed", secs);
    if (o.runs > 1) {
        char sd[16];
        stat_fmt_fixed(sd, sizeof sd, stat_rel_stderr_x100(wall, o.runs), 2);
        printf("  ( +- %s%% )", sd);
    }
    printf("\n");
    for (unsigned e = 0; e < o.nevents; e++)
        if (NT_SUCCESS(rows[e].status) && !PMC_EVENT_IS_SW(rows[e].event)) {
            char en[32], ru[32];
            stat_fmt_fixed(en, sizeof en, rows[e].enabled / 1000, 3);
            stat_fmt_fixed(ru, sizeof ru, rows[e].running / 1000, 3);
            printf(" %s: time enabled %s ms, running %s ms\n", event_name(rows[e].event), en, ru);
        }
    if (status != 0)
        printf(" (%s exited with status %d)\n", argv[i], status);
    return 0;
}

// ---- profile record/report --cswitch ----

static int cswitch_read(uint8_t **out, size_t *len)
{
    size_t cap = 64 * 1024, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -1;
    for (;;) {
        // How many records so far: the kernel resumes from a record index.
        uint64_t index = 0;
        for (size_t off = 0; off < n;) {
            const struct pmc_log_header *h = (const void *)(buf + off);
            off += h->size;
            index++;
        }
        if (cap - n < 64 * 1024) {
            uint8_t *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return -1;
            }
            buf = b;
            cap *= 2;
        }
        uint64_t got = index;
        NTSTATUS s = NtPmcCswitchLog(PMC_CSWITCH_READ, buf + n, cap - n, &got);
        if (!NT_SUCCESS(s)) {
            fprintf(stderr, "profile: reading the counter log: %s\n", nt_status_name(s));
            free(buf);
            return -1;
        }
        if (got == 0)
            break;
        n += got;
    }
    *out = buf;
    *len = n;
    return 0;
}

int profile_cswitch_record_main(int argc, char **argv)
{
    if (prof_load_sources(sources, &nsources) < 0)
        return EXIT_FAIL;
    uint32_t ev[PMC_CSWITCH_MAX_EVENTS];
    unsigned n = 0;
    int cswitch = 0, i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--cswitch") == 0) {
            cswitch = 1;
        } else if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
            if (parse_event_list(argv[++i], ev, &n, PMC_CSWITCH_MAX_EVENTS, usage_record) < 0)
                return EXIT_USAGE;
        } else {
            fprintf(stderr, "profile: unknown option %s\n%s\n", argv[i], usage_record);
            return EXIT_USAGE;
        }
    }
    if (!cswitch) {
        fprintf(stderr, "profile: record needs --cswitch here\n%s\n", usage_record);
        return EXIT_USAGE;
    }
    if (i >= argc || !program_exists(argv[i])) {
        fprintf(stderr, "profile: %s '%s'\n%s\n", i >= argc ? "no program to run" : "no program",
                i >= argc ? "" : argv[i], usage_record);
        return EXIT_USAGE;
    }
    if (n == 0) {
        ev[n++] = PMC_EVENT_SW(PMC_SW_TASK_CLOCK);
        ev[n++] = PMC_EVENT_SW(PMC_SW_SYSCALLS);
        ev[n++] = PMC_EVENT_SW(PMC_SW_PAGE_FAULTS);
    }
    NTSTATUS s = NtPmcCswitchLog(PMC_CSWITCH_START, ev, n * sizeof ev[0], NULL);
    if (!NT_SUCCESS(s)) {
        for (unsigned k = 0; k < n && s == STATUS_NOT_SUPPORTED; k++)
            if (*reason_of(ev[k]))
                fprintf(stderr, "profile: %s: %s\n", event_name(ev[k]), reason_of(ev[k]));
        fprintf(stderr, "profile: cannot record context switches: %s%s\n", nt_status_name(s),
                s == STATUS_PRIVILEGE_NOT_HELD ? " (every CPU's switches: sudo)" : "");
        return EXIT_FAIL;
    }
    int status = 0;
    uint32_t pid = 0;
    HANDLE child;
    s = SysSpawn(argv[i], (const char *const *)&argv[i], 0, &child);
    if (NT_SUCCESS(s)) {
        SysProcessId(child, &pid);
        s = SysWait(child, &status);
        NtClose(child);
    }
    NtPmcCswitchLog(PMC_CSWITCH_STOP, NULL, 0, NULL);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot run %s: %s\n", argv[i], nt_status_name(s));
        return EXIT_FAIL;
    }
    uint8_t *buf;
    size_t len;
    if (cswitch_read(&buf, &len) < 0)
        return EXIT_FAIL;
    size_t records = len / sizeof(struct pmc_log_cswitch);
    free(buf);
    printf("profile: recorded about %u context switches of %s (pid %u, exit status %d); "
           "'profile report --cswitch' shows them\n",
           (unsigned)records, argv[i], (unsigned)pid, status);
    return 0;
}

#define MAX_PIDS 256

struct thread_total {
    uint32_t pid;
    uint64_t switches_in;
    uint64_t value[PMC_CSWITCH_MAX_EVENTS];
};

int profile_cswitch_report_main(int argc, char **argv)
{
    if (prof_load_sources(sources, &nsources) < 0)
        return EXIT_FAIL;
    int cswitch = 0, json = 0;
    unsigned long lines = 40;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--cswitch") == 0) {
            cswitch = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            char *end;
            lines = strtoul(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "profile: bad -n '%s'\n%s\n", argv[i], usage_report);
                return EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "profile: unknown option %s\n%s\n", argv[i], usage_report);
            return EXIT_USAGE;
        }
    }
    if (!cswitch) {
        fprintf(stderr, "profile: report needs --cswitch here\n%s\n", usage_report);
        return EXIT_USAGE;
    }
    uint8_t *buf;
    size_t len;
    if (cswitch_read(&buf, &len) < 0)
        return EXIT_FAIL;
    static struct thread_total tot[MAX_PIDS];
    unsigned ntot = 0, nev = 0;
    uint32_t ev[PMC_CSWITCH_MAX_EVENTS] = {0};
    const struct pmc_log_cswitch *prev[MAX_CPUS] = {0};
    unsigned long shown = 0, total = 0;
    if (json)
        printf("cswitch-json: begin\n{\"traceEvents\":[\n");
    int first_json = 1;
    for (size_t off = 0; off + sizeof(struct pmc_log_header) <= len;) {
        const struct pmc_log_header *h = (const void *)(buf + off);
        off += h->size;
        if (h->type != PMC_LOG_CSWITCH || h->cpu >= MAX_CPUS)
            continue;
        const struct pmc_log_cswitch *r = (const void *)h;
        total++;
        nev = r->nevents < PMC_CSWITCH_MAX_EVENTS ? r->nevents : PMC_CSWITCH_MAX_EVENTS;
        for (unsigned e = 0; e < nev; e++)
            ev[e] = r->event[e];
        const struct pmc_log_cswitch *p = prev[h->cpu];
        prev[h->cpu] = r;
        if (!p)
            continue; // the CPU's first switch: nothing before it was recorded
        unsigned k = 0;
        while (k < ntot && tot[k].pid != r->old_pid)
            k++;
        if (k == ntot && ntot < MAX_PIDS)
            tot[ntot++].pid = r->old_pid;
        if (k < ntot) {
            tot[k].switches_in++;
            for (unsigned e = 0; e < nev; e++)
                tot[k].value[e] += r->value[e] - p->value[e];
        }
        if (json) {
            printf("%s{\"name\":\"pid %u\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%llu.%03llu,"
                   "\"dur\":%llu.%03llu,\"args\":{",
                   first_json ? "" : ",\n", r->old_pid, h->cpu,
                   (unsigned long long)(p->h.ns / 1000), (unsigned long long)(p->h.ns % 1000),
                   (unsigned long long)((h->ns - p->h.ns) / 1000),
                   (unsigned long long)((h->ns - p->h.ns) % 1000));
            for (unsigned e = 0; e < nev; e++)
                printf("%s\"v%u\":%llu", e ? "," : "", e,
                       (unsigned long long)(r->value[e] - p->value[e]));
            printf("}}");
            first_json = 0;
        } else if (shown < lines) {
            if (shown == 0)
                printf("timeline (first %lu switches; values: the CPU's change while the old "
                       "thread ran):\n  %12s %4s %6s %6s\n",
                       lines, "time_ns", "cpu", "old", "new");
            printf("  %12llu %4u %6u %6u", (unsigned long long)h->ns, h->cpu, r->old_pid,
                   r->new_pid);
            for (unsigned e = 0; e < nev; e++)
                printf("  %llu", (unsigned long long)(r->value[e] - p->value[e]));
            printf("\n");
            shown++;
        }
    }
    if (json) {
        printf("\n]}\ncswitch-json: end\n");
        free(buf);
        return 0;
    }
    printf("\n%lu context switches recorded; per thread (pid 0 = idle):\n  %6s %8s", total, "pid",
           "runs");
    for (unsigned e = 0; e < nev; e++)
        printf(" %18s", event_name(ev[e]));
    printf("\n");
    for (unsigned k = 0; k < ntot; k++) {
        printf("  %6u %8llu", tot[k].pid, (unsigned long long)tot[k].switches_in);
        for (unsigned e = 0; e < nev; e++)
            printf(" %18llu", (unsigned long long)tot[k].value[e]);
        printf("\n");
    }
    free(buf);
    return 0;
}
