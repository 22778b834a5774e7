// -p PID [-d SECONDS]: `profile stat`, `record` and `run` attached to a
// process that is already running, as pmcstat -t and perf -p do (cli.h).
// The process is opened with SysOpenProcess under the
// kernel's rule for every process handle: the caller itself, its child, or
// the system-profile privilege (so a job the shell started is measured with
// `sudo profile stat -p PID`). The measurement ends after SECONDS, or when
// the process exits, whichever comes first; without -d, when it exits.
#include <clock.h>
#include <process.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "cli.h"

#define ATTACH_POLL_MS 20

static int attach_value(struct attach *a, const char *flag, const char *value, const char *usage)
{
    uint64_t v;
    if (!value)
        return usage_short(usage, "option %s needs a value", flag);
    if (prof_parse_number(value, &v) || v == 0 || v > (flag[1] == 'p' ? UINT32_MAX : 86400))
        return usage_short(usage, "%s wants %s, not '%s'", flag,
                           flag[1] == 'p' ? "a process id" : "a number of seconds (1..86400)",
                           value);
    if (flag[1] == 'p')
        a->pid = (uint32_t)v;
    else
        a->ms = v * 1000;
    return 0;
}

// Removes words i and i + 1 of argv.
static void drop_two(int *argc, char **argv, int i)
{
    for (int k = i; k + 2 <= *argc; k++)
        argv[k] = argv[k + 2];
    *argc -= 2;
}

int attach_extract(int *argc, char **argv, int first, const char *valued, int depth_d,
                   const char *usage, struct attach *a)
{
    memset(a, 0, sizeof *a);
    int has_p = 0;
    for (int i = first; i < *argc && argv[i][0] == '-'; i++)
        has_p |= strcmp(argv[i], "-p") == 0;
    for (int i = first; i < *argc && argv[i][0] == '-' && argv[i][1];) {
        const char *f = argv[i];
        int ours = !strcmp(f, "-p") || (!strcmp(f, "-d") && (has_p || !depth_d));
        if (!ours) {
            i += 1 + (f[1] && !f[2] && strchr(valued, f[1]) && i + 1 < *argc);
            continue;
        }
        int st = attach_value(a, f, i + 1 < *argc ? argv[i + 1] : NULL, usage);
        if (st)
            return st;
        drop_two(argc, argv, i);
    }
    if (a->ms && !a->pid)
        return usage_short(usage, "-d SECONDS goes with -p PID");
    return 0;
}

int attach_open(struct attach *a)
{
    NTSTATUS s = SysOpenProcess(a->pid, &a->process);
    if (s == STATUS_INVALID_CID) {
        a->process = NULL;
        fprintf(stderr, "profile: no process %u\n", a->pid);
        return EXIT_USAGE;
    }
    if (!NT_SUCCESS(s)) {
        a->process = NULL;
        fprintf(stderr, "profile: cannot attach to process %u: %s%s\n", a->pid, nt_status_name(s),
                s == STATUS_ACCESS_DENIED ? " (not this process nor its child: use sudo)" : "");
        return EXIT_FAIL;
    }
    const struct sys_process_info *list;
    uint32_t count = prof_process_list(&list);
    for (uint32_t i = 0; i < count; i++)
        if (list[i].pid == a->pid)
            memcpy(a->name, list[i].name, PROCESS_NAME_MAX);
    a->name[PROCESS_NAME_MAX] = '\0';
    if (prof_exited(a->pid)) {
        fprintf(stderr, "profile: no process %u (it has exited)\n", a->pid);
        attach_close(a);
        return EXIT_USAGE;
    }
    a->start_ns = clock_ns();
    return 0;
}

int attach_done(const struct attach *a)
{
    if (prof_exited(a->pid) || prof_interrupted())
        return 1;
    return a->ms && clock_ns() - a->start_ns >= a->ms * 1000000ull;
}

void attach_wait(struct attach *a)
{
    if (!a->ms) { // until it exits, or Ctrl-C detaches (the process is not ours to end)
        NTSTATUS s = SysWait(a->process, &a->exit_status);
        if (s == STATUS_ALERTED && prof_interrupted())
            attach_finish(a);
        else
            a->exited = 1;
        return;
    }
    while (!attach_done(a))
        SysSleep(ATTACH_POLL_MS);
    attach_finish(a);
}

void attach_finish(struct attach *a)
{
    a->exited = prof_exited(a->pid);
    if (a->exited)
        SysWait(a->process, &a->exit_status);
}

void attach_say_end(const struct attach *a, const char *who)
{
    uint64_t ms = (clock_ns() - a->start_ns) / 1000000;
    char words[40];
    if (!a->exited)
        printf("%s: detached from %s (pid %u) after %lu.%03lu s; it runs on\n", who, a->name,
               a->pid, ms / 1000, ms % 1000);
    else
        printf("%s: %s (pid %u) %s while attached%s\n", who, a->name, a->pid,
               exit_words(a->exit_status, words, sizeof words),
               a->exit_status == EXIT_STATUS_KILLED ? "; totals until then" : "");
}

void attach_close(struct attach *a)
{
    if (a->process)
        NtClose(a->process);
    a->process = NULL;
}
