// pmc: look at the profiling hardware layer from the shell.
//
//   pmc info                        CPUID leaves decoded, the interface chosen, counters in use
//   pmc trace on|off|clear          record every HAL step and PMU register access (sudo)
//   pmc trace show                  print what was recorded since the last read, every CPU
//   pmc trace [-a] [-v] CMD [ARGS]  clear, on, run CMD, off, then explain what was recorded
//   pmc control [-L] [-l] [-s] [-c CPU|*] [-d ROW|*] [-e ROW|*] ...
//                                   pmccontrol(8): classes and their events, rows per
//                                   CPU, driver statistics; disable and enable rows
//                                   (sudo), applied in the order given
//
// The trace needs the system-profile privilege. CMD runs with the same
// privilege as pmc itself (so `sudo pmc trace profile run -k x` works). The
// kernel hands the records out binary and consumes them (a second `show`
// prints only what came since); userland/lib/pmctrace.c decodes them.
//
// `pmc trace CMD` keeps only the samples of CMD and its descendants (-a: of
// every CPU and process), names the function of each sampled address (the
// program's or the kernel's, from the ramdisk's ELF files), says which
// profile's bucket each sample landed in or why none (out of range, a process
// without a profile, an idle CPU), shows the first SHOW_SAMPLES samples of each
// CPU (-v: all), and ends with how many records of each step there were.
#include <elfsym.h>
#include <pmctrace.h>
#include <process.h>
#include <sort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define LINE_BYTES   192                   // a trace line's longest
#define SHOW_SAMPLES 8                     // sample lines shown per CPU without -v
#define KERNEL_HALF  0xFFFF800000000000ull // addresses from here up are the kernel's

static const char usage[] =
    "usage: pmc info | pmc trace on|off|clear|show | pmc trace [-a] [-v] CMD [ARGS]\n"
    "       pmc control [-L] [-l] [-s] [-c CPU|*] [-d ROW|*] [-e ROW|*] ...";

static int fail(const char *what, NTSTATUS s)
{
    if (s == STATUS_PRIVILEGE_NOT_HELD)
        fprintf(stderr, "pmc: %s needs the system-profile privilege: run it with sudo\n", what);
    else
        fprintf(stderr, "pmc: %s: %s\n", what, nt_status_name(s));
    return 1;
}

// Text from SysPmcInfo into a buffer sized by the caller.
static int print_text(NTSTATUS s, const char *text, size_t got, const char *what)
{
    if (!NT_SUCCESS(s) && s != STATUS_BUFFER_TOO_SMALL)
        return fail(what, s);
    fwrite(text, 1, got, stdout);
    if (got && text[got - 1] != '\n')
        putchar('\n');
    if (s == STATUS_BUFFER_TOO_SMALL)
        printf("(%s: more than %zu bytes; the rest was dropped)\n", what, got);
    return 0;
}

static int info(void)
{
    size_t cap = 64 * 1024, got = 0;
    char *buf = malloc(cap);
    if (!buf)
        return fail("info", STATUS_NO_MEMORY);
    NTSTATUS s = SysPmcInfo(buf, cap, &got); // before print_text reads got
    int r = print_text(s, buf, got, "info");
    free(buf);
    return r;
}

// The trace: every CPU's records, drained (SysPmcTrace consumes what it
// hands out), then the clock that turns their TSCs into time, the names of
// the processes the samples found, and the records in time order. trace_read
// returns 0, or says why it failed and returns 1 (the buffers freed).
static struct trace {
    char *buf;
    size_t len;
    struct sys_clock clock;
    struct pmctrace_names names;
    struct when *order; // trace and lost records, earliest first
    size_t n;
} tr;

// A record's place in time. The drain hands out each CPU's records in turn;
// a listing merges them by TSC (every CPU's counts alike: QEMU's vCPUs
// share the host's clock, and processors with an invariant TSC keep theirs
// in step, Intel SDM Vol. 3B 18.17.1), then by CPU, then by place in the
// drain. A bucket step sorts with the sample before it on its CPU, which it
// belongs to.
struct when {
    uint64_t tsc;
    uint32_t cpu, pos;
    const struct pmclog_header *h;
};

