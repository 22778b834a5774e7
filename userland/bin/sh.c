// sh: the interactive shell. Reads a line, splits it into words, and runs a
// builtin from the table below or a program from the ramdisk.
//
// Adding a command means adding one row to `builtins` (a `profile` builtin
// would go there, or be a program of its own and need nothing here).
#include <clock.h>
#include <process.h>
#include <readline.h>
#include <statfmt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

#define LINE_SIZE      512
// The status of a command Ctrl-C ended, as POSIX shells give a SIGINT death.
#define SH_INTERRUPTED 130

struct builtin {
    const char *name;
    const char *usage;                                 // for help
    int (*run)(int argc, char **argv, uint32_t flags); // flags: SPAWN_* for what it starts
};

static const struct builtin *find_builtin(const char *name);
static int run_command(int argc, char **argv, uint32_t flags);

// ---------------------------------------------------------------------------
// Splitting a line into words: blanks separate, '...' and "..." group
// (quotes may sit inside a word: a"b c"d is the word "ab cd"). No escapes,
// no variables. The words are written back into line itself.

static int tokenize(char *line, char **argv, int max)
{
    int argc = 0;
    char *in = line, *out = line;
    for (;;) {
        while (*in == ' ' || *in == '\t')
            in++;
        if (!*in)
            break;
        if (argc == max - 1) {
            fprintf(stderr, "sh: too many words (at most %d)\n", max - 1);
            return -1;
        }
        argv[argc++] = out;
        while (*in && *in != ' ' && *in != '\t') {
            if (*in == '\'' || *in == '"') {
                char quote = *in++;
                while (*in && *in != quote)
                    *out++ = *in++;
                if (!*in) {
                    fprintf(stderr, "sh: unterminated %c\n", quote);
                    return -1;
                }
                in++;
            } else {
                *out++ = *in++;
            }
        }
        if (*in)
            in++; // the blank that ended the word; out never passes in
        *out++ = '\0';
    }
    argv[argc] = NULL;
    return argc;
}

// ---------------------------------------------------------------------------
// Builtins. Each returns the command's status (0 for success).

static int cmd_help(int argc, char **argv, uint32_t flags);

static const char *state_name(uint32_t state)
{
    static const char *const names[] = {
        [PROC_SUSPENDED] = "suspended", [PROC_RUNNABLE] = "runnable", [PROC_RUNNING] = "running",
        [PROC_SLEEPING] = "sleeping",   [PROC_ZOMBIE] = "zombie",
    };
    if (state < sizeof names / sizeof names[0] && names[state])
        return names[state];
    return "?";
}

static int cmd_ps(int argc, char **argv, uint32_t flags)
{
    (void)argc, (void)argv, (void)flags;
    uint32_t max = 64, count = 0;
    struct sys_process_info *list = NULL;
    for (;;) {
        free(list);
        list = calloc(max, sizeof *list);
        if (!list) {
            fprintf(stderr, "ps: out of memory\n");
            return 1;
        }
        NTSTATUS s = SysProcessList(list, max, &count);
        if (NT_SUCCESS(s) && count <= max)
            break;
        if (s != STATUS_BUFFER_TOO_SMALL && s != STATUS_BUFFER_OVERFLOW && !NT_SUCCESS(s)) {
            fprintf(stderr, "ps: %s\n", nt_status_name(s));
            free(list);
            return 1;
        }
        if (max >= 4096)
            break; // show the first ones rather than grow for ever
        max *= 2;
    }
    if (count > max)
        count = max;
    printf("  PID  PPID STATE      CPU  PAGES      CPU-MS PRIV NAME\n");
    for (uint32_t i = 0; i < count; i++) {
        struct sys_process_info *p = &list[i];
        printf("%5u %5u %-10s %3u %6lu %11lu %-4s %.*s\n", p->pid, p->parent, state_name(p->state),
               p->cpu, p->pages, p->cpu_ns / 1000000, p->privileged ? "yes" : "", PROCESS_NAME_MAX,
               p->name);
    }
    free(list);
    return 0;
}

