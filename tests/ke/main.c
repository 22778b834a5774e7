// make ke-explore: seeded sequences of steps on the profile layer (kx.h),
// each failure shrunk and printed with the REPLAY= text that runs it again
// step by step. Usage:
//   ke-explore [--seqs N] [--seed S] [--replay TEXT] [--list 1]
// Ends with "ke-explore: N sequences, N steps, N samples injected, N
// failures" and exits 1 when any sequence failed. Sequence i of seed S runs
// on 2 to 4 CPUs, each kind of source delivered as NMI or not, with 16 to 64
// steps, all drawn from an xorshift64 seeded from S and i alone, so a
// sequence is the same whatever ran before it.
//
// The sequences run in a worker process; a failure ends it (ASan's reports
// cannot be survived, and after any failure the kernel's state is not to be
// trusted), the supervisor reads what the worker left in shared memory (the
// sequence and its report), shrinks it and starts a worker at the next
// sequence.
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kx.h"

#include "../xorshift.h"

#define KINDS       16 // distinct failures shrunk and printed in full
#define SEQ_SECONDS 10 // a sequence that has not ended by then is a failure

struct kx_shared *kx_shared;
bool kx_verbose;
static bool list; // --list 1: each sequence's REPLAY text as it ends

static struct {
    unsigned long long failures;
    char kinds[KINDS][64];
    unsigned nkinds;
} tally;

static void draw_shape(unsigned long long seed, unsigned long long i, struct kx_seq *s,
                       uint64_t *rng)
{
    *rng = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull;
    if (!*rng)
        *rng = 1;
    memset(s, 0, sizeof *s);
    s->ncpus = 2 + (unsigned)(xorshift64(rng) % 3);
    s->nmi = (unsigned)(xorshift64(rng) % 4);
    s->nsteps = 16 + (unsigned)(xorshift64(rng) % (KX_MAX_STEPS - 15));
}

static void worker(unsigned long long from, unsigned long long to, unsigned long long seed)
{
    for (unsigned long long i = from; i < to; i++) {
        uint64_t rng;
        kx_shared->current = i;
        kx_shared->seqs++;
        draw_shape(seed, i, &kx_shared->seq, &rng);
        alarm(SEQ_SECONDS);
        struct kx_result r;
        kx_run(&kx_shared->seq, &rng, &r, false);
        kx_shared->steps += r.steps;
        kx_shared->samples += r.samples;
        if (list) {
            char text[KX_MAX_STEPS * 24 + 16];
            kx_format(&kx_shared->seq, text, sizeof text);
            printf("sequence %llu: %s\n", i, text);
        }
        if (r.failed) {
            fflush(stdout);
            _exit(1);
        }
    }
    fflush(stdout);
    _exit(0);
}

// A failure of a kind not seen yet (its words before the first ':').
static bool new_kind(const char *msg)
{
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)strcspn(msg, ":"), msg);
    for (unsigned i = 0; i < tally.nkinds; i++)
        if (strcmp(tally.kinds[i], key) == 0)
            return false;
    if (tally.nkinds == KINDS)
        return false;
    snprintf(tally.kinds[tally.nkinds++], sizeof tally.kinds[0], "%s", key);
    return true;
}

static const char *const nmi_names[4] = {"no NMI", "the timer as NMI", "PMIs as NMI",
                                         "the timer and PMIs as NMI"};

static void report(unsigned long long seq, unsigned long long seed, struct kx_seq *s,
                   struct kx_report *rep)
{
    char at[32] = "the teardown";
    if (rep->step < s->nsteps)
        snprintf(at, sizeof at, "step %u of %u", rep->step, s->nsteps);
    printf("FAIL sequence %llu (seed %llu, %u CPUs, %s, %s): %s\n", seq, seed, s->ncpus,
           nmi_names[s->nmi & 3], at, rep->msg);
    fflush(stdout);
    if (!new_kind(rep->msg))
        return;
    kx_shrink(s, rep);
    printf("  shrunk to %u steps: %s\n", s->nsteps, rep->msg);
    for (unsigned i = 0; i < s->nsteps; i++) {
        char d[160];
        kx_describe(&s->steps[i], d, sizeof d);
        printf("    %2u  %s\n", i, d);
    }
    char text[KX_MAX_STEPS * 24 + 16];
    kx_format(s, text, sizeof text);
    printf("  replay: make ke-explore REPLAY='%s'\n", text);
    fflush(stdout);
}

static void explore(unsigned long long seqs, unsigned long long seed)
{
    for (unsigned long long next = 0; next < seqs;) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            worker(next, seqs, seed);
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            return;
        struct kx_report rep;
        kx_child_report(status, &rep);
        struct kx_seq s = kx_shared->seq;
        next = kx_shared->current + 1;
        tally.failures++;
        report(next - 1, seed, &s, &rep);
    }
}

static int replay(const char *text)
{
    struct kx_seq s;
    if (!kx_parse(text, &s)) {
        fprintf(stderr, "ke-explore: cannot read REPLAY text: %s\n", text);
        return 2;
    }
    printf("replay: %u CPUs, %s, %u steps\n", s.ncpus, nmi_names[s.nmi & 3], s.nsteps);
    kx_verbose = true;
    struct kx_result r;
    kx_run(&s, NULL, &r, true);
    kx_shared->seqs = 1;
    kx_shared->steps = r.steps;
    kx_shared->samples = r.samples;
    tally.failures = r.failed;
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {{"seqs", required_argument, NULL, 'n'},
                                            {"seed", required_argument, NULL, 's'},
                                            {"replay", required_argument, NULL, 'r'},
                                            {"list", required_argument, NULL, 'l'},
                                            {NULL, 0, NULL, 0}};
    unsigned long long seqs = 100000, seed = 1;
    const char *replay_text = NULL;
    for (int o; (o = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        if (o == 'n')
            seqs = strtoull(optarg, NULL, 0);
        else if (o == 's')
            seed = strtoull(optarg, NULL, 0);
        else if (o == 'r')
            replay_text = optarg;
        else if (o == 'l')
            list = atoi(optarg) != 0;
        else
            return 2;
    }
    kx_shared =
        mmap(NULL, sizeof *kx_shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (kx_shared == MAP_FAILED) {
        perror("ke-explore: shared memory");
        return 2;
    }
    kx_report = &kx_shared->report;
    kx_stats = &kx_shared->stats;
    kx_run_init();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (replay_text && replay(replay_text) == 2)
        return 2;
    if (!replay_text)
        explore(seqs, seed);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("time: %.1f s, seed %llu\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, seed);
    const struct kx_stats *st = &kx_shared->stats;
    printf("reached: %llu switches, %llu samples inside switch_to's publishing, %llu samples "
           "held while another CPU ran, %llu cross-CPU calls, %llu stops checked exactly, %llu "
           "deferred frees\n",
           st->switches, st->window, st->held, st->calls, st->checked, st->deferred_runs);
    printf("ke-explore: %llu sequences, %llu steps, %llu samples injected, %llu failures\n",
           kx_shared->seqs, kx_shared->steps, kx_shared->samples, tally.failures);
    return tally.failures ? 1 : 0;
}
