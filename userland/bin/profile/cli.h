// What every `profile` subcommand shares (cli.c): the usage texts, the exit
// statuses and usage errors, a command line joined into one string, the
// source table, the interval negotiation with the kernel, the privilege and
// the process list. Then the subcommands themselves, one file each.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"
#include "lib/abi/profile.h"

// Exit statuses: 2 for a command line that cannot work, 1 for a failure later.
#define EXIT_USAGE 2
#define EXIT_FAIL  1

extern const char usage_all[], usage_sources[], usage_run[], usage_kernel[], usage_record[],
    usage_report[], usage_stat[], usage_cswitch_record[], usage_cswitch_report[], usage_top[];

// "profile: WHAT", then the usage line ended by tail: EXIT_USAGE.
PRINTF_LIKE(3, 4) int usage_say(const char *usage, const char *tail, const char *fmt, ...);
// "profile: WHAT", then the usage and "(see 'profile help COMMAND')": EXIT_USAGE.
#define usage_error(usage, ...) usage_say(usage, NULL, __VA_ARGS__)
// "profile: WHAT", then the usage alone (stat's and --cswitch's form): EXIT_USAGE.
#define usage_short(usage, ...) usage_say(usage, "", __VA_ARGS__)

// argv[0..argc-1] joined by single spaces, in memory from malloc (the caller
// frees it): never cut, however long. NULL when out of memory.
char *join_words(int argc, char *const *argv);

// Whether word is one of argv[2..argc-1] (the subcommand's arguments).
int argv_has(int argc, char **argv, const char *word);
// Removes every word from argv[2..] (argc shrinks): 1 when there was one.
int argv_take(int *argc, char **argv, const char *word);

// The source table (every KPROFILE_SOURCE but the end marker), read once by
// main with prof_load_sources, which prints why when it fails (-1).
extern struct sys_profile_source prof_sources[ProfileSourceCount];
extern uint32_t prof_nsources;
int prof_load_sources(void);
// Case-insensitive equality after dropping a "Profile" prefix from either.
int prof_same_source_name(const char *a, const char *b);
// A source by name ("Time", "profiletime") or number ("0", "0x13"); NULL if none.
const struct sys_profile_source *prof_find_source(const char *text);
// The row of KPROFILE_SOURCE source (a row's index is not its value); NULL if none.
const struct sys_profile_source *prof_source_row(uint32_t source);
// A whole decimal or 0x number; PROF_NUMBER_TOO_LARGE for one of 64 bits
// or more, -1 for anything else.
#define PROF_NUMBER_TOO_LARGE (-2)
int prof_parse_number(const char *text, uint64_t *out);
// The usage error for option's value text, which prof_parse_number refused
// or whose value is out of the option's range: "OPTION 'TEXT': out of range"
// for a number too large for 64 bits, else "OPTION wants WANTS, not 'TEXT'".
int number_error(const char *usage, const char *option, const char *text, const char *wants);

// One source's interval: the one wanted, the one in force, the one to put back.
struct interval {
    const struct sys_profile_source *src;
    uint64_t want;     // wanted during the run
    int asked;         // want came from the command line, not from a default
    uint64_t in_force; // set by interval_set: the source's interval during the run
    uint64_t previous; // set by interval_set: what interval_restore puts back
    int changed;       // interval_set changed it
};

// The negotiation with the kernel, for `profile run`, `kernel` and `record`.
// want outside the source's range: EXIT_USAGE. Equal to the interval in
// force: kept. Otherwise set when privileged; when it cannot be set:
//   may_keep 1: the one in force is kept without a word (record's PMC then
//               counts want events a sample itself);
//   may_keep 0: EXIT_FAIL with a message when it was asked for or the kernel
//               refused, else the one in force is kept and note says so.
// 0 on success (note is left alone unless it says something).
int interval_set(struct interval *iv, int privileged, int may_keep, char *note, size_t note_size);
void interval_restore(const struct interval *iv); // when interval_set changed it

// Whether this process holds the system-profile privilege.
int prof_holds_privilege(void);
// The process list (SysProcessList) in a table of this file: the number of
// rows in *rows, 0 when it cannot be read.
uint32_t prof_process_list(const struct sys_process_info **rows);
// Whether process pid has ended (a zombie, or gone).
int prof_exited(uint32_t pid);

// profile help [COMMAND] (help.c).
int cmd_help(int argc, char **argv);

// The note under every report of time samples taken under QEMU without
// -icount (run, kernel, record, report); prof_time_approximate: whether this
// machine is one (SysInfo).
extern const char note_approximate_time[];
int prof_time_approximate(void);

// Ctrl-C (lib/abi/syscalls.h, INTERRUPT_NOTIFY): main asks to be told, and every command
// stops measuring when told and still prints what it gathered, as perf does;
// profile then exits with EXIT_STATUS_INTERRUPTED. prof_interrupted takes a
// pending interrupt and says whether one has come since the start.
int prof_interrupted(void);
// SysWait for a child of the same process group: an interrupt ends the child
// (INTERRUPT_END), so a STATUS_ALERTED is taken and the wait goes on.
NTSTATUS prof_wait(HANDLE child, int *exit_status);

// -p PID [-d SECONDS] (attach.c): a running process measured for SECONDS or
// until it exits (without -d: until it exits).
struct attach {
    uint32_t pid; // 0: no -p
    uint64_t ms;  // -d, in ms; 0: until the process exits
    HANDLE process;
    char name[PROCESS_NAME_MAX + 1];
    uint64_t start_ns;
    int exited, exit_status; // set by attach_wait / attach_finish
};
// Takes -p and -d (and their values) out of argv's options from argv[first]
// on; valued: the letters of the command's options that take a value.
// depth_d: -d without -p is the command's own (record's DEPTH). 0 or EXIT_USAGE.
int attach_extract(int *argc, char **argv, int first, const char *valued, int depth_d,
                   const char *usage, struct attach *a);
// Opens the process: 0; EXIT_USAGE after one line for a PID that names no
// live process; EXIT_FAIL after one line when it may not be opened.
int attach_open(struct attach *a);
int attach_done(const struct attach *a); // SECONDS passed, or the process ended
void attach_wait(struct attach *a);      // until attach_done, then attach_finish
void attach_finish(struct attach *a);    // exited and exit_status
void attach_say_end(const struct attach *a, const char *who); // how the attachment ended
void attach_close(struct attach *a);

// The subcommands: argv[1] is the subcommand's name; each returns the exit status.
int cmd_sources(int argc, char **argv);                 // sources.c
int cmd_run(int argc, char **argv);                     // run.c
int cmd_kernel(int argc, char **argv);                  // kernel.c
int profile_stat_main(int argc, char **argv);           // stat.c
int profile_record_main(int argc, char **argv);         // record.c
int profile_report_main(int argc, char **argv);         // report.c
int profile_cswitch_record_main(int argc, char **argv); // cswitch.c: record --cswitch
int profile_cswitch_report_main(int argc, char **argv); // cswitch.c: report --cswitch
int profile_hook_report_main(int argc, char **argv);    // cswitch.c: report --pmc-events