static int cmd_cpus(int argc, char **argv, uint32_t flags)
{
    (void)argc, (void)argv, (void)flags;
    struct sys_cpu_info cpus[256];
    uint32_t count = 0;
    NTSTATUS s = SysCpuInfo(cpus, sizeof cpus / sizeof cpus[0], &count);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "cpus: %s\n", nt_status_name(s));
        return 1;
    }
    if (count > sizeof cpus / sizeof cpus[0])
        count = sizeof cpus / sizeof cpus[0];
    for (uint32_t i = 0; i < count; i++) {
        struct sys_cpu_info *c = &cpus[i];
        uint64_t total = c->idle_ns + c->busy_ns;
        unsigned busy = (unsigned)stat_ratio(c->busy_ns, total, 100);
        printf("cpu %u: apic %u, %s, ", c->id, c->apic_id, c->online ? "online" : "offline");
        if (c->current_pid)
            printf("running pid %u, ", c->current_pid);
        else
            printf("idle, ");
        printf("%lu ticks, busy %u%%\n", c->ticks, busy);
    }
    return 0;
}

static int cmd_mem(int argc, char **argv, uint32_t flags)
{
    (void)argc, (void)argv, (void)flags;
    struct sys_info info;
    NTSTATUS s = SysInfo(&info);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "mem: %s\n", nt_status_name(s));
        return 1;
    }
    printf("free pages %lu of %lu (%lu MiB free of %lu MiB), kernel heap %lu bytes\n",
           info.free_pages, info.total_pages, info.free_pages / 256, info.total_pages / 256,
           info.heap_bytes);
    return 0;
}

static int cmd_time(int argc, char **argv, uint32_t flags)
{
    if (argc < 2) {
        fprintf(stderr, "usage: time CMD [ARGS]\n");
        return 2;
    }
    struct sys_clock start, end;
    NTSTATUS s = SysClock(&start);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "time: %s\n", nt_status_name(s));
        return 1;
    }
    int status = run_command(argc - 1, argv + 1, flags);
    SysClock(&end);
    uint64_t us = (end.ns - start.ns) / 1000;
    fprintf(stderr, "time: %lu.%03lu ms, %lu TSC cycles\n", us / 1000, us % 1000,
            end.tsc - start.tsc);
    return status;
}

static int cmd_sudo(int argc, char **argv, uint32_t flags)
{
    if (argc < 2) {
        fprintf(stderr, "usage: sudo CMD [ARGS]\n");
        return 2;
    }
    return run_command(argc - 1, argv + 1, flags | SPAWN_PRIVILEGED);
}

// ---------------------------------------------------------------------------
// Background jobs: `CMD &` starts a program without waiting and prints
// "[N] PID" (N: the job's number, the lowest free one); the shell keeps its
// process handle, so the process stays listed (a zombie once it has ended)
// until the shell reaps it. Before each prompt the shell reaps the jobs that
// ended and prints "[N] Done CMD" or "[N] Exit S CMD". `jobs` lists them,
// `wait [PID|%N]` waits for one or all, `kill %N` kills one, and the word
// `$!` is the PID of the last job started (as in sh(1)).

#define MAX_JOBS 8

struct job {
    HANDLE process; // 0: a free slot
    uint32_t pid;
    char command[64];
};

static struct job jobs[MAX_JOBS];
static uint32_t last_job_pid;

static int job_state(const struct job *j)
{
    struct sys_process_info list[64];
    uint32_t count = 0;
    if (!NT_SUCCESS(SysProcessList(list, 64, &count)))
        return PROC_RUNNABLE;
    for (uint32_t i = 0; i < count && i < 64; i++)
        if (list[i].pid == j->pid)
            return (int)list[i].state;
    return PROC_ZOMBIE;
}

// Waits for job n (it may have ended already), says how it ended, frees the slot.
static int job_reap(int n)
{
    struct job *j = &jobs[n];
    int status = 0;
    NTSTATUS s = SysWait(j->process, &status);
    if (!NT_SUCCESS(s))
        status = EXIT_STATUS_KILLED;
    if (status == 0)
        printf("[%d] Done       %s\n", n + 1, j->command);
    else if (status == EXIT_STATUS_KILLED)
        printf("[%d] Killed     %s\n", n + 1, j->command);
    else if (status == EXIT_STATUS_INTERRUPTED)
        printf("[%d] Interrupt  %s\n", n + 1, j->command);
    else
        printf("[%d] Exit %-5d %s\n", n + 1, status, j->command);
    NtClose(j->process);
    j->process = 0;
    return status;
}

