// profile: kernrate-, perf- and pmcstat-style profiling from the shell.
//
//   profile sources                     every KPROFILE_SOURCE and its intervals  (sources.c)
//   profile run [options] PROG [ARGS]   profile one program from start to exit   (run.c)
//   profile kernel [options] SECONDS    profile the kernel on every CPU (sudo)   (kernel.c)
//   profile stat [options] PROG [ARGS]  count events, as perf stat              (stat.c)
//   profile record [options] PROG       sample with call chains into a log      (record.c)
//   profile report [options] [FILE]     the reports made from that log          (report.c)
//   profile record/report --cswitch     counters at every context switch        (cswitch.c)
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
#include "offcpu.h"
#include "top.h"

static int cmd_help(int argc, char **argv)
{
    (void)argc, (void)argv;
    printf("%s\n%s\n", usage_run, usage_kernel);
    printf("usage: profile sources | help\n\n"
           "  sources        every profile source: number, name, counter kind, intervals, support\n"
           "  run            profile PROG from start to exit; one report per source\n"
           "  kernel         profile the kernel on every CPU for SECONDS (needs sudo)\n\n"
           "  -s SOURCE[:N]  a source by name (Time, ProfileTime, totalcycles...) or number,\n"
           "                 optionally with its own interval; repeat for several (default Time)\n"
           "  -i N           interval for sources without their own: 100 ns units for Time,\n"
           "                 events otherwise (default: Time's minimum, 1221 = 122.1 us;\n"
           "                 a counter's default interval). Setting it needs sudo: without,\n"
           "                 the interval in force is used and the report says so\n"
           "  -b SHIFT       bucket size 2^SHIFT bytes, 2..31 (default 2: 4-byte buckets)\n"
           "  -k             also the kernel's text, system scope, every CPU (needs sudo)\n"
           "  -n TOP         functions listed per module (default 20)\n"
           "  -p PID         attach to running process PID instead of PROG (its own process,\n"
           "                 a child, or sudo), until it exits or -d SECONDS have passed\n"
           "  -g             also send each histogram as gmon.out on the console (between\n"
           "                 'gmon: begin' and 'gmon: end'; scripts/gmon-extract.py saves it;\n"
           "                 gprof reads it with the program's ELF, or build/kernel.elf)\n\n"
           "A short program wants the 1221 interval, which only sudo may set:\n"
           "  sudo profile run primes 300000\n\n"
           "Exit status: 0 when the report was printed (whatever PROG's status), 1 when\n"
           "profiling failed, 2 for a bad command line.\n");
    return 0;
}

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
    {"offcpu", profile_offcpu_main}, // record --off-cpu, then its report (offcpu.c)
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
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, argv[1]) == 0)
            return commands[i].run(argc, argv);
    fprintf(stderr, "profile: unknown command '%s'\n%s\n", argv[1], usage_all);
    return EXIT_USAGE;
}
