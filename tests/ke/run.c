// One run of a sequence: the machine, the kernel stand-ins and the
// processes reset, each step applied (drawn first when exploring) and the
// stopped profiles checked after it, then the teardown and its checks. An
// ASan report ends the process: its callback first puts what it found in
// the run's report, where the supervisor (main.c) reads it.
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <string.h>

#include "kx.h"

#include "pmc/ke/profile.h"
#include "pmc/ke/sample.h"

// "ASan KIND in FUNCTION: ACCESS at FILE:LINE", from the report's first line,
// its access line and its first frame outside the sanitizer.
static void on_asan_report(const char *text)
{
    char kind[64] = "?", access[64] = "?", func[96] = "?", where[160] = "?";
    const char *e = strstr(text, "ERROR: AddressSanitizer: ");
    if (e)
        sscanf(e, "ERROR: AddressSanitizer: %63s", kind);
    const char *a = e ? strchr(e, '\n') : NULL;
    if (a)
        sscanf(a + 1, "%63[A-Z] of size", access);
    for (const char *f = strstr(text, "    #"); f; f = strstr(f + 1, "    #")) {
        const char *in = strstr(f, " in ");
        if (in && sscanf(in, " in %95s %159s", func, where) == 2 && strncmp(func, "__", 2) != 0)
            break;
    }
    const char *base = strrchr(where, '/');
    kx_fail("ASan %s in %s: %s at %s (step %u)", kind, func, access, base ? base + 1 : where,
            kx_report->step);
    if (kx_verbose)
        printf("  step %2u: FAIL %s\n", kx_report->step, kx_report->msg);
    fflush(stdout);
}

void kx_run_init(void)
{
    kx_machine_reset(KX_CPUS, 0);
    ke_profile_init();
    sample_plan_init();
    kx_pmc_init();
    __asan_set_error_report_callback(on_asan_report);
}

static void print_step(const struct kx_seq *s, unsigned i)
{
    char d[160], state[256] = "";
    kx_describe(&s->steps[i], d, sizeof d);
    for (unsigned c = 0; c < s->ncpus; c++)
        kx_ctx_describe(c, state + strlen(state), (unsigned)(sizeof state - strlen(state)));
    printf("  step %2u: %-64s %s%s\n", i, d, kx_failed() ? "FAIL" : "ok  ", state);
    if (kx_failed())
        printf("    %s\n", kx_report->msg);
    fflush(stdout);
}

bool kx_run(struct kx_seq *s, uint64_t *draw, struct kx_result *r, bool verbose)
{
    memset(r, 0, sizeof *r);
    memset(kx_report, 0, sizeof *kx_report);
    kx_machine_reset(s->ncpus, s->nmi);
    kx_kernel_reset();
    kx_pmc_reset();
    kx_profiles_reset(s->ncpus);
    kx_world_reset(s->ncpus);
    kx_check_reset();
    char msg[KX_MSG];
    for (unsigned i = 0; i < s->nsteps && !kx_failed(); i++) {
        kx_report->step = i;
        if (draw)
            kx_draw(draw, s, i);
        kx_step_apply(&s->steps[i]);
        r->steps++;
        if (!kx_failed() && !kx_profiles_check(msg, sizeof msg))
            kx_fail("%s", msg);
        if (verbose)
            print_step(s, i);
    }
    if (!kx_failed()) {
        kx_report->step = s->nsteps;
        kx_teardown();
        if (verbose)
            printf("  teardown: %s\n", kx_failed() ? kx_report->msg : "everything released");
    }
    r->samples = kx_samples_raised();
    r->failed = kx_failed();
    r->step = kx_report->step;
    snprintf(r->msg, sizeof r->msg, "%s", kx_report->msg);
    return !r->failed;
}
