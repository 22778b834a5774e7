// profile help [COMMAND]: one line per command, or one command's usage and
// options (as `perf help COMMAND` and `git help COMMAND` do).
#include <stdio.h>
#include <string.h>
#include "cli.h"

static const char help_sources[] =
    "Every profile source: number, name, counter kind, intervals, whether it is\n"
    "supported here and why not.\n";

static const char help_sampling[] =
    "  -s SOURCE[:N]  a source by name (Time, ProfileTime, totalcycles...) or number,\n"
    "                 optionally with its own interval; repeat for several (default Time)\n"
    "  -i N           interval for sources without their own: 100 ns units for Time,\n"
    "                 events otherwise (default: the interval in force; the shell sets\n"
    "                 Time's finest, 1221 = 122.1 us, at boot). Changing it needs sudo:\n"
    "                 without, the interval in force is used and the report says so\n"
    "  -b SHIFT       bucket size 2^SHIFT bytes, 2..31 (default 2: 4-byte buckets)\n"
    "  -n TOP         functions listed per module (default 20)\n"
    "  -g             also send each histogram as gmon.out on the console (between\n"
    "                 'gmon: begin' and 'gmon: end'; scripts/gmon-extract.py saves it;\n"
    "                 gprof reads it with the program's ELF, or build/kernel.elf)\n";

static const char help_run[] =
    "Profile PROG from start to exit, one kernrate report per source.\n\n"
    "  -k             also the kernel's text, system scope, every CPU (needs sudo)\n"
    "  -p PID         attach to running process PID instead of PROG (its own process,\n"
    "                 a child, or sudo), until it exits or -d SECONDS have passed\n";

static const char help_kernel[] = "Profile the kernel on every CPU for SECONDS (needs sudo).\n\n";

static const char help_stat[] =
    "Count events while PROG runs, as perf stat.\n\n"
    "  -e EVENT,...   task-clock, context-switches, cpu-migrations, page-faults,\n"
    "                 system-calls, cycles, instructions, branches, ... or a source's\n"
    "                 name; :u counts ring 3 only, :k ring 0 only (default: software\n"
    "                 events, and hardware ones where there is a PMU)\n"
    "  -a             every CPU, the whole system (needs sudo)\n"
    "  -r N           run PROG N times; means and their relative error\n"
    "  --per-cpu      one column per CPU (needs sudo)\n"
    "  -p PID         count running process PID until it exits or -d SECONDS pass\n";

static const char help_record[] =
    "Sample PROG and what it starts with a PMC into a log file (or with -a the\n"
    "whole machine for SECONDS), for profile report.\n\n"
    "  -g             record each sample's call chain\n"
    "  -s SOURCE[:u|:k]  the source (or -e); :u ring 3 only, :k ring 0 only (sudo)\n"
    "  -i N           the sampling interval (set under sudo, else subsampled)\n"
    "  -k             kernel-mode samples too (needs sudo)\n"
    "  -a             system-wide (needs sudo); implies -k\n"
    "  -o FILE        the log file (default /tmp/pmc.log)\n"
    "  --host         stream the recording to the host's file while it records (the\n"
    "                 virtio console: `make record` leaves it in build/recording.bin)\n"
    "  -r KB          ring size per CPU, 4 to 16384 KiB (default 256)\n"
    "  -d DEPTH       call-chain depth, 1 to 512 frames (default 128); with -p PID,\n"
    "                 -d SECONDS is the attachment's time instead\n"
    "  -p PID         sample running process PID until it exits or -d SECONDS pass\n"
    "  --off-cpu      also each switch-out with its chain and why it left, and the\n"
    "                 time away (implies -g; not with -a; docs/off-cpu.md)\n"
    "  --cswitch, --pmc-events HOOK,...  counter totals at every context switch or\n"
    "                 hook event instead of samples (see the second usage line)\n";

