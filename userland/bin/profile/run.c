// `profile run [options] PROG [ARGS]`: profile one program from start to exit.
//
// Creates PROG suspended, puts one profile object per source over the
// executable PT_LOAD range of PROG's ELF file (and with -k a system-scope one
// over the kernel's), starts them, resumes PROG, waits for it, stops them and
// prints one report per source (kernrate.c). With -g each program histogram
// also leaves the machine as a gmon.out (lib/gmon.c).
#include <clock.h>
#include <process.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include "histogram.h"

struct run {
    struct options o;
    const char *prog;
    int privileged;
    struct elf_image prog_img, kernel_img;
    char note[128];
    HANDLE child;
    struct profile ps[MAX_SOURCES * 2];
    int nprof;
    uint64_t elapsed_ns;
    struct attach at; // -p PID [-d SECONDS]: child is at.process, not ours
};

// A process left suspended by a failed run is killed: it is our child, not
// yet started, with the program's name.
static void kill_suspended_child(const char *name)
{
    const struct sys_process_info *list;
    uint32_t count = prof_process_list(&list), me = SysGetPid();
    for (uint32_t i = 0; i < count; i++)
        if (list[i].parent == me && list[i].state == PROC_SUSPENDED &&
            strncmp(list[i].name, name, PROCESS_NAME_MAX) == 0)
            SysKill(list[i].pid);
}

// The command line: options, a program that exists, the privilege -k needs.
static int run_parse(struct run *r, int argc, char **argv)
{
    int st = attach_extract(&argc, argv, 2, "sibn", 0, usage_run, &r->at);
    if (!st)
        st = parse_options(argc, argv, 2, usage_run, "kg", &r->o);
    if (st)
        return st;
    if (r->at.pid && r->o.first_arg < argc)
        return usage_error(usage_run, "-p PID attaches to a running process: no PROG with it");
    if (r->at.pid && (st = attach_open(&r->at)) != 0)
        return st;
    if (!r->at.pid && r->o.first_arg >= argc)
        return usage_error(usage_run, "%s", "no program to run");
    r->prog = r->at.pid ? r->at.name : argv[r->o.first_arg];
    if (!program_exists(r->prog))
        return usage_error(usage_run, "no program '%s' in the ramdisk", r->prog);
    r->privileged = prof_holds_privilege();
    if (r->o.kernel && !r->privileged) {
        fprintf(stderr, "profile: -k (the kernel, system scope) needs the system-profile "
                        "privilege: run 'sudo profile run -k ...'\n");
        return EXIT_FAIL;
    }
    return 0;
}

// The symbols of PROG (and with -k the kernel's): 0 or EXIT_FAIL.
static int run_load_images(struct run *r)
{
    NTSTATUS s = elf_image_load(r->prog, &r->prog_img);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: %s: cannot read its ELF symbols: %s\n", r->prog,
                nt_status_name(s));
        return EXIT_FAIL;
    }
    if (r->o.kernel && !NT_SUCCESS(s = elf_image_load("kernel", &r->kernel_img))) {
        fprintf(stderr, "profile: kernel: cannot read its ELF symbols: %s\n", nt_status_name(s));
        return EXIT_FAIL;
    }
    return 0;
}

// PROG, suspended, and its profile objects: per source one over PROG's text
// and with -k one over the kernel's. 0 or -1 having said why.
static int run_create(struct run *r, char **argv)
{
    r->child = r->at.process;
    NTSTATUS s = r->child ? STATUS_SUCCESS
                          : SysSpawn(r->prog, (const char *const *)&argv[r->o.first_arg],
                                     SPAWN_SUSPENDED, &r->child);
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: cannot start %s: %s\n", r->prog, nt_status_name(s));
        r->child = NULL;
        return -1;
    }
    for (int k = 0; k < r->o.nwant; k++) {
        const struct sys_profile_source *src = r->o.want[k].iv.src;
        if (create_profile(&r->ps[r->nprof], r->child, &r->prog_img, r->prog, r->o.shift, src) < 0)
            return -1;
        r->nprof++;
        if (!r->o.kernel)
            continue;
        if (create_profile(&r->ps[r->nprof], NULL, &r->kernel_img, "kernel", r->o.shift, src) < 0)
            return -1;
        r->nprof++;
    }
    return 0;
}

// Start the profiles, let PROG run to its end, stop them. 0 or -1.
static int run_measure(struct run *r)
{
    if (start_all(r->ps, r->nprof) < 0)
        return -1;
    int exit_status = 0;
    uint64_t t0 = clock_ns();
    NTSTATUS s = STATUS_SUCCESS;
    if (r->at.pid) {
        attach_wait(&r->at);
    } else {
        s = SysResume(r->child);
        if (NT_SUCCESS(s))
            s = prof_wait(r->child, &exit_status);
    }
    r->elapsed_ns = clock_ns() - t0;
    stop_all(r->ps, r->nprof);
    if (r->at.pid) {
        attach_say_end(&r->at, "profile");
        return 0;
    }
    if (!NT_SUCCESS(s)) {
        fprintf(stderr, "profile: running %s: %s\n", r->prog, nt_status_name(s));
        return -1;
    }
    char words[40];
    printf("profile: %s %s%s\n", r->prog, exit_words(exit_status, words, sizeof words),
           exit_status == EXIT_STATUS_KILLED || exit_status == EXIT_STATUS_INTERRUPTED
               ? "; the report covers what was sampled until then"
               : "");
    return 0;
}

static void run_close(struct run *r, int status)
{
    for (int i = 0; i < r->nprof; i++)
        close_profile(&r->ps[i]);
    if (r->child && !r->at.pid) {
        if (status)
            kill_suspended_child(r->prog);
        NtClose(r->child);
    }
    attach_close(&r->at);
    restore_intervals(&r->o);
    elf_image_free(&r->prog_img);
    elf_image_free(&r->kernel_img);
}

int cmd_run(int argc, char **argv)
{
    static struct run r;
    memset(&r, 0, sizeof r);
    int st = run_parse(&r, argc, argv);
    if (st)
        return st;
    st = run_load_images(&r);
    if (!st)
        st = set_intervals(&r.o, r.privileged, r.note, sizeof r.note);
    if (!st && (run_create(&r, argv) < 0 || run_measure(&r) < 0))
        st = EXIT_FAIL;
    if (!st) {
        char *title = r.at.pid ? NULL : join_words(argc - r.o.first_arg, argv + r.o.first_arg);
        report_all(&r.o, r.ps, r.o.kernel ? 2 : 1, title ? title : r.prog, r.elapsed_ns, r.note);
        free(title);
    }
    run_close(&r, st);
    return st;
}
