// Shrinking a failing sequence: runs of ever fewer steps, each in a child
// process (a use after free ends the process that finds it), quiet; a run
// that fails the same way (the same words before the message's first ':')
// is kept. Steps after the failing one never ran and go first.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kx.h"

#define ATTEMPT_SECONDS 20

void kx_child_report(int status, struct kx_report *rep)
{
    *rep = kx_shared->report;
    if (rep->failed || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        return;
    rep->failed = true;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        snprintf(rep->msg, sizeof rep->msg, "timeout: the run did not end (step %u)", rep->step);
    else if (WIFSIGNALED(status))
        snprintf(rep->msg, sizeof rep->msg, "crash: signal %d (step %u)", WTERMSIG(status),
                 rep->step);
    else
        snprintf(rep->msg, sizeof rep->msg, "crash: exit status %d, UBSan? (step %u)",
                 WEXITSTATUS(status), rep->step);
}

static bool same_failure(const char *a, const char *b)
{
    size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
    return la == lb && strncmp(a, b, la) == 0;
}

static bool attempt(const struct kx_seq *s, const char *want, struct kx_report *out)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO); // ASan's report of each try
        alarm(ATTEMPT_SECONDS);
        static struct kx_stats not_counted;
        kx_stats = &not_counted;
        struct kx_seq copy = *s;
        struct kx_result r;
        kx_run(&copy, NULL, &r, false);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    kx_child_report(status, out);
    return out->failed && same_failure(out->msg, want);
}

// Steps [at, at + n) left out, where the failure stays.
static bool drop_steps(struct kx_seq *s, const char *want, struct kx_report *rep)
{
    bool progress = false;
    for (unsigned n = s->nsteps / 2; n >= 1; n /= 2)
        for (unsigned at = 0; at + n <= s->nsteps;) {
            struct kx_seq t = *s;
            memmove(&t.steps[at], &t.steps[at + n], (t.nsteps - at - n) * sizeof t.steps[0]);
            t.nsteps -= n;
            struct kx_report r;
            if (!attempt(&t, want, &r)) {
                at += n;
                continue;
            }
            *s = t;
            *rep = r;
            if (r.step < s->nsteps)
                s->nsteps = r.step + 1;
            progress = true;
        }
    return progress;
}

// Fewer slices in each run step, where the failure stays.
static bool shorter_runs(struct kx_seq *s, const char *want, struct kx_report *rep)
{
    bool progress = false;
    for (unsigned i = 0; i < s->nsteps; i++) {
        struct kx_step *st = &s->steps[i];
        while (st->kind == KX_RUN && st->n > 1) {
            struct kx_seq t = *s;
            t.steps[i].n /= 2;
            struct kx_report r;
            if (!attempt(&t, want, &r))
                break;
            *s = t;
            *rep = r;
            progress = true;
        }
    }
    return progress;
}

void kx_shrink(struct kx_seq *s, struct kx_report *rep)
{
    char want[KX_MSG];
    snprintf(want, sizeof want, "%s", rep->msg);
    if (rep->step < s->nsteps)
        s->nsteps = rep->step + 1;
    for (unsigned round = 0; round < 8; round++)
        if (!drop_steps(s, want, rep) && !shorter_runs(s, want, rep))
            break;
}