static void jobs_reap_ended(void)
{
    for (int n = 0; n < MAX_JOBS; n++)
        if (jobs[n].process && job_state(&jobs[n]) == PROC_ZOMBIE)
            job_reap(n);
}

// CMD & (argv without the "&"): a program, or `sudo PROG`, started and not waited for.
static int job_start(int argc, char **argv, uint32_t flags)
{
    while (argc > 1 && strcmp(argv[0], "sudo") == 0)
        argc--, argv++, flags |= SPAWN_PRIVILEGED;
    if (find_builtin(argv[0])) {
        fprintf(stderr, "sh: %s: a builtin cannot run in the background\n", argv[0]);
        return 2;
    }
    int n = 0;
    while (n < MAX_JOBS && jobs[n].process)
        n++;
    if (n == MAX_JOBS) {
        fprintf(stderr, "sh: %d jobs already: wait for one first\n", MAX_JOBS);
        return 1;
    }
    struct job *j = &jobs[n];
    NTSTATUS s = SysSpawn(argv[0], (const char *const *)argv, flags | SPAWN_NEW_GROUP, &j->process);
    if (!NT_SUCCESS(s)) {
        j->process = 0;
        fprintf(stderr, "sh: %s: %s\n", argv[0],
                program_exists(argv[0]) ? nt_status_name(s) : "command not found");
        return 127;
    }
    SysProcessId(j->process, &j->pid);
    j->command[0] = '\0';
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(j->command);
        snprintf(j->command + len, sizeof j->command - len, "%s%s", i ? " " : "", argv[i]);
    }
    last_job_pid = j->pid;
    printf("[%d] %u\n", n + 1, j->pid);
    return 0;
}

// "%N" or a PID: the job's slot, or -1 having said why.
static int job_find(const char *cmd, const char *text)
{
    char *end;
    int by_number = text[0] == '%';
    unsigned long v = strtoul(text + by_number, &end, 10);
    if (*end || end == text + by_number) {
        fprintf(stderr, "%s: %s: not a pid or %%N\n", cmd, text);
        return -1;
    }
    for (int n = 0; n < MAX_JOBS; n++)
        if (jobs[n].process && (by_number ? (unsigned long)n + 1 == v : jobs[n].pid == v))
            return n;
    fprintf(stderr, "%s: %s: no such job\n", cmd, text);
    return -1;
}

// An ended job is reported as it ended (Done, Killed, Exit S) and forgotten,
// as bash's jobs does: the next prompt does not report it again.
static int cmd_jobs(int argc, char **argv, uint32_t flags)
{
    (void)argc, (void)argv, (void)flags;
    for (int n = 0; n < MAX_JOBS; n++) {
        if (!jobs[n].process)
            continue;
        if (job_state(&jobs[n]) == PROC_ZOMBIE)
            job_reap(n);
        else
            printf("[%d] %-5u %-10s %s\n", n + 1, jobs[n].pid, "Running", jobs[n].command);
    }
    return 0;
}

// wait: every job; wait PID or %N: that one, its exit status (127 for no such job).
static int cmd_wait(int argc, char **argv, uint32_t flags)
{
    (void)flags;
    if (argc > 2) {
        fprintf(stderr, "usage: wait [PID|%%N]\n");
        return 2;
    }
    int one = argc == 2 ? job_find("wait", argv[1]) : -1;
    if (argc == 2 && one < 0)
        return 127;
    // Ctrl-C ends the wait, not the jobs (POSIX: wait returns > 128 on a signal).
    SysConsoleForeground(SysGetPid());
    int status = 0;
    for (int n = 0; n < MAX_JOBS && status != SH_INTERRUPTED; n++) {
        if (!jobs[n].process || (one >= 0 && n != one))
            continue;
        int ignored;
        bool alerted = SysWait(jobs[n].process, &ignored) == STATUS_ALERTED;
        status = alerted ? SH_INTERRUPTED : job_reap(n); // ended: the reap does not wait
    }
    SysConsoleForeground(0);
    uint32_t pending;
    SysInterruptMode(INTERRUPT_NOTIFY, &pending); // taken: the next wait is not cut short
    return one >= 0 || status == SH_INTERRUPTED ? status : 0;
}