static int by_when(const void *a, const void *b)
{
    const struct when *x = a, *y = b;
    int c = cmp_up(x->tsc, y->tsc);
    return c ? c : (c = cmp_up(x->cpu, y->cpu)) ? c : cmp_up(x->pos, y->pos);
}

static int is_bucket(const struct pmclog_header *h)
{
    const struct pmclog_trace *r = (const struct pmclog_trace *)h;
    return h->type == PMCLOG_TRACE && r->kind == PMC_TRACE_STEP && r->reg == PMC_STEP_BUCKET;
}

// tr.order from tr.buf: 0, or -1 when out of memory.
static int trace_order(void)
{
    tr.order = malloc((tr.len / sizeof(struct pmclog_header) + 1) * sizeof *tr.order);
    if (!tr.order)
        return -1;
    const struct pmclog_header *h;
    uint64_t prev_tsc = 0;
    for (size_t pos = 0; (h = pmctrace_next(tr.buf, tr.len, &pos));) {
        if (h->type != PMCLOG_TRACE && h->type != PMCLOG_LOST)
            continue;
        int follows = tr.n && is_bucket(h) && tr.order[tr.n - 1].cpu == h->cpu;
        uint64_t tsc = follows ? prev_tsc : h->tsc;
        tr.order[tr.n] = (struct when){tsc, h->cpu, (uint32_t)tr.n, h};
        tr.n++;
        prev_tsc = tsc;
    }
    sort_array(tr.order, tr.n, sizeof *tr.order, by_when);
    return 0;
}

static int trace_read(void)
{
    struct sys_info si;
    uint32_t ncpus = NT_SUCCESS(SysInfo(&si)) && si.ncpus ? si.ncpus : 1;
    // Every ring full, and each CPU's lost record: what one drain can give.
    size_t cap = (size_t)ncpus * (PMC_TRACE_RING_RECORDS * sizeof(struct pmclog_trace) +
                                  sizeof(struct pmclog_lost));
    tr.buf = malloc(cap);
    NTSTATUS s = tr.buf ? STATUS_SUCCESS : STATUS_NO_MEMORY;
    for (size_t got = 1; tr.buf && got && tr.len < cap;) { // until a drain finds nothing new
        got = 0;
        s = SysPmcTrace(PMC_TRACE_READ, tr.buf + tr.len, cap - tr.len, &got);
        if (s == STATUS_BUFFER_TOO_SMALL) { // the next record does not fit in what is left
            s = STATUS_SUCCESS;
            break;
        }
        if (!NT_SUCCESS(s))
            break;
        tr.len += got;
    }
    if (NT_SUCCESS(s) && trace_order())
        s = STATUS_NO_MEMORY;
    if (!NT_SUCCESS(s)) {
        free(tr.buf);
        return fail("trace show", s);
    }
    SysClock(&tr.clock);
    const struct pmclog_header *h;
    for (size_t pos = 0; (h = pmctrace_next(tr.buf, tr.len, &pos));)
        if (h->type == PMCLOG_MAP)
            pmctrace_names_add(&tr.names, (const struct pmclog_map *)h);
    return 0;
}

static const char *trace_name(const struct pmclog_trace *r)
{
    return r->pid ? pmctrace_name(&tr.names, r->pid) : NULL;
}

static int trace_show(void)
{
    if (trace_read())
        return 1;
    char line[LINE_BYTES];
    for (size_t i = 0; i < tr.n; i++) {
        const struct pmclog_header *h = tr.order[i].h;
        if (h->type == PMCLOG_TRACE) {
            const struct pmclog_trace *r = (const void *)h;
            pmctrace_line(r, trace_name(r), pmctrace_ns(&tr.clock, h->tsc), line, sizeof line);
        } else {
            pmctrace_lost_line((const void *)h, line, sizeof line);
        }
        printf("%s\n", line);
    }
    if (tr.len == 0)
        printf("(nothing recorded since the last read: 'pmc trace on' starts recording)\n");
    free(tr.buf);
    free(tr.order);
    return 0;
}

static int trace_op(uint32_t op, const char *what)
{
    NTSTATUS s = SysPmcTrace(op, NULL, 0, NULL);
    return NT_SUCCESS(s) ? 0 : fail(what, s);
}

// ---------------------------------------------------------------------------
// Explaining a trace.

// ELF images by ramdisk name, loaded when first needed.
static struct image_cache {
    char name[32];
    struct elf_image img;
    int ok;
} images[8];
static unsigned nimages;

