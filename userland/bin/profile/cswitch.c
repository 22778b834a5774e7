// `profile record --cswitch` and `profile report --cswitch`: ETW-style
// counter values at every context switch. record configures the log, starts
// the counters (NtPmcCswitchLog), runs PROG, and drains the log's
// PMCLOG_CSWITCH records into /tmp/pmc.log as `profile record` drains
// samples; report reads the file back: a timeline of the first switches,
// each thread's totals, or a JSON trace.
#include <clock.h>
#include <process.h>
#include <samplelog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "cli.h"
#include "events.h"

#define MAX_PIDS  256
#define MAX_CPUS  64
#define DRAIN_MS  20
#define DRAIN_BUF (128u << 10)

// ---------------------------------------------------------------------------
// profile record --cswitch, and --pmc-events HOOK,...: a client of NT's
// per-logger PMC counters (a trace logger from NtPmcTraceLogger, its counter
// and event lists set with NtSetSystemInformation), PMCLOG_HOOK records.

static uint32_t hooks[ETW_MAX_PMC_EVENTS]; // --pmc-events: the HookIds
static unsigned nhooks;                    // 0: --cswitch alone (NtPmcCswitchLog)
static TRACEHANDLE logger;

static const struct {
    const char *name;
    uint32_t id[2];
} hook_names[] = {
    {"cswitch", {ETW_HOOK_CSWITCH, 0}},
    {"syscall", {ETW_HOOK_SYSCALL_ENTER, ETW_HOOK_SYSCALL_EXIT}},
    {"syscall-enter", {ETW_HOOK_SYSCALL_ENTER, 0}},
    {"syscall-exit", {ETW_HOOK_SYSCALL_EXIT, 0}},
    {"pagefault", {ETW_HOOK_PAGE_FAULT_DZ, 0}},
    {"pagefault-av", {ETW_HOOK_PAGE_FAULT_AV, 0}},
    {"exit", {ETW_HOOK_PROCESS_DELETE, 0}},
    {"profile", {ETW_HOOK_SAMPLED_PROFILE, 0}},
};

// --pmc-events cswitch,syscall,...: 0 or EXIT_USAGE.
static int parse_hooks(char *list)
{
    for (char *w = list, *next; w && *w; w = next) {
        next = strchr(w, ',');
        if (next)
            *next++ = '\0';
        size_t k = 0;
        while (k < sizeof hook_names / sizeof hook_names[0] && strcmp(hook_names[k].name, w))
            k++;
        if (k == sizeof hook_names / sizeof hook_names[0])
            return usage_short(usage_cswitch_record,
                               "unknown hook event '%s' (cswitch, syscall, syscall-enter, "
                               "syscall-exit, pagefault, pagefault-av, exit, profile)",
                               w);
        for (unsigned j = 0; j < 2 && hook_names[k].id[j]; j++) {
            if (nhooks == ETW_MAX_PMC_EVENTS)
                return usage_short(usage_cswitch_record, "more than %d hook events",
                                   ETW_MAX_PMC_EVENTS);
            hooks[nhooks++] = hook_names[k].id[j];
        }
    }
    return nhooks ? 0 : usage_short(usage_cswitch_record, "--pmc-events wants a list");
}

// Options, the events (default: task-clock, system-calls, page-faults) and
// the program: the argv index of PROG, or minus an exit status.
static int parse_cswitch_record(int argc, char **argv, uint32_t *ev, unsigned *n)
{
    int cswitch = 0, i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--cswitch") == 0) {
            cswitch = 1;
        } else if (strcmp(argv[i], "--pmc-events") == 0 && i + 1 < argc) {
            cswitch = 1;
            if (parse_hooks(argv[++i]))
                return -EXIT_USAGE;
        } else if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
            if (parse_event_list(argv[++i], ev, n, PMC_CSWITCH_MAX_EVENTS, usage_cswitch_record) <
                0)
                return -EXIT_USAGE;
            for (unsigned k = 0; k < *n; k++)
                if (ev[k] & EV_LEVELS)
                    return -usage_short(usage_cswitch_record,
                                        "%s: a switch record holds every ring's count: no :u or :k",
                                        event_name(ev[k]));
        } else {
            return -usage_short(usage_cswitch_record, "unknown option %s", argv[i]);
        }
    }
    if (!cswitch)
        return -usage_short(usage_cswitch_record, "record needs --cswitch here");
    if (i >= argc || !program_exists(argv[i]))
        return -usage_short(usage_cswitch_record, "%s '%s'",
                            i >= argc ? "no program to run" : "no program",
                            i >= argc ? "" : argv[i]);
    if (nhooks && *n > ETW_MAX_PMC_COUNTERS)
        return -usage_short(usage_cswitch_record, "--pmc-events: %d counters at most",
                            ETW_MAX_PMC_COUNTERS);
    if (*n == 0) {
        ev[(*n)++] = PMC_EVENT_SW(PMC_SW_TASK_CLOCK);
        ev[(*n)++] = PMC_EVENT_SW(PMC_SW_SYSCALLS);
        ev[(*n)++] = PMC_EVENT_SW(PMC_SW_PAGE_FAULTS);
    }
    return i;
}