// `$!` anywhere as a whole word: the last background job's PID. Before the
// first job there is none: the command is not run (-1) rather than given 0.
static int expand_last_pid(int argc, char **argv)
{
    static char text[12];
    snprintf(text, sizeof text, "%u", last_job_pid);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "$!") != 0)
            continue;
        if (!last_job_pid) {
            fprintf(stderr, "sh: $!: no background job yet (start one with CMD &)\n");
            return -1;
        }
        argv[i] = text;
    }
    return 0;
}

static int cmd_kill(int argc, char **argv, uint32_t flags)
{
    (void)flags;
    if (argc != 2) {
        fprintf(stderr, "usage: kill PID|%%N\n");
        return 2;
    }
    char *end;
    unsigned long pid = strtoul(argv[1], &end, 10);
    if (argv[1][0] == '%') {
        int n = job_find("kill", argv[1]);
        if (n < 0)
            return 1;
        pid = jobs[n].pid, end = "";
    }
    if (*end || end == argv[1] || pid > UINT32_MAX) {
        fprintf(stderr, "kill: %s: not a pid\n", argv[1]);
        return 2;
    }
    NTSTATUS s = SysKill((uint32_t)pid);
    if (s == STATUS_INVALID_CID)
        fprintf(stderr, "kill: %lu: no such process\n", pid);
    else if (!NT_SUCCESS(s))
        fprintf(stderr, "kill: %lu: %s\n", pid, nt_status_name(s));
    return NT_SUCCESS(s) ? 0 : 1;
}

// echo [-n] [ARGS]: the words, one blank between them, then a newline (none with -n).
static int cmd_echo(int argc, char **argv, uint32_t flags)
{
    (void)flags;
    int i = 1, newline = 1;
    if (argc > 1 && strcmp(argv[1], "-n") == 0)
        i++, newline = 0;
    for (int first = i; i < argc; i++)
        printf("%s%s", i > first ? " " : "", argv[i]);
    if (newline)
        printf("\n");
    return 0;
}

static int cmd_poweroff(int argc, char **argv, uint32_t flags)
{
    (void)argc, (void)argv, (void)flags;
    fflush(NULL);
    NTSTATUS s = SysPowerOff(); // returns only when refused
    fprintf(stderr, "poweroff: %s\n", nt_status_name(s));
    return 1;
}

static int cmd_exit(int argc, char **argv, uint32_t flags)
{
    (void)flags;
    exit(argc > 1 ? atoi(argv[1]) : 0);
}

static const struct builtin builtins[] = {
    {"help", "help                 this list and the programs in the ramdisk", cmd_help},
    {"echo", "echo [-n] [ARGS]     print the words (-n: no newline)", cmd_echo},
    {"ps", "ps                   processes: pid, parent, state, cpu, pages", cmd_ps},
    {"cpus", "cpus                 one line per CPU", cmd_cpus},
    {"mem", "mem                  free and total pages, kernel heap", cmd_mem},
    {"time", "time CMD [ARGS]      run CMD, then print elapsed ms and TSC cycles", cmd_time},
    {"sudo", "sudo CMD [ARGS]      run CMD with the system-profile privilege", cmd_sudo},
    {"kill", "kill PID|%N          kill a process (%N: background job N)", cmd_kill},
    {"jobs", "jobs                 background jobs (CMD &): number, pid, state", cmd_jobs},
    {"wait", "wait [PID|%N]        wait for a background job, or for all", cmd_wait},
    {"poweroff", "poweroff             switch the machine off (ACPI)", cmd_poweroff},
    {"exit", "exit [STATUS]        leave the shell", cmd_exit},
};

static int cmd_help(int argc, char **argv, uint32_t flags)
{
    (void)argc, (void)argv, (void)flags;
    printf("builtins:\n");
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        printf("  %s\n", builtins[i].usage);
    char *list = program_list();
    if (list) {
        printf("programs:\n ");
        for (char *p = list; *p; p++)
            if (*p == '\n')
                *p = ' ';
        printf(" %s\n", list);
        free(list);
    }
    printf("line editing: backspace, ctrl-U (kill line), ctrl-C, up/down (history)\n");
    printf("ctrl-C while a command runs ends it (exit status 130); CMD & runs in the background\n");
    return 0;
}