static const struct elf_image *image(const char *name)
{
    for (unsigned i = 0; i < nimages; i++)
        if (strcmp(images[i].name, name) == 0)
            return images[i].ok ? &images[i].img : NULL;
    if (nimages == sizeof images / sizeof images[0])
        return NULL;
    struct image_cache *c = &images[nimages++];
    strlcpy(c->name, name, sizeof c->name);
    c->ok = NT_SUCCESS(elf_image_load(name, &c->img));
    return c->ok ? &c->img : NULL;
}

// "is_prime+0x14" for an address of program prog (or of the kernel).
static const char *symbolize(uint64_t ip, const char *prog, char *buf, size_t size)
{
    const struct elf_image *img = image(ip >= KERNEL_HALF ? "kernel" : prog);
    const struct elf_func *f = img ? elf_func_at(img, ip) : NULL;
    if (!f)
        snprintf(buf, size, "?");
    else if (ip == f->addr)
        snprintf(buf, size, "%s", f->name);
    else
        snprintf(buf, size, "%s+0x%lx", f->name, ip - f->addr);
    return buf;
}

// Records counted by step ("sample", "wrmsr IA32_PMC0") and samples by fate.
static struct step_count {
    char name[48];
    unsigned long n;
} counts[64];
static unsigned ncounts;
static unsigned long landed, out_of_range, unprofiled, idle, lost;

static void count_step(const char *text)
{
    static const char *const ends[] = {" Profile", " = ",    " ip ",    " index ",
                                       " on ",     " cpus ", " loops ", " interval "};
    size_t len = strlen(text);
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        const char *e = strstr(text, ends[i]);
        if (e && (size_t)(e - text) < len)
            len = (size_t)(e - text);
    }
    char name[48];
    snprintf(name, sizeof name, "%.*s", (int)len, text);
    for (unsigned i = 0; i < ncounts; i++)
        if (strcmp(counts[i].name, name) == 0) {
            counts[i].n++;
            return;
        }
    if (ncounts < sizeof counts / sizeof counts[0]) {
        strlcpy(counts[ncounts].name, name, sizeof counts[0].name);
        counts[ncounts++].n = 1;
    }
}

// The sample being explained: its line, then the buckets it landed in.
static struct pending {
    int on;
    unsigned cpu;
    char when[24];
    uint64_t ip;
    uint32_t pid;
    char prog[32];
    int profiled;
    char landed[512]; // "-> primes profile, bucket 12, kernel profile, bucket 3"
} cur;
// Samples shown and not, per CPU and process: SHOW_SAMPLES of each unless -v.
static struct group {
    unsigned cpu;
    uint32_t pid;
    unsigned long shown, hidden;
} groups[64];
static unsigned ngroups;
static int verbose;

static struct group *group_of(unsigned cpu, uint32_t pid)
{
    for (unsigned i = 0; i < ngroups; i++)
        if (groups[i].cpu == cpu && groups[i].pid == pid)
            return &groups[i];
    if (ngroups == sizeof groups / sizeof groups[0])
        return &groups[ngroups - 1];
    groups[ngroups] = (struct group){.cpu = cpu, .pid = pid};
    return &groups[ngroups++];
}

static void flush_sample(void)
{
    if (!cur.on)
        return;
    cur.on = 0;
    const char *fate = cur.landed;
    if (cur.landed[0])
        landed++;
    else if (cur.profiled)
        out_of_range++, fate = "-> none: out of range";
    else if (cur.pid == 0)
        idle++, fate = "-> none: idle";
    else
        unprofiled++, fate = "-> none: other process";
    struct group *g = group_of(cur.cpu, cur.pid);
    if (!verbose && g->shown >= SHOW_SAMPLES) {
        g->hidden++;
        return;
    }
    g->shown++;
    char sym[96], who[48];
    if (cur.pid)
        snprintf(who, sizeof who, "%s, pid %u", cur.prog, cur.pid);
    else
        snprintf(who, sizeof who, "idle");
    printf("cpu%u %s  sample ip 0x%lx %s [%s] %s\n", cur.cpu, cur.when, cur.ip,
           symbolize(cur.ip, cur.prog, sym, sizeof sym), who, fate);
}