// A trace logger with counters ev (in order) and the hooks, as a Windows
// program sets them: the counter list, then the event list.
static NTSTATUS logger_start(const uint32_t *ev, unsigned n)
{
    NTSTATUS s = NtPmcTraceLogger(PMC_LOGGER_CREATE, &logger);
    struct {
        uint32_t cls, pad;
        TRACEHANDLE handle;
        uint32_t list[ETW_MAX_PMC_COUNTERS];
    } in = {EventTraceProfileCounterListInformation, 0, logger, {0}};
    memcpy(in.list, ev, n * sizeof *ev);
    if (NT_SUCCESS(s))
        s = NtSetSystemInformation(SystemPerformanceTraceInformation, &in, 16 + 4 * n);
    in.cls = EventTraceProfileEventListInformation;
    memcpy(in.list, hooks, nhooks * sizeof *hooks);
    if (NT_SUCCESS(s))
        s = NtSetSystemInformation(SystemPerformanceTraceInformation, &in, 16 + 4 * nhooks);
    if (!NT_SUCCESS(s) && logger)
        NtPmcTraceLogger(PMC_LOGGER_CLOSE, &logger);
    return s;
}

static void record_stop(void)
{
    if (nhooks)
        NtPmcTraceLogger(PMC_LOGGER_CLOSE, &logger);
    else
        NtPmcCswitchLog(PMC_CSWITCH_STOP, NULL, 0);
}

// The log configured, the file emptied and the counters started for these
// events: 0, or EXIT_FAIL having said why (the log released).
static int cswitch_start(uint32_t *ev, unsigned n)
{
    struct pmc_log_config cfg = {0, 0};
    NTSTATUS s = NtPmcConfigureLog(&cfg);
    if (NT_SUCCESS(s) && !nhooks)
        s = NtPmcCswitchLog(PMC_CSWITCH_START, ev, n * sizeof ev[0]);
    else if (NT_SUCCESS(s))
        s = logger_start(ev, n);
    // The old file is replaced only once the counters run (their records wait
    // in the kernel's log): a refusal before leaves it whole.
    if (NT_SUCCESS(s) &&
        !NT_SUCCESS(s = SysTmpWrite(SAMPLELOG_DEFAULT_FILE, "", 0, TMP_TRUNCATE))) {
        record_stop();
        samplelog_error("write", SAMPLELOG_DEFAULT_FILE, s, NULL);
        NtPmcConfigureLog(NULL);
        return EXIT_FAIL;
    }
    if (NT_SUCCESS(s))
        return 0;
    for (unsigned k = 0; k < n && s == STATUS_NOT_SUPPORTED; k++)
        if (*event_reason(ev[k]))
            fprintf(stderr, "profile: %s: %s\n", event_name(ev[k]), event_reason(ev[k]));
    fprintf(stderr, "profile: cannot record %s: %s%s\n",
            nhooks ? "hook events" : "context switches", nt_status_name(s),
            s == STATUS_PRIVILEGE_NOT_HELD ? " (every CPU's switches: sudo)" : "");
    NtPmcConfigureLog(NULL);
    return EXIT_FAIL;
}

// PROG run to its end with the log drained into the file every DRAIN_MS;
// then the counters stopped, the rest drained, the log released. Bytes in
// the file, or the failing status (negative, as samplelog_drain's).
static long cswitch_run(HANDLE child, uint32_t pid, int *status)
{
    void *buf = malloc(DRAIN_BUF);
    long bytes = buf ? 0 : STATUS_NO_MEMORY;
    SysResume(child);
    while (bytes >= 0) {
        SysSleep(DRAIN_MS);
        long got = samplelog_drain(SAMPLELOG_DEFAULT_FILE, buf, DRAIN_BUF, SAMPLELOG_DRAIN_READS);
        bytes = got < 0 ? got : bytes + got;
        if (prof_exited(pid))
            break;
        prof_interrupted(); // taken: the child, of our group, ends by itself
    }
    prof_wait(child, status);
    record_stop();
    NtPmcFlushLog();
    long got = buf ? samplelog_drain(SAMPLELOG_DEFAULT_FILE, buf, DRAIN_BUF, 0) : STATUS_NO_MEMORY;
    NtPmcConfigureLog(NULL);
    free(buf);
    return bytes < 0 ? bytes : got < 0 ? got : bytes + got;
}

