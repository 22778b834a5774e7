// `profile record`: sampling with call chains into the sample log (see
// docs/profile.md). Configure the kernel's sample log, allocate one sampling
// PMC (process scope on PROG and its descendants, or system scope with -a),
// start it, run PROG (or wait SECONDS), drain the log into the file every
// DRAIN_MS, stop, drain the rest, append a trailer with the driver's
// statistics, release the log. `profile report` (report.c) reads the file.
#include <clock.h>
#include <process.h>
#include <samplelog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "cli.h"
#include "events.h"

#define DRAIN_MS  20
#define DRAIN_BUF (128u << 10)

struct record_opts {
    int chain, kernel, system, offcpu;
    uint32_t rings; // PMC_F_USER, PMC_F_KERNEL of the source's :u, :k; 0: none given
    const char *file;
    const struct sys_profile_source *src;
    uint64_t interval; // -i, 0 = the source's finest
    uint32_t ring_kb, depth;
    int first; // argv index of PROG or SECONDS
};

// One recording: what it was asked, what it holds, what it found.
struct record {
    struct record_opts o;
    int timed; // -a SECONDS: no program
    uint64_t seconds;
    struct interval iv;
    uint64_t count;      // the PMC's own events per sample; 0: the source's interval
    const char *command; // what was recorded, for the summary and the trailer
    char *joined;        // the command line, from join_words
    char timed_command[96];
    void *buf;  // DRAIN_BUF bytes for each drain
    int log_on; // the sample log is configured: released at the end
    HANDLE child, pmc;
    uint32_t pid;
    struct pmc_alloc alloc;
    long bytes;          // in the file, trailer aside
    NTSTATUS save_error; // the first write to the file that failed (it keeps what came before)
    int exit_status;
    struct attach at; // -p PID [-d SECONDS]: r->child is at.process, not ours
};

// -s SOURCE[:MODS] (or -e): the source and the rings of perf's modifiers.
static int source_option(struct record_opts *o, const char *arg)
{
    char name[64];
    const char *colon = strchr(arg, ':');
    size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
    uint32_t mods = 0;
    snprintf(name, sizeof name, "%.*s", (int)len, arg);
    if (len >= sizeof name || !(o->src = prof_find_source(name)))
        return usage_error(usage_record, "unknown source '%s'", arg);
    if (colon && parse_modifiers(colon + 1, &mods) < 0)
        return usage_error(usage_record,
                           "unknown modifier in '%s' (perf's: :u ring 3 only, :k ring 0 only, "
                           ":uk both)",
                           arg);
    o->rings = event_pmc_flags(mods);
    return 0;
}

// -s, -e, -o, -i, -r or -d with its value arg: 0 or EXIT_USAGE.
static int value_option(struct record_opts *o, const char *a, const char *arg)
{
    uint64_t v;
    if (a[1] == 's' || a[1] == 'e') {
        return source_option(o, arg);
    } else if (a[1] == 'o') {
        o->file = arg;
    } else if (prof_parse_number(arg, &v)) {
        return number_error(usage_record, a, arg, "a number");
    } else if (a[1] == 'i') {
        o->interval = v;
    } else if (a[1] == 'r') {
        o->ring_kb = (uint32_t)v;
    } else if (v < 1 || v > PMC_DEPTH_MAX) { // 0 would mean the kernel's default
        return usage_error(usage_record, "-d DEPTH: 1..%u frames, not '%s'", PMC_DEPTH_MAX, arg);
    } else {
        o->depth = (uint32_t)v;
    }
    return 0;
}

