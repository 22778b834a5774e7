// Off-CPU time (offcpu.c): the record flag and the report.
#pragma once

// Removes every "--off-cpu" from argv[2..] (argc shrinks): 1 when there was one.
int offcpu_take_flag(int *argc, char **argv);
// `profile report --off-cpu [--folded] [-n TOP] [FILE]`.
int profile_offcpu_report_main(int argc, char **argv);
// `profile offcpu ARGS`: record --off-cpu ARGS, then report --off-cpu.
int profile_offcpu_main(int argc, char **argv);
