// What `profile run` and `profile kernel` share (histogram.c): their options,
// one profile object per (source, module) over the module's text, started
// and stopped together, and the reports and gmon.out files made from them.
#pragma once
#include <stdint.h>
#include <elfsym.h>
#include <profrange.h>
#include "cli.h"

#define MAX_SOURCES 8 // -s given at most this many times

// One source asked for: its interval on the command line (0: none) and what
// became of it (iv.src is the source).
struct wanted {
    uint64_t interval;
    struct interval iv;
};

struct options {
    struct wanted want[MAX_SOURCES];
    int nwant;
    uint64_t interval; // -i, 0 when absent
    uint32_t shift;
    unsigned top;
    int kernel, gmon;
    int first_arg; // argv index of PROG or SECONDS
};

// Options from argv[first] up to the first word that is not one; flags names
// the optional flags this command takes besides -s -i -b -n ("kg" for run:
// -k and -g). No -s: ProfileTime. Returns 0 or an exit status.
int parse_options(int argc, char **argv, int first, const char *usage, const char *flags,
                  struct options *o);
// Each source gets its own interval, else -i, else its default (ProfileTime:
// the minimum, for a short program), as interval_set negotiates it.
int set_intervals(struct options *o, int privileged, char *note, size_t note_size);
void restore_intervals(const struct options *o);

struct profile {
    HANDLE handle;
    struct prof_range range;
    int started;
};

// A profile object over img's text for process (NULL: system scope).
// 0, or -1 having said why.
int create_profile(struct profile *p, HANDLE process, const struct elf_image *img,
                   const char *module, uint32_t shift, const struct sys_profile_source *src);
void close_profile(struct profile *p); // stops it first when started
int start_all(struct profile *ps, int n);
void stop_all(struct profile *ps, int n); // and reads each one's statistics

// One report per source (ps: per_source profiles for each source in turn),
// then with -g each histogram as a gmon.out.
void report_all(const struct options *o, struct profile *ps, int per_source, const char *title,
                uint64_t elapsed_ns, const char *note);