// Which module a profile over base covers, for the bucket line.
static const char *profile_module(uint64_t base)
{
    const struct elf_image *k = image("kernel");
    if (k && k->text_base == base)
        return "kernel";
    if (cur.pid) {
        const struct elf_image *p = image(cur.prog);
        if (p && p->text_base == base)
            return cur.prog;
    }
    return NULL;
}

static void explain_lost(const struct pmclog_lost *l)
{
    flush_sample();
    lost += l->count;
    char line[LINE_BYTES];
    pmctrace_lost_line(l, line, sizeof line);
    printf("%s (a ring holds %u records of its CPU)\n", line, PMC_TRACE_RING_RECORDS);
}

static void explain_record(const struct pmclog_trace *r)
{
    unsigned cpu = r->h.cpu;
    const char *name = trace_name(r);
    char text[LINE_BYTES];
    pmctrace_format(r, name, text, sizeof text);
    count_step(text);
    int bucket = r->kind == PMC_TRACE_STEP && r->reg == PMC_STEP_BUCKET;
    if (bucket && cur.on && cur.cpu == cpu) {
        const char *m = profile_module(r->arg);
        size_t used = strlen(cur.landed);
        char mod[48];
        if (m)
            snprintf(mod, sizeof mod, "%s", m);
        else
            snprintf(mod, sizeof mod, "0x%lx", r->arg);
        snprintf(cur.landed + used, sizeof cur.landed - used, "%s %s profile, bucket %lu",
                 used ? "," : "->", mod, r->value);
        return;
    }
    flush_sample();
    uint64_t us = pmctrace_ns(&tr.clock, r->h.tsc) / 1000;
    char when[24];
    snprintf(when, sizeof when, "%5lu.%03lu ms", us / 1000, us % 1000);
    if (bucket)
        return; // its sample is not in the trace: counted above, not shown
    if (r->kind != PMC_TRACE_STEP || r->reg != PMC_STEP_SAMPLE) {
        printf("cpu%u %s  %s\n", cpu, when, text);
        return;
    }
    cur = (struct pending){.on = 1, .cpu = cpu, .ip = r->value, .pid = r->pid};
    strlcpy(cur.when, when, sizeof cur.when);
    cur.profiled = (r->flags & PMC_TRACE_PROFILED) != 0;
    if (r->pid)
        strlcpy(cur.prog, name ? name : "?", sizeof cur.prog);
}

static void explain_summary(void)
{
    printf("----- summary: records by step -----\n");
    for (unsigned i = 0; i < ncounts; i++)
        printf("%8lu  %s\n", counts[i].n, counts[i].name);
    unsigned long samples = landed + out_of_range + unprofiled + idle;
    printf("samples: %lu: %lu in a bucket, %lu out of range, %lu in another process, %lu on an "
           "idle CPU\n",
           samples, landed, out_of_range, unprofiled, idle);
    unsigned long hidden = 0;
    for (unsigned i = 0; i < ngroups; i++)
        hidden += groups[i].hidden;
    if (hidden)
        printf("not shown: %lu samples after the first %u of each process on each CPU (pmc trace "
               "-v shows every one)\n",
               hidden, SHOW_SAMPLES);
    if (lost)
        printf("lost: %lu records found their CPU's ring full: trace a shorter command\n", lost);
    if (samples == 0)
        printf("no sample: the command started no profile, or ended before the first tick\n");
}

static int trace_explain(void)
{
    if (trace_read())
        return 1;
    for (size_t i = 0; i < tr.n; i++) {
        const struct pmclog_header *h = tr.order[i].h;
        if (h->type == PMCLOG_TRACE)
            explain_record((const struct pmclog_trace *)h);
        else
            explain_lost((const struct pmclog_lost *)h);
    }
    flush_sample();
    explain_summary();
    free(tr.buf);
    free(tr.order);
    for (unsigned i = 0; i < nimages; i++)
        if (images[i].ok)
            elf_image_free(&images[i].img);
    return 0;
}