// The PMCLOG_CSWITCH records in the file.
static unsigned count_switches(void)
{
    struct samplelog log;
    if (!NT_SUCCESS(samplelog_load(SAMPLELOG_DEFAULT_FILE, &log)))
        return 0;
    unsigned n = 0;
    size_t pos = 0;
    for (const struct pmclog_header *h; (h = samplelog_next(&log, &pos));)
        n += h->type == (nhooks ? PMCLOG_HOOK : PMCLOG_CSWITCH);
    samplelog_free(&log);
    return n;
}

int profile_cswitch_record_main(int argc, char **argv)
{
    uint32_t ev[PMC_CSWITCH_MAX_EVENTS];
    unsigned n = 0;
    int i = parse_cswitch_record(argc, argv, ev, &n);
    if (i < 0)
        return -i;
    if (cswitch_start(ev, n))
        return EXIT_FAIL;
    int status = 0;
    uint32_t pid = 0;
    HANDLE child;
    long bytes = -1;
    NTSTATUS s = SysSpawn(argv[i], (const char *const *)&argv[i], SPAWN_SUSPENDED, &child);
    if (NT_SUCCESS(s)) {
        SysProcessId(child, &pid);
        bytes = cswitch_run(child, pid, &status);
        NtClose(child);
    } else {
        record_stop();
        NtPmcConfigureLog(NULL);
        fprintf(stderr, "profile: cannot run %s: %s\n", argv[i], nt_status_name(s));
        return EXIT_FAIL;
    }
    if (bytes < 0) {
        samplelog_error("save the log to", SAMPLELOG_DEFAULT_FILE, (NTSTATUS)bytes,
                        "the file keeps what was saved before");
        return EXIT_FAIL;
    }
    char words[40];
    if (nhooks)
        printf("profile: recorded %u hook events (PMCLOG_HOOK, %u counters each) while %s ran "
               "(pid %u, which %s) in %s\n",
               count_switches(), n, argv[i], (unsigned)pid, exit_words(status, words, sizeof words),
               SAMPLELOG_DEFAULT_FILE);
    else
        printf("profile: recorded %u context switches of %s (pid %u, which %s) in %s; "
               "'profile report --cswitch' shows them\n",
               count_switches(), argv[i], (unsigned)pid, exit_words(status, words, sizeof words),
               SAMPLELOG_DEFAULT_FILE);
    return 0;
}

// ---------------------------------------------------------------------------
// profile report --cswitch

struct thread_total {
    uint32_t pid;
    uint64_t switches_in;
    uint64_t value[PMC_CSWITCH_MAX_EVENTS];
};

// The report's state as the log goes by.
struct cswitch_report {
    int json;
    unsigned long lines; // -n: timeline lines
    struct thread_total tot[MAX_PIDS];
    unsigned ntot, nev;
    uint32_t ev[PMC_CSWITCH_MAX_EVENTS];
    const struct pmclog_cswitch *prev[MAX_CPUS]; // each CPU's previous switch
    uint64_t tsc_hz; // the log's time base (its PMCLOG_INITIALIZE record)
    unsigned long shown, total;
    int first_json;
};

// --cswitch, --json, -n LINES: 0 or EXIT_USAGE.
static int parse_cswitch_report(int argc, char **argv, struct cswitch_report *st)
{
    int cswitch = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--cswitch") == 0) {
            cswitch = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            st->json = 1;
        } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            char *end;
            st->lines = strtoul(argv[++i], &end, 10);
            if (*end)
                return usage_short(usage_cswitch_report, "bad -n '%s'", argv[i]);
        } else {
            return usage_short(usage_cswitch_report, "unknown option %s", argv[i]);
        }
    }
    if (!cswitch)
        return usage_short(usage_cswitch_report, "report needs --cswitch here");
    return 0;
}

// What the old thread of switch r counted since the CPU's previous switch p.
static void add_to_thread(struct cswitch_report *st, const struct pmclog_cswitch *r,
                          const struct pmclog_cswitch *p)
{
    unsigned k = 0;
    while (k < st->ntot && st->tot[k].pid != r->old_pid)
        k++;
    if (k == st->ntot && st->ntot < MAX_PIDS)
        st->tot[st->ntot++].pid = r->old_pid;
    if (k < st->ntot) {
        st->tot[k].switches_in++;
        for (unsigned e = 0; e < st->nev; e++)
            st->tot[k].value[e] += r->value[e] - p->value[e];
    }
}

