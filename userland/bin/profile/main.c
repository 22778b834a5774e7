// profile: kernrate-, perf- and pmcstat-style profiling from the shell.
//
//   profile sources                     every KPROFILE_SOURCE and its intervals  (sources.c)
//   profile run [options] PROG [ARGS]   profile one program from start to exit   (run.c)
//   profile kernel [options] SECONDS    profile the kernel on every CPU (sudo)   (kernel.c)
//   profile stat [options] PROG [ARGS]  count events, as perf stat              (stat.c)
//   profile record [options] PROG       sample with call chains into a log      (record.c)
//   profile report [options] [FILE]     the reports made from that log          (report.c)
//   profile record/report --cswitch     counters at every context switch        (cswitch.c)
//   profile help [COMMAND]              the commands, or one command's options  (help.c)
//
// What they share is in cli.c; run and kernel also share histogram.c (profile
// objects) and kernrate.c (their report).
#include <delivery.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <syscall.h>
#include "cli.h"
#include "offcpu_time.h"
#include "top.h"

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"sources", cmd_sources},
    {"run", cmd_run},
    {"kernel", cmd_kernel},
    {"help", cmd_help},
    {"stat", profile_stat_main},     // counting
    {"record", profile_record_main}, // sampling with call chains, or --cswitch
    {"report", profile_report_main},
    {"top", profile_top_main},       // the hottest functions, live (top.c)
    {"offcpu", profile_offcpu_main}, // record --off-cpu, then its report (offcpu_time.c)
};

// --nmi (run, record, kernel): ProfileTime must be delivered as NMI, which the
// kernel chooses at boot (profile_nmi=1; docs/nmi.md). pmc info says which
// delivery is in use and why; without the NMI, say so and fail (status 3).
#define EXIT_NO_NMI 3
static int take_nmi_option(int *argc, char **argv)
{
    int j = 0;
    bool nmi = false;
    for (int i = 0; i < *argc; i++) {
        if (i >= 2 && strcmp(argv[i], "--nmi") == 0)
            nmi = true;
        else
            argv[j++] = argv[i];
    }
    *argc = j;
    argv[j] = NULL;
    if (!nmi)
        return 0;
    char why[160];
    if (profile_time_nmi(why, sizeof why))
        return 0;
    fprintf(stderr, "profile: --nmi: no NMI timer here (%s)\n", why);
    return EXIT_NO_NMI;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "profile: which command?\n%s\n", usage_all);
        return EXIT_USAGE;
    }
    int nmi = take_nmi_option(&argc, argv);
    if (nmi)
        return nmi;
    if (prof_load_sources() < 0)
        return EXIT_FAIL;
    SysInterruptMode(INTERRUPT_NOTIFY, NULL); // Ctrl-C: stop, report, then exit as interrupted
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, argv[1]) != 0)
            continue;
        int status = commands[i].run(argc, argv);
        fflush(NULL);
        return prof_interrupted() ? EXIT_STATUS_INTERRUPTED : status;
    }
    fprintf(stderr, "profile: unknown command '%s'\n%s\n", argv[1], usage_all);
    return EXIT_USAGE;
}