// Spawned suspended, so that the filter names it before it runs; then on,
// resume, wait, off, and the explanation whatever the command's status.
static int trace_command(char **argv, int all)
{
    HANDLE h = NULL;
    uint32_t pid = 0;
    NTSTATUS s =
        SysSpawn(argv[0], (const char *const *)argv, SPAWN_PRIVILEGED | SPAWN_SUSPENDED, &h);
    if (s == STATUS_PRIVILEGE_NOT_HELD) // the privileged spawn: sudo's
        return fail("trace", s);
    if (!NT_SUCCESS(s)) {
        spawn_failed("pmc", argv[0], s, "no such program");
        return 1;
    }
    int status = 0;
    if (NT_SUCCESS(s = SysProcessId(h, &pid)) &&
        NT_SUCCESS(
            s = SysPmcTrace(PMC_TRACE_FILTER, (void *)(uintptr_t)(all ? 0 : pid), 0, NULL)) &&
        NT_SUCCESS(s = SysPmcTrace(PMC_TRACE_CLEAR, NULL, 0, NULL)) &&
        NT_SUCCESS(s = SysPmcTrace(PMC_TRACE_ON, NULL, 0, NULL)) && NT_SUCCESS(s = SysResume(h)))
        s = SysWait(h, &status);
    trace_op(PMC_TRACE_OFF, "trace off");
    SysPmcTrace(PMC_TRACE_FILTER, NULL, 0, NULL);
    if (!NT_SUCCESS(s)) {
        SysKill(pid);
        NtClose(h);
        return fail("trace", s);
    }
    NtClose(h);
    char words[40];
    if (status != 0)
        printf("pmc: %s %s\n", argv[0], exit_words(status, words, sizeof words));
    printf("----- pmc trace of '%s' (%s; the CPUs' records merged in time order) -----\n", argv[0],
           all ? "every CPU and process" : "its processes only; -a: every CPU and process");
    return trace_explain();
}

static int trace(int argc, char **argv)
{
    static const struct {
        const char *name;
        uint32_t op;
    } ops[] = {
        {"on", PMC_TRACE_ON},
        {"off", PMC_TRACE_OFF},
        {"clear", PMC_TRACE_CLEAR},
    };
    if (argc < 3) {
        fprintf(stderr, "pmc: trace what?\n%s\n", usage);
        return 2;
    }
    if (strcmp(argv[2], "show") == 0)
        return argc == 3 ? trace_show() : (fprintf(stderr, "%s\n", usage), 2);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(argv[2], ops[i].name) != 0)
            continue;
        if (argc != 3) {
            fprintf(stderr, "pmc: trace %s takes no arguments\n%s\n", argv[2], usage);
            return 2;
        }
        char what[16];
        snprintf(what, sizeof what, "trace %s", argv[2]);
        return trace_op(ops[i].op, what);
    }
    int i = 2, all = 0;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-a") == 0)
            all = 1;
        else if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else {
            fprintf(stderr, "pmc: trace: unknown option %s\n%s\n", argv[i], usage);
            return 2;
        }
    }
    if (i == argc) {
        fprintf(stderr, "pmc: trace: which command?\n%s\n", usage);
        return 2;
    }
    return trace_command(argv + i, all);
}

// ---- pmc control: pmccontrol(8) over NtPmcGetCpuInfo, NtPmcGetPmcInfo, NtPmcAdmin

static const char *const class_names[] = {
    [PMC_CLASS_TIMER] = "TIMER", [PMC_CLASS_IAF] = "IAF",   [PMC_CLASS_IAP] = "IAP",
    [PMC_CLASS_K8] = "K8",       [PMC_CLASS_SOFT] = "SOFT",
};
static const char *const disp_names[] = {
    [PMC_DISP_STANDALONE] = "standalone", [PMC_DISP_FREE] = "free", [PMC_DISP_THREAD] = "thread"};

static const char *class_name(uint32_t cls)
{
    return cls < sizeof class_names / sizeof class_names[0] && class_names[cls] ? class_names[cls]
                                                                                : "?";
}

static const char *const mode_names[] = {"-", "SS", "SC", "TS", "TC"};

static struct pmc_cpuinfo cpuinfo;
static struct pmc_rowinfo rowinfo[PMC_ROWS_MAX];
static struct sys_profile_source sources[64];
static uint32_t nsources;

// A row's event: a source's name, or a software event's (its row's name
// after "SOFT-"); rows are those of the CPU in rowinfo.
static const char *event_name(uint32_t event)
{
    for (uint32_t i = 0; i < nsources; i++)
        if (sources[i].source == event)
            return sources[i].name;
    for (uint32_t r = 0; r < cpuinfo.npmc; r++)
        if (rowinfo[r].cls == PMC_CLASS_SOFT &&
            event == PMC_EVENT_SW(r - (cpuinfo.npmc - PMC_SW_COUNT)))
            return rowinfo[r].name + 5;
    return "?";
}