static int parse_record(int argc, char **argv, struct record_opts *o, int attached)
{
    memset(o, 0, sizeof *o);
    o->file = SAMPLELOG_DEFAULT_FILE;
    if (!(o->src = prof_find_source("ProfileTime")))
        return usage_error(usage_record, "cannot read the source table");
    int i = 2;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-g")) {
            o->chain = 1;
        } else if (!strcmp(a, "-k")) {
            o->kernel = 1;
        } else if (!strcmp(a, "-a")) {
            o->system = 1;
        } else if (!strcmp(a, "--host")) {
            o->file = SAMPLELOG_HOST;
        } else if (a[1] && strchr("soirde", a[1]) && !a[2]) {
            if (i + 1 >= argc)
                return usage_error(usage_record, "%s needs an argument", a);
            int st = value_option(o, a, argv[++i]);
            if (st)
                return st;
        } else {
            return usage_error(usage_record, "unknown option '%s'", a);
        }
    }
    o->first = i;
    if (i >= argc && attached)
        return 0; // -p PID: no PROG
    if (i >= argc)
        return usage_error(usage_record,
                           o->system ? "-a wants SECONDS or a program" : "no program");
    return 0;
}

// The command line, the source's support, the privilege -a and -k need, the
// interval (set when we may and put back at the end; else the PMC's own
// count) and the words the trailer keeps. 0 or an exit status.
static int record_prepare(struct record *r, int argc, char **argv)
{
    int st = attach_extract(&argc, argv, 2, "soirde", 1, usage_record, &r->at);
    if (!st)
        st = parse_record(argc, argv, &r->o, r->at.pid != 0);
    if (!st && r->at.pid && (r->o.first < argc || r->o.system))
        st = usage_error(usage_record, "-p PID goes without PROG and -a");
    if (st)
        return st;
    const struct sys_profile_source *src = r->o.src;
    if (!src->supported) {
        fprintf(stderr, "profile: %s is not supported here: %s\n", src->name, src->reason);
        return EXIT_FAIL;
    }
    r->timed = r->o.system && prof_parse_number(argv[r->o.first], &r->seconds) == 0;
    int privileged = prof_holds_privilege();
    int host = !strcmp(r->o.file, SAMPLELOG_HOST);
    if ((r->o.system || r->o.kernel || (r->o.rings & PMC_F_KERNEL) || host) && !privileged) {
        fprintf(stderr, "profile: %s needs the system-profile privilege (run under sudo)\n",
                r->o.system   ? "-a"
                : r->o.kernel ? "-k"
                : host        ? "--host (the host's file is the machine's one stream)"
                              : "sampling ring 0 (:k)");
        return EXIT_FAIL;
    }
    if (r->at.pid && (st = attach_open(&r->at)) != 0)
        return st;
    r->iv =
        (struct interval){.src = src, .want = r->o.interval ? r->o.interval : src->min_interval};
    if ((st = interval_set(&r->iv, privileged, 1, NULL, 0)) != 0)
        return st;
    r->count = r->iv.want == r->iv.in_force ? 0 : r->iv.want;
    r->joined = r->at.pid ? NULL : join_words(argc - r->o.first, argv + r->o.first);
    r->command = r->joined ? r->joined : argv[r->o.first];
    if (r->at.pid) {
        snprintf(r->timed_command, sizeof r->timed_command, "-p %u (%s)", r->at.pid, r->at.name);
        r->command = r->timed_command;
    }
    if (r->timed) {
        snprintf(r->timed_command, sizeof r->timed_command, "-a %lu (the whole machine for %lu s)",
                 r->seconds, r->seconds);
        r->command = r->timed_command;
    }
    return 0;
}

// The sample log configured and, unless timed, PROG created suspended. 0 or -1.
static int record_open(struct record *r, char **argv)
{
    r->buf = malloc(DRAIN_BUF);
    struct pmc_log_config cfg = {r->o.ring_kb * 1024, r->o.depth};
    NTSTATUS s = r->buf ? NtPmcConfigureLog(&cfg) : STATUS_NO_MEMORY;
    if (!NT_SUCCESS(s)) {
        samplelog_error("configure", "the sample log", s, NULL);
        return -1;
    }
    r->log_on = 1;
    if (r->timed)
        return 0;
    if (r->at.pid) {
        r->child = r->at.process, r->pid = r->at.pid;
        return 0;
    }
    const char *prog = argv[r->o.first];
    s = SysSpawn(prog, (const char *const *)&argv[r->o.first], SPAWN_SUSPENDED, &r->child);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot start %s: %s\n", prog, nt_status_name(s));
        return -1;
    }
    SysProcessId(r->child, &r->pid);
    return 0;
}