static const struct builtin *find_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

// ---------------------------------------------------------------------------
// Running a command: a builtin, or a program from the ramdisk.

// A foreground job: the program leads a process group of its own (its
// children join it), which is the console's foreground group while the shell
// waits: Ctrl-C interrupts it and what it started, not the shell or the
// background jobs. It starts suspended so that no Ctrl-C falls between its
// start and the console knowing its group.
static NTSTATUS run_foreground(char **argv, uint32_t flags, int *status)
{
    HANDLE h;
    uint32_t pid = 0;
    NTSTATUS s =
        SysSpawn(argv[0], (const char *const *)argv, flags | SPAWN_SUSPENDED | SPAWN_NEW_GROUP, &h);
    if (!NT_SUCCESS(s))
        return s;
    SysProcessId(h, &pid);
    SysConsoleForeground(pid);
    SysResume(h);
    s = SysWait(h, status);
    SysConsoleForeground(0);
    NtClose(h);
    return s;
}

static int run_program_verbose(int argc, char **argv, uint32_t flags)
{
    (void)argc;
    int status = 0;
    NTSTATUS s = run_foreground(argv, flags, &status);
    if (!NT_SUCCESS(s)) {
        spawn_failed("sh", argv[0], s, "command not found");
        return 127;
    }
    if (status == EXIT_STATUS_KILLED) {
        fprintf(stderr, "[exit status %d: killed]\n", status);
    } else if (status == EXIT_STATUS_INTERRUPTED) {
        // POSIX shells report a death by SIGINT as 128 + 2.
        fprintf(stderr, "[exit status %d: interrupted]\n", SH_INTERRUPTED);
        status = SH_INTERRUPTED;
    } else if (status != 0) {
        fprintf(stderr, "[exit status %d]\n", status);
    }
    return status;
}

static int run_command(int argc, char **argv, uint32_t flags)
{
    const struct builtin *b = find_builtin(argv[0]);
    if (b)
        return b->run(argc, argv, flags);
    return run_program_verbose(argc, argv, flags);
}

// The session's sampling rate. Setting an interval needs the privilege, which
// the shell has as the first process and its programs do not: so the shell
// sets ProfileTime to its finest interval once, and a plain `profile run` of a
// short program still gets a useful number of samples. (`sudo profile run -i
// N` changes it; the default, 78,125, is what the kernel starts with.)
static void fine_profile_interval(void)
{
    struct sys_profile_source src;
    uint32_t n = 0;
    if (NT_SUCCESS(SysProfileSources(&src, 1, &n)) && n == 1 && src.source == ProfileTime)
        NtSetIntervalProfile((ULONG)src.min_interval, ProfileTime);
}

int main(void)
{
    static char line[LINE_SIZE];
    char *argv[MAX_ARGS + 1];
    fine_profile_interval();
    SysInterruptMode(INTERRUPT_NOTIFY, NULL); // Ctrl-C stops a wait, never the shell
    // The console is ours (its owner, lib/abi/syscalls.h): our background
    // jobs may neither read it nor choose its foreground group.
    if (!NT_SUCCESS(SysConsoleForeground(0)))
        fprintf(stderr, "sh: the console belongs to another job: no job control here\n");
    printf("sh: type help for the commands\n");
    for (;;) {
        jobs_reap_ended();
        int len = readline("sh$ ", line, sizeof line);
        if (len == READLINE_TOO_LONG) {
            fprintf(stderr, "sh: line too long (at most %d characters): not run\n", LINE_SIZE - 1);
            continue;
        }
        if (len < 0) {
            fprintf(stderr, "sh: cannot read the console\n");
            return 1;
        }
        int argc = tokenize(line, argv, MAX_ARGS + 1);
        if (argc <= 0 || expand_last_pid(argc, argv) < 0)
            continue;
        if (strcmp(argv[argc - 1], "&") == 0 && argc > 1)
            job_start(argc - 1, argv, 0);
        else
            run_command(argc, argv, 0);
    }
}