// The rows of cpu into rowinfo.
static NTSTATUS rows_of(uint32_t cpu)
{
    uint32_t need = 0;
    return NtPmcGetPmcInfo(cpu, rowinfo, sizeof rowinfo, &need);
}

static int control_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "pmc: control: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s\n", usage);
    return 2;
}

// -L: each class, its width and capabilities, and the events it can count.
static int control_classes(void)
{
    NTSTATUS s = rows_of(0);
    if (!NT_SUCCESS(s))
        return fail("control -L", s);
    for (uint32_t c = 0; c < cpuinfo.nclass; c++) {
        const struct pmc_classinfo *k = &cpuinfo.classes[c];
        printf("%s (%u rows from %u, %u bits, %s%s%s%s%s)\n", class_name(k->cls), k->num,
               k->first_row, k->width, k->caps & PMC_CAP_INTERRUPT ? "sample " : "",
               k->caps & PMC_CAP_READ ? "count " : "", k->caps & PMC_CAP_WRITE ? "write " : "",
               k->caps & PMC_CAP_USER ? "user " : "", k->caps & PMC_CAP_SYSTEM ? "kernel" : "");
        printf("\t");
        for (uint32_t e = 0; e < 64; e++) {
            if (!((k->events >> e) & 1))
                continue;
            printf(" %s", event_name(k->cls == PMC_CLASS_SOFT ? PMC_EVENT_SW(e) : e));
        }
        printf("\n");
    }
    return 0;
}

// -l: every CPU's rows: state, disposition, and the PMC holding it.
static int control_rows(void)
{
    for (uint32_t cpu = 0; cpu < cpuinfo.ncpu; cpu++) {
        NTSTATUS s = rows_of(cpu);
        if (!NT_SUCCESS(s))
            return fail("control -l", s);
        printf("cpu %u:\n  row name                    class  state     disposition  owner  mode  "
               "event\n",
               cpu);
        for (uint32_t r = 0; r < cpuinfo.npmc; r++) {
            const struct pmc_rowinfo *i = &rowinfo[r];
            printf("  %3u %-23s %-6s %-9s %-12s", r, i->name, class_name(i->cls),
                   i->enabled ? "enabled" : "disabled", disp_names[i->disp % 3]);
            char owner[12] = "-";
            if (i->mode)
                snprintf(owner, sizeof owner, "%u", i->owner_pid);
            printf(" %5s  %-4s", owner, mode_names[i->mode % 5]);
            if (i->event != PMC_EVENT_NONE)
                printf("  %s", event_name(i->event));
            printf("\n");
        }
    }
    return 0;
}

// -s: the driver's statistics and version (hwpmc's GETDRIVERSTATS, GETMODULEVERSION).
static int control_stats(void)
{
    struct pmc_driver_stats st;
    uint32_t version = 0;
    NTSTATUS s = NtPmcGetDriverStats(&st);
    if (!NT_SUCCESS(s) || !NT_SUCCESS(s = NtPmcGetModuleVersion(&version)))
        return fail("control -s", s);
    printf("module version %u.%u.%u, interface %s, %u CPUs, %u rows per CPU\n", version >> 24,
           (version >> 16) & 0xFF, version & 0xFFFF, cpuinfo.interface, cpuinfo.ncpu, cpuinfo.npmc);
    printf("system calls %lu, failed %lu\n", (unsigned long)st.syscalls,
           (unsigned long)st.syscall_errors);
    printf("log %s, chains truncated %lu, user frames unread %lu, records dropped %lu\n",
           st.log_configured ? "configured" : "none", (unsigned long)st.chains_truncated,
           (unsigned long)st.user_frames_unread, (unsigned long)st.records_dropped);
    for (uint32_t c = 0; c < st.ncpus && c < PMC_STATS_CPUS; c++)
        printf("cpu %u: samples delivered %lu, logged %lu, lost %lu\n", c,
               (unsigned long)st.cpu[c].delivered, (unsigned long)st.cpu[c].logged,
               (unsigned long)st.cpu[c].lost);
    return 0;
}