// The rings sampled: the source's modifiers; else both with -k or -a, ring 3 without.
static uint32_t record_rings(const struct record_opts *o)
{
    if (o->rings)
        return o->rings;
    return o->kernel || o->system ? PMC_F_LEVELS : PMC_F_USER;
}

// What to do about a refusal to begin the recording's file, or NULL.
static const char *record_file_hint(NTSTATUS s)
{
    if (s == STATUS_OBJECT_NAME_COLLISION)
        return "or record into another: -o /tmp/NAME";
    if (s == STATUS_NO_SUCH_DEVICE)
        return "this machine has no virtio console: `make run` and `make record` boot with one; "
               "without --host the recording goes to /tmp, and `profile report --export` sends "
               "it over the serial console";
    return NULL;
}

// The sampling PMC allocated, attached to PROG, started, over an empty file. 0 or -1.
static int record_start(struct record *r)
{
    const struct record_opts *o = &r->o;
    r->alloc = (struct pmc_alloc){
        .source = o->src->source,
        .mode = o->system ? PMC_MODE_SS : PMC_MODE_TS,
        .flags = (o->chain || o->offcpu ? PMC_F_CALLCHAIN : 0) | record_rings(o) |
                 (o->offcpu ? PMC_F_LOG_OFFCPU : 0) |
                 (o->system ? 0 : PMC_F_DESCENDANTS | PMC_F_LOG_PROCEXIT),
        .cpu = PMC_CPU_ANY,
        .count = r->count,
    };
    NTSTATUS s = NtPmcAllocate(&r->pmc, &r->alloc), file = STATUS_SUCCESS;
    if (NT_SUCCESS(s) && !o->system)
        s = NtPmcAttach(r->pmc, r->child);
    // The old file is replaced (mode 0: private to its owner), or the host's
    // recording begun, only once the PMC is allocated and attached: a
    // refusal before leaves it whole.
    if (NT_SUCCESS(s))
        s = file = samplelog_begin(o->file);
    if (NT_SUCCESS(s))
        s = NtPmcStart(r->pmc);
    if (!NT_SUCCESS(file)) {
        samplelog_error("write", o->file, file, record_file_hint(file));
    } else if (!NT_SUCCESS(s)) {
        samplelog_error("start", "sampling", s, NULL);
    }
    if (!NT_SUCCESS(s)) {
        if (r->child && !r->at.pid)
            SysKill(r->pid);
        return -1;
    }
    return 0;
}

// PROG resumed; the log drained into the file every DRAIN_MS until PROG has
// ended (or SECONDS have passed); then stopped, flushed and drained once more.
static void record_drain(struct record *r)
{
    uint64_t start = clock_ns();
    NtPmcWriteLog(SAMPLELOG_MARK_START); // on-CPU time runs from here (offcpu_time.c)
    if (r->child && !r->at.pid)
        SysResume(r->child);
    for (;;) {
        SysSleep(DRAIN_MS);
        long got = samplelog_drain(r->o.file, r->buf, DRAIN_BUF, SAMPLELOG_DRAIN_READS);
        if (got < 0) {
            r->save_error = (NTSTATUS)got;
            break;
        }
        r->bytes += got;
        if (prof_interrupted())
            break;
        if (r->at.pid  ? attach_done(&r->at)
            : r->timed ? clock_ns() - start >= r->seconds * 1000000000ull
                       : prof_exited(r->pid))
            break;
    }
    NtPmcWriteLog(SAMPLELOG_MARK_STOP);
    NtPmcStop(r->pmc);
    NtPmcFlushLog();
    long got = samplelog_drain(r->o.file, r->buf, DRAIN_BUF, 0); // stopped: all of it
    r->bytes += got > 0 ? got : 0;
    if (got < 0 && !r->save_error)
        r->save_error = (NTSTATUS)got;
    if (r->at.pid)
        attach_finish(&r->at);
    else if (r->child)
        prof_wait(r->child, &r->exit_status);
}

