// One run of a sequence: the kernel booted on the variant's model, each step
// applied and checked, an NMI injected at the MSR accesses chosen, and at the
// end everything released and every counter checked idle.
#include <stdio.h>
#include <string.h>
#include "explore.h"
#include "ke_host.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/pmu_regs.h"
#include "tests.h"

#define NMI_IP 0xFFFFFFFF80100400ull // the interrupted kernel code

char ex_pending[EX_MSG];
bool ex_verbose; // a violation found inside a PMI (the logger's records)

static struct {
    const struct ex_seq *s;
    struct ex_result *r;
    unsigned step;
    bool armed, injecting;
    struct ex_rng rng;
} run;

static bool verbose_run;

static void inject(unsigned cpu, bool spurious)
{
    run.injecting = true;
    struct ex_result *r = run.r;
    r->nmis++;
    if (r->npoints < EX_MAX_INJECT)
        r->points[r->npoints++] =
            (struct ex_point){(uint16_t)run.step, (uint16_t)(r->accesses[run.step] - 1)};
    if (model_pmi_pending(cpu))
        model_deliver_pending(cpu, NMI_IP);
    else if (spurious && pmc_pmi_as_nmi)
        model_raise_pmi(cpu, NMI_IP);
    run.injecting = false;
}

static bool chosen(unsigned step, unsigned k)
{
    if (run.s->density)
        return ex_below(&run.rng, run.s->density) == 0;
    for (unsigned i = 0; i < run.s->npoints; i++)
        if (run.s->points[i].step == step && run.s->points[i].k == k)
            return true;
    return false;
}

// After an MSR access outside the PMI: a pending PMI delivered there (as a
// hypervisor injects it at the VM entry after an intercepted rdmsr/wrmsr).
static void on_msr(unsigned cpu, uint32_t msr, bool write)
{
    (void)msr;
    (void)write;
    if (!run.armed || run.injecting || run.step >= EX_MAX_OPS)
        return;
    unsigned k = run.r->accesses[run.step]++;
    if (chosen(run.step, k) && model_pmi_pending(cpu))
        inject(cpu, false);
}

static void print_step(unsigned i, const struct ex_op *op, const char *verdict)
{
    char d[128];
    ex_describe(op, d, sizeof d);
    unsigned pending = 0;
    for (unsigned c = 0; c < ex_ref.ncpus; c++)
        pending |= (unsigned)model_pmi_pending(c) << c;
    printf("  step %2u: %-44s %s (MSR accesses %u, NMIs so far %u, PMIs pending 0x%x)\n", i, d,
           verdict, run.r->accesses[i], run.r->nmis, pending);
}

static bool step(unsigned i, char *msg)
{
    const struct ex_op *op = &run.s->ops[i];
    unsigned model_failures = tap_failures();
    run.step = i;
    run.armed = true;
    ex_apply(op);
    bool ok = true;
    ex_verbose = verbose_run && op->kind == OP_READ;
    if (op->kind == OP_READ)
        ok = ex_read_step(op->a % EX_SLOTS, msg, EX_MSG);
    if (op->kind == OP_NMI)
        inject(op->a % ex_ref.ncpus, true);
    run.armed = false;
    ex_verbose = false;
    ex_note_step();
    if (ok && ex_pending[0]) {
        snprintf(msg, EX_MSG, "%s", ex_pending);
        ok = false;
    }
    ok = ok && ex_check(msg, EX_MSG);
    if (ok && tap_failures() != model_failures) {
        snprintf(msg, EX_MSG, "model: a check of the PMU model failed (#GP, LVTPC, ...)");
        ok = false;
    }
    return ok;
}

static void finish_run(struct ex_result *r, bool verbose)
{
    char msg[EX_MSG];
    run.step = EX_MAX_OPS;
    ex_teardown();
    bool ok = ex_check_records(msg, EX_MSG) && ex_check_idle(msg, EX_MSG);
    if (!ok && !r->failed) {
        r->failed = true;
        r->step = run.s->nops;
        snprintf(r->msg, EX_MSG, "%s", msg);
    }
    if (verbose)
        printf("  teardown: release everything: %s\n", ok ? "idle" : msg);
    pmc_shutdown();
}

bool ex_run(struct ex_seq *s, struct ex_rng *draw, struct ex_result *r, bool verbose)
{
    memset(r, 0, sizeof *r);
    memset(&run, 0, sizeof run);
    ex_pending[0] = 0;
    run.s = s;
    run.r = r;
    run.rng.s = s->inject_seed;
    verbose_run = verbose;
    ex_verbose = false;
    ex_setup(&ex_variants[s->variant]);
    model_nmi_hook = on_msr;
    char msg[EX_MSG];
    for (unsigned i = 0; i < s->nops; i++) {
        r->steps++;
        if (draw)
            ex_draw(draw, s, i);
        bool ok = step(i, msg);
        if (verbose)
            print_step(i, &s->ops[i], ok ? "ok" : "FAIL");
        if (!ok) {
            r->failed = true;
            r->step = i;
            snprintf(r->msg, EX_MSG, "%s", msg);
            if (verbose)
                printf("    %s\n", msg);
            break;
        }
    }
    finish_run(r, verbose);
    model_nmi_hook = NULL;
    return !r->failed;
}
