// Off-CPU time (offcpu_time.c): the report, and `profile offcpu`.
#pragma once

// `profile report --off-cpu [--folded] [-n TOP] [FILE]`.
int profile_offcpu_report_main(int argc, char **argv);
// `profile offcpu ARGS`: record --off-cpu ARGS, then report --off-cpu.
int profile_offcpu_main(int argc, char **argv);