// The trailer appended to the file: the source, the PMC, the driver's statistics.
static void record_trailer(struct record *r, struct samplelog_trailer *t)
{
    *t = (struct samplelog_trailer){.h = {.type = PMCLOG_TRAILER, .size = sizeof *t}};
    t->source = r->o.src->source;
    t->mode = r->alloc.mode;
    t->flags = r->alloc.flags;
    t->interval = r->count ? r->count : r->iv.in_force;
    NtPmcGetDriverStats(&t->stats);
    strlcpy(t->command, r->command, sizeof t->command);
    t->bytes = (uint64_t)r->bytes;
    if (t->source == ProfileTime && prof_time_approximate())
        t->notes |= SAMPLELOG_NOTE_APPROXIMATE_TIME;
    NTSTATUS s = samplelog_save(r->o.file, t, sizeof *t);
    if (!NT_SUCCESS(s) && !r->save_error)
        r->save_error = s;
}

// One line per CPU and a summary: 0 when every delivered sample was logged
// or counted lost, else EXIT_FAIL.
static int record_summary(const struct record *r, const struct samplelog_trailer *t,
                          const char *prog)
{
    uint64_t delivered = 0, logged = 0, lost = 0;
    char words[40];
    for (unsigned c = 0; c < t->stats.ncpus && c < PMC_STATS_CPUS; c++) {
        delivered += t->stats.cpu[c].delivered;
        logged += t->stats.cpu[c].logged;
        lost += t->stats.cpu[c].lost;
        printf("record: cpu%u delivered %lu logged %lu lost %lu\n", c, t->stats.cpu[c].delivered,
               t->stats.cpu[c].logged, t->stats.cpu[c].lost);
    }
    int host = !strcmp(r->o.file, SAMPLELOG_HOST);
    printf("record: %s: %lu samples logged, %lu lost, %lu truncated chains, %lu bytes in %s\n",
           r->command, logged, lost, t->stats.chains_truncated,
           (unsigned long)r->bytes + sizeof *t + (host ? sizeof(struct samplelog_recording) : 0),
           host ? "the host's file" : r->o.file);
    if (r->at.pid)
        attach_say_end(&r->at, "record");
    else if (r->child)
        printf("record: %s %s\n", prog, exit_words(r->exit_status, words, sizeof words));
    if (t->notes & SAMPLELOG_NOTE_APPROXIMATE_TIME)
        fputs(note_approximate_time, stdout);
    return delivered == logged + lost ? 0 : EXIT_FAIL;
}

static void record_close(struct record *r)
{
    if (r->pmc)
        NtClose(r->pmc);
    if (r->child && !r->at.pid)
        NtClose(r->child);
    attach_close(&r->at);
    if (r->log_on)
        NtPmcConfigureLog(NULL);
    interval_restore(&r->iv);
    free(r->buf);
    free(r->joined);
}

int profile_record_main(int argc, char **argv)
{
    if (argv_has(argc, argv, "--cswitch") || argv_has(argc, argv, "--pmc-events")) // cswitch.c
        return profile_cswitch_record_main(argc, argv);
    static struct record r;
    memset(&r, 0, sizeof r);
    int offcpu = argv_take(&argc, argv, "--off-cpu"); // switch-outs and -ins too
    int rc = record_prepare(&r, argc, argv);
    r.o.offcpu = offcpu;
    if (!rc && offcpu && r.o.system)
        rc = usage_error(usage_record, "--off-cpu follows processes: PROG or -p PID, not -a");
    if (rc) {
        free(r.joined);
        return rc;
    }
    rc = EXIT_FAIL;
    if (record_open(&r, argv) == 0 && record_start(&r) == 0) {
        record_drain(&r);
        struct samplelog_trailer t;
        record_trailer(&r, &t);
        rc = record_summary(&r, &t, argv[r.o.first]);
        if (r.save_error) {
            samplelog_error("save the log to", r.o.file, r.save_error,
                            "the file keeps what was saved before");
            rc = EXIT_FAIL;
        }
    }
    record_close(&r);
    return rc;
}