// A record's time in ns: its TSC over the log's time base, in two steps so
// that nothing overflows.
static uint64_t ns_of(const struct cswitch_report *st, uint64_t tsc)
{
    uint64_t hz = st->tsc_hz ? st->tsc_hz : 1000000000u;
    return tsc / hz * 1000000000u + tsc % hz * 1000000000u / hz;
}

// The old thread's time on the CPU, from p to r, as a trace event ("ph":"X").
static void print_json_event(struct cswitch_report *st, const struct pmclog_cswitch *r,
                             const struct pmclog_cswitch *p)
{
    uint64_t from = ns_of(st, p->h.tsc), to = ns_of(st, r->h.tsc);
    printf("%s{\"name\":\"pid %u\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%llu.%03llu,"
           "\"dur\":%llu.%03llu,\"args\":{",
           st->first_json ? "" : ",\n", r->old_pid, r->h.cpu, (unsigned long long)(from / 1000),
           (unsigned long long)(from % 1000), (unsigned long long)((to - from) / 1000),
           (unsigned long long)((to - from) % 1000));
    for (unsigned e = 0; e < st->nev; e++)
        printf("%s\"v%u\":%llu", e ? "," : "", e, (unsigned long long)(r->value[e] - p->value[e]));
    printf("}}");
    st->first_json = 0;
}

// One line of the timeline (the first -n switches), under its heading.
static void print_timeline(struct cswitch_report *st, const struct pmclog_cswitch *r,
                           const struct pmclog_cswitch *p)
{
    const struct pmclog_header *h = &r->h;
    if (st->shown == 0)
        printf("timeline (first %lu switches; values: the CPU's change while the old "
               "thread ran):\n  %12s %4s %6s %6s\n",
               st->lines, "time_ns", "cpu", "old", "new");
    printf("  %12llu %4u %6u %6u", (unsigned long long)ns_of(st, h->tsc), h->cpu, r->old_pid,
           r->new_pid);
    for (unsigned e = 0; e < st->nev; e++)
        printf("  %llu", (unsigned long long)(r->value[e] - p->value[e]));
    printf("\n");
    st->shown++;
}

// One record of the log: a switch counts for its old thread from the CPU's
// previous switch on (the CPU's first switch has nothing before it).
static void one_record(struct cswitch_report *st, const struct pmclog_header *h)
{
    if (h->type == PMCLOG_INITIALIZE)
        st->tsc_hz = ((const struct pmclog_initialize *)h)->tsc_hz;
    if (h->type != PMCLOG_CSWITCH || h->cpu >= MAX_CPUS)
        return;
    const struct pmclog_cswitch *r = (const void *)h;
    st->total++;
    st->nev = r->nevents < PMC_CSWITCH_MAX_EVENTS ? r->nevents : PMC_CSWITCH_MAX_EVENTS;
    for (unsigned e = 0; e < st->nev; e++)
        st->ev[e] = r->event[e];
    const struct pmclog_cswitch *p = st->prev[h->cpu];
    st->prev[h->cpu] = r;
    if (!p)
        return; // the CPU's first switch: nothing before it was recorded
    add_to_thread(st, r, p);
    if (st->json)
        print_json_event(st, r, p);
    else if (st->shown < st->lines)
        print_timeline(st, r, p);
}

static void print_threads(const struct cswitch_report *st)
{
    printf("\n%lu context switches recorded; per thread (pid 0 = idle):\n  %6s %8s", st->total,
           "pid", "runs");
    for (unsigned e = 0; e < st->nev; e++)
        printf(" %18s", event_name(st->ev[e]));
    printf("\n");
    for (unsigned k = 0; k < st->ntot; k++) {
        printf("  %6u %8llu", st->tot[k].pid, (unsigned long long)st->tot[k].switches_in);
        for (unsigned e = 0; e < st->nev; e++)
            printf(" %18llu", (unsigned long long)st->tot[k].value[e]);
        printf("\n");
    }
}