// A CPU or row number below limit, or "*" (ALL).
#define ALL 0xFFFFFFFFu
static int parse_target(const char *arg, uint32_t limit, const char *what, uint32_t *out)
{
    char *end;
    if (strcmp(arg, "*") == 0) {
        *out = ALL;
        return 0;
    }
    unsigned long v = strtoul(arg, &end, 10);
    if (!arg[0] || *end || v >= limit) {
        fprintf(stderr, "pmc: control: no %s '%s' (0 to %u, or *)\n%s\n", what, arg, limit - 1,
                usage);
        return 2;
    }
    *out = (uint32_t)v;
    return 0;
}

// -d or -e of row (or every row) on cpu (or every CPU). With *, a row in use
// is left as it is and said so; a named row in use is an error.
static int admin_one(uint32_t cpu, uint32_t row, uint32_t state, int every)
{
    NTSTATUS s = NtPmcAdmin(cpu, row, state);
    const char *verb = state == PMC_STATE_DISABLED ? "disabled" : "enabled";
    if (NT_SUCCESS(s)) {
        printf("pmc: cpu %u row %u: %s\n", cpu, row, verb);
        return 0;
    }
    if (s == STATUS_PMC_ROW_BUSY && every) {
        printf("pmc: cpu %u row %u: in use, left enabled\n", cpu, row);
        return 0;
    }
    char what[48];
    snprintf(what, sizeof what, "control: cpu %u row %u", cpu, row);
    if (s == STATUS_PMC_ROW_BUSY)
        fprintf(stderr, "pmc: %s: in use (STATUS_PMC_ROW_BUSY): release its PMCs first\n", what);
    else
        fail(what, s);
    return 1;
}

static int control_admin(uint32_t cpu, const char *arg, uint32_t state)
{
    uint32_t row;
    int rc = parse_target(arg, cpuinfo.npmc, "row", &row);
    for (uint32_t c = 0; !rc && c < cpuinfo.ncpu; c++)
        for (uint32_t r = 0; !rc && r < cpuinfo.npmc; r++)
            if ((cpu == ALL || c == cpu) && (row == ALL || r == row))
                rc = admin_one(c, r, state, row == ALL);
    return rc;
}

// One option; *i moves past its argument. Returns an exit status (0 to go on).
static int control_option(int argc, char **argv, int *i, uint32_t *cpu)
{
    const char *opt = argv[*i];
    if (strcmp(opt, "-L") == 0)
        return control_classes();
    if (strcmp(opt, "-l") == 0)
        return control_rows();
    if (strcmp(opt, "-s") == 0)
        return control_stats();
    if (strcmp(opt, "-c") && strcmp(opt, "-d") && strcmp(opt, "-e"))
        return control_error("unknown option '%s'", opt);
    if (*i + 1 >= argc)
        return control_error("%s wants an argument", opt);
    const char *arg = argv[++*i];
    if (opt[1] == 'c')
        return parse_target(arg, cpuinfo.ncpu, "CPU", cpu);
    return control_admin(*cpu, arg, opt[1] == 'd' ? PMC_STATE_DISABLED : PMC_STATE_FREE);
}

// The options in order, as pmccontrol(8) applies them; -c picks the CPUs of
// the -d and -e after it (every CPU until then).
static int pmc_control(int argc, char **argv)
{
    NTSTATUS s = NtPmcGetCpuInfo(&cpuinfo);
    if (NT_SUCCESS(s))
        s = SysProfileSources(sources, 64, &nsources);
    if (!NT_SUCCESS(s))
        return fail("control", s);
    nsources = nsources < 64 ? nsources : 64;
    if (argc == 0)
        return control_error("%swhich option?", "");
    uint32_t cpu = ALL;
    for (int i = 0; i < argc; i++) {
        int rc = control_option(argc, argv, &i, &cpu);
        if (rc)
            return rc;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "info") == 0)
        return info();
    if (argc >= 2 && strcmp(argv[1], "control") == 0)
        return pmc_control(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "trace") == 0)
        return trace(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "help") == 0) {
        printf("%s\n", usage);
        return 0;
    }
    fprintf(stderr, "pmc: %s\n%s\n", argc < 2 ? "which command?" : "unknown command", usage);
    return 2;
}