static const char help_report[] =
    "The reports made from profile record's log.\n\n"
    "  --folded       one folded stack a line (flame graphs)\n"
    "  --export       the log's samples and symbols for scripts/profview\n"
    "  --host         the log as it is to the host's file (the virtio console), as\n"
    "                 `profile record --host` writes one\n"
    "  --sort pid,cpu samples per process, per CPU, or both, before the table\n"
    "  -n TOP         rows of the flat table (default 20)\n"
    "  --off-cpu      the time off the CPU by reason and stack (--folded: in microseconds)\n"
    "  --cswitch, --pmc-events  the counters recorded with those options (--json: as JSON)\n";

static const char help_top[] =
    "The hottest functions, redrawn every -d SECONDS (default 1) until q or Ctrl-C,\n"
    "as perf top: share, hits in the last interval and in all, module, function.\n\n"
    "  -a             the whole machine, the kernel too (the default; needs sudo)\n"
    "  -p PID         only process PID (its user code; -k adds the kernel)\n"
    "  -k             kernel-mode samples too\n"
    "  -s SOURCE      the source (default ProfileTime)\n"
    "  -n ROWS        rows of the table (default 20)\n";

static const char help_offcpu[] =
    "profile record --off-cpu ARGS, then profile report --off-cpu: where PROG's\n"
    "time on and off the CPU went (docs/off-cpu.md).\n";

static const char usage_offcpu[] =
    "usage: profile offcpu [record options] (PROG [ARGS] | -p PID [-d SECONDS])";

static const char help_tail[] =
    "\nCtrl-C stops the measurement and the report of what was gathered is still\n"
    "printed; profile then exits as interrupted (the shell says 130).\n"
    "Exit status: 0 when the report was printed (whatever PROG's status), 1 when\n"
    "profiling failed, 2 for a bad command line, 3 for --nmi without an NMI timer.\n";

static const struct {
    const char *name, *usage, *usage2, *text, *options;
} topics[] = {
    {"sources", usage_sources, NULL, help_sources, NULL},
    {"run", usage_run, NULL, help_run, help_sampling},
    {"kernel", usage_kernel, NULL, help_kernel, help_sampling},
    {"stat", usage_stat, NULL, help_stat, NULL},
    {"record", usage_record, usage_cswitch_record, help_record, NULL},
    {"report", usage_report, usage_cswitch_report, help_report, NULL},
    {"top", usage_top, NULL, help_top, NULL},
    {"offcpu", usage_offcpu, NULL, help_offcpu, NULL},
};
#define NTOPICS (sizeof topics / sizeof topics[0])

static void help_overview(void)
{
    printf("usage: profile COMMAND [options] ...\n\n"
           "  sources   every profile source and its intervals\n"
           "  run       profile PROG from start to exit (kernrate reports)\n"
           "  kernel    profile the kernel on every CPU for SECONDS (sudo)\n"
           "  stat      count events while PROG runs (perf stat)\n"
           "  record    sample PROG with call chains into a log (perf record)\n"
           "  report    the reports made from that log (perf report)\n"
           "  top       the hottest functions, refreshed (perf top)\n"
           "  offcpu    record and report time on and off the CPU\n"
           "  help      this list; profile help COMMAND: that command's options\n\n");
    for (size_t i = 0; i < NTOPICS; i++)
        printf("%s\n", topics[i].usage);
    printf("%s", help_tail);
}

int cmd_help(int argc, char **argv)
{
    if (argc <= 2) {
        help_overview();
        return 0;
    }
    if (argc > 3)
        return usage_short("usage: profile help [COMMAND]", "one command at most");
    for (size_t i = 0; i < NTOPICS; i++) {
        if (strcmp(argv[2], topics[i].name) != 0)
            continue;
        printf("%s\n", topics[i].usage);
        if (topics[i].usage2)
            printf("%s\n", topics[i].usage2);
        printf("\n%s%s%s", topics[i].text, topics[i].options ? topics[i].options : "", help_tail);
        return 0;
    }
    if (strcmp(argv[2], "help") == 0) {
        help_overview();
        return 0;
    }
    return usage_short("usage: profile help [COMMAND]",
                       "no command '%s' (sources, run, kernel, "
                       "stat, record, report)",
                       argv[2]);
}