int profile_cswitch_report_main(int argc, char **argv)
{
    static struct cswitch_report st;
    memset(&st, 0, sizeof st);
    st.lines = 40;
    st.first_json = 1;
    int rc = parse_cswitch_report(argc, argv, &st);
    if (rc)
        return rc;
    struct samplelog log;
    NTSTATUS s = samplelog_load(SAMPLELOG_DEFAULT_FILE, &log);
    if (!NT_SUCCESS(s)) {
        samplelog_error("read", SAMPLELOG_DEFAULT_FILE, s, NULL);
        return EXIT_FAIL;
    }
    if (st.json)
        printf("cswitch-json: begin\n{\"traceEvents\":[\n");
    size_t pos = 0;
    for (const struct pmclog_header *h; (h = samplelog_next(&log, &pos));)
        one_record(&st, h);
    if (st.json)
        printf("\n]}\ncswitch-json: end\n");
    else
        print_threads(&st);
    samplelog_free(&log);
    return 0;
}

// ---------------------------------------------------------------------------
// profile report --pmc-events: the PMCLOG_HOOK records of the file, by
// hook, and each system call's counter changes from its entry to its exit
// (pmctrace's per-region counts) for the calls that stayed on their CPU.

static const char *const syscall_names[SYSCALL_COUNT] = {
#define SYSCALL_NAME(num, name, nargs) [num] = #name,
    SYSCALL_LIST(SYSCALL_NAME)
#undef SYSCALL_NAME
};

struct hook_report {
    unsigned long by_hook[sizeof hook_names / sizeof hook_names[0]];
    unsigned long records, calls[SYSCALL_COUNT];
    uint64_t delta[SYSCALL_COUNT][ETW_MAX_PMC_COUNTERS];
    const struct pmclog_hook *enter[MAX_CPUS]; // each CPU's open system call
    unsigned ncounters;
};

static void hook_account(struct hook_report *hr, const struct pmclog_hook *r)
{
    hr->records++;
    hr->ncounters = r->ncounters < ETW_MAX_PMC_COUNTERS ? r->ncounters : ETW_MAX_PMC_COUNTERS;
    for (size_t k = 0; k < sizeof hook_names / sizeof hook_names[0]; k++)
        hr->by_hook[k] += hook_names[k].id[0] == r->hook_id && !hook_names[k].id[1];
    unsigned cpu = r->h.cpu < MAX_CPUS ? r->h.cpu : 0;
    const struct pmclog_hook *e = hr->enter[cpu];
    hr->enter[cpu] = r->hook_id == ETW_HOOK_SYSCALL_ENTER ? r : NULL; // anything else ends it
    if (r->hook_id != ETW_HOOK_SYSCALL_EXIT || !e || e->pid != r->pid || e->arg != r->arg ||
        r->arg >= SYSCALL_COUNT)
        return;
    hr->calls[r->arg]++;
    for (unsigned i = 0; i < hr->ncounters; i++)
        hr->delta[r->arg][i] += r->value[i] - e->value[i];
}

static void hook_print(const struct hook_report *hr)
{
    printf("%lu hook events, %u counters each (in the order of -e)\n", hr->records, hr->ncounters);
    printf("  HookId  event           records\n");
    for (size_t k = 0; k < sizeof hook_names / sizeof hook_names[0]; k++)
        if (!hook_names[k].id[1])
            printf("  0x%04x  %-14s %8lu\n", hook_names[k].id[0], hook_names[k].name,
                   hr->by_hook[k]);
    printf("system calls, entry to exit on one CPU: calls, then each counter's change\n");
    for (unsigned n = 0; n < SYSCALL_COUNT; n++) {
        if (!hr->calls[n])
            continue;
        printf("  %-24s %6lu", syscall_names[n] ? syscall_names[n] : "?", hr->calls[n]);
        for (unsigned i = 0; i < hr->ncounters; i++)
            printf(" %12llu", (unsigned long long)hr->delta[n][i]);
        printf("\n");
    }
}

int profile_hook_report_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct samplelog log;
    NTSTATUS s = samplelog_load(SAMPLELOG_DEFAULT_FILE, &log);
    if (!NT_SUCCESS(s)) {
        samplelog_error(
            "read", SAMPLELOG_DEFAULT_FILE, s,
            s == STATUS_OBJECT_NAME_NOT_FOUND ? "run 'profile record --pmc-events' first" : NULL);
        return EXIT_FAIL;
    }
    static struct hook_report hr;
    memset(&hr, 0, sizeof hr);
    size_t pos = 0;
    for (const struct pmclog_header *h; (h = samplelog_next(&log, &pos));)
        if (h->type == PMCLOG_HOOK && h->size >= sizeof(struct pmclog_hook))
            hook_account(&hr, (const struct pmclog_hook *)h);
    hook_print(&hr);
    samplelog_free(&log);
    return 0;
}
