// make pmu-explore: seeded random sequences over every model variant, each
// failure shrunk and printed with the REPLAY= text that runs it again step by
// step. Usage:
//   explore [--seqs N] [--seed S] [--variant NAME] [--replay TEXT] [--trace 1] [--every 1]
// Ends with "pmu-explore: N sequences, N steps, N NMIs injected, N variants,
// N failures"; exits 1 when any sequence failed. Sequence i runs on variant
// i mod 22 with 6 to 47 steps; by turns, its pending PMIs are delivered at
// no MSR access, at every one, at one in 3, at one in 16 (at random), or
// systematically: the sequence once without, then once per access (up to 48
// of them, spread evenly) with an NMI at that access alone, each run counted
// as a sequence.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "explore.h"
#include "tap.h"

#define MAX_VARIANTS 24
#define MAX_KINDS    16 // distinct failures reported in full

struct ex_variant ex_variants[MAX_VARIANTS];
unsigned ex_nvariants;

static void add(const struct model_config *base, const char *name, bool nmi)
{
    struct ex_variant *v = &ex_variants[ex_nvariants++];
    v->cfg = *base;
    snprintf(v->name, sizeof v->name, "%s-%s", name, nmi ? "nmi" : "vector");
    v->cfg.name = v->name;
    v->nmi = nmi;
    // A PMI taken as NMI waits, as under a hypervisor, for the next access
    // or VM entry: an NMI can then land between any two MSR accesses.
    v->cfg.late_pmi = nmi || base->hypervisor;
    // Under a hypervisor the guest's PMI path retires instructions that the
    // virtual counters count, between its exits.
    if (base->hypervisor && !base->pmu_ignored)
        v->cfg.handler_insns = 40;
}

static void add_both(const struct model_config *base, const char *name)
{
    add(base, name, false);
    add(base, name, true);
}

static struct model_config with_version(const struct model_config *base, unsigned version)
{
    struct model_config m = *base;
    m.version = version;
    m.full_width = false;
    return m;
}

// Intel v1-v5; what KVM exposes to an Intel guest (version 2, 8 counters,
// full-width writes) and to an AMD one (PerfCtrExtCore without PerfMonV2);
// AMD legacy, PerfCtrExtCore, PerfMonV2; and no PMU at all (QEMU TCG).
void ex_variants_init(void)
{
    struct model_config v2 = with_version(&MODEL_INTEL_V4, 2),
                        v3 = with_version(&MODEL_INTEL_V4, 3);
    struct model_config kvm_amd = MODEL_AMD_EXT;
    kvm_amd.hypervisor = "KVMKVMKVM";
    kvm_amd.ncpus = 4;
    kvm_amd.msr_cost_ns = MODEL_COST_KVM_NS;
    ex_nvariants = 0;
    add_both(&MODEL_INTEL_V1, "intel-v1");
    add_both(&v2, "intel-v2");
    add_both(&v3, "intel-v3");
    add_both(&MODEL_INTEL_V4, "intel-v4");
    add_both(&MODEL_INTEL_V5, "intel-v5");
    add_both(&MODEL_INTEL_KVM_V2, "kvm-intel");
    add_both(&kvm_amd, "kvm-amd");
    add_both(&MODEL_AMD_LEGACY, "amd-legacy");
    add_both(&MODEL_AMD_EXT, "amd-perfctr-core");
    add_both(&MODEL_AMD_V2, "amd-perfmon-v2");
    add_both(&MODEL_TCG_INTEL, "no-pmu");
}

int ex_variant_find(const char *name)
{
    for (unsigned i = 0; i < ex_nvariants; i++)
        if (strcmp(ex_variants[i].name, name) == 0)
            return (int)i;
    return -1;
}

static struct {
    unsigned long long seqs, steps, nmis, failures;
    char kinds[MAX_KINDS][160];
    unsigned nkinds;
} tally;

static void count(const struct ex_result *r)
{
    tally.seqs++;
    tally.steps += r->steps;
    tally.nmis += r->nmis;
    tally.failures += r->failed;
}

// The first failure of each kind (its message without its numbers) is shrunk
// and printed; later ones are only counted.
static bool new_kind(const char *msg)
{
    char key[160];
    unsigned n = 0;
    for (const char *p = msg; *p && n + 1 < sizeof key; p++)
        if (*p < '0' || *p > '9') // the same invariant broken the same way, whatever the numbers
            key[n++] = *p;
    key[n] = 0;
    for (unsigned i = 0; i < tally.nkinds; i++)
        if (strcmp(tally.kinds[i], key) == 0)
            return false;
    if (tally.nkinds >= MAX_KINDS)
        return false;
    snprintf(tally.kinds[tally.nkinds++], sizeof tally.kinds[0], "%s", key);
    return true;
}

static bool every, brief; // --every 1: each failure shrunk, on two lines

static void report(const struct ex_seq *failed, const struct ex_result *result,
                   unsigned long long seq)
{
    struct ex_seq copy = *failed, *s = &copy; // shrunk apart: a systematic run goes on with it
    struct ex_result rr = *result, *r = &rr;
    if (!new_kind(r->msg) && !every) {
        return;
    } else if (brief) {
        ex_shrink(s, r);
        char text[4096];
        ex_format(s, text, sizeof text);
        printf("FAIL %llu %u steps: %s\n  REPLAY='%s'\n", seq, s->nops, r->msg, text);
        return;
    }
    printf("FAIL sequence %llu (%s, %u steps): %s\n", seq, ex_variants[s->variant].name, s->nops,
           r->msg);
    ex_shrink(s, r);
    char text[4096];
    ex_format(s, text, sizeof text);
    printf("  shrunk to %u steps, %u NMI points: %s\n", s->nops, s->npoints, r->msg);
    ex_run(s, NULL, r, true);
    printf("  replay: make pmu-explore REPLAY='%s'\n", text);
    fflush(stdout);
}

static bool trace; // --trace 1: every sequence printed step by step

static void one(struct ex_seq *s, struct ex_rng *draw, unsigned long long seq)
{
    struct ex_result r;
    if (trace)
        printf("sequence %llu on %s\n", seq, ex_variants[s->variant].name);
    ex_run(s, draw, &r, trace);
    count(&r);
    if (r.failed)
        report(s, &r, seq);
}

// Systematic injection: the sequence once without, then once for each of up
// to `max` of its MSR accesses (spread evenly), an NMI at that one.
static void systematic(struct ex_seq *s, struct ex_rng *draw, unsigned long long *seq,
                       unsigned long long end, unsigned max)
{
    struct ex_result dry;
    ex_run(s, draw, &dry, false);
    count(&dry);
    if (dry.failed) {
        report(s, &dry, *seq);
        return;
    }
    unsigned total = 0;
    for (unsigned i = 0; i < s->nops; i++)
        total += dry.accesses[i];
    unsigned stride = total > max ? total / max : 1;
    for (unsigned at = 0, i = 0, base = 0; i < s->nops && *seq + 1 < end; i++) {
        for (; at < base + dry.accesses[i] && *seq + 1 < end; at += stride) {
            s->npoints = 1;
            s->points[0] = (struct ex_point){(uint16_t)i, (uint16_t)(at - base)};
            ++*seq;
            one(s, NULL, *seq);
        }
        base += dry.accesses[i];
    }
}

static void explore(unsigned long long seqs, unsigned long long seed, int only)
{
    for (unsigned long long i = 0; i < seqs; i++) {
        struct ex_rng rng = {seed * 0x100000001B3ull + i};
        struct ex_seq s;
        memset(&s, 0, sizeof s);
        s.variant = only >= 0 ? (unsigned)only : (unsigned)(i % ex_nvariants);
        s.nops = 6 + ex_below(&rng, EX_MAX_OPS - 6);
        static const uint32_t density[4] = {0, 1, 3, 16};
        unsigned mode = (unsigned)((i / ex_nvariants) % 5);
        s.inject_seed = ex_rand(&rng);
        if (mode == 4)
            systematic(&s, &rng, &i, seqs, 48);
        else {
            s.density = density[mode];
            one(&s, &rng, i);
        }
    }
}

static int replay(const char *text)
{
    struct ex_seq s;
    if (!ex_parse(text, &s)) {
        fprintf(stderr, "pmu-explore: cannot read REPLAY text: %s\n", text);
        return 2;
    }
    struct ex_result r;
    printf("replay on %s, %u steps, density %u, NMI points:", ex_variants[s.variant].name, s.nops,
           s.density);
    for (unsigned i = 0; i < s.npoints; i++)
        printf(" step %u access %u", s.points[i].step, s.points[i].k);
    printf("%s\n", s.npoints ? "" : " none");
    tap_set_stream(stdout);
    ex_run(&s, NULL, &r, true);
    count(&r);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long long seqs = 100000, seed = 1;
    const char *replay_text = NULL, *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seqs") == 0)
            seqs = strtoull(argv[i + 1], NULL, 0);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 0);
        else if (strcmp(argv[i], "--replay") == 0)
            replay_text = argv[i + 1];
        else if (strcmp(argv[i], "--every") == 0)
            every = brief = atoi(argv[i + 1]) != 0;
        else if (strcmp(argv[i], "--trace") == 0)
            trace = atoi(argv[i + 1]) != 0;
        else if (strcmp(argv[i], "--variant") == 0)
            only = argv[i + 1];
    }
    ex_variants_init();
    FILE *quiet = fopen("/dev/null", "w");
    tap_set_stream(quiet ? quiet : stderr); // the model's own checks: counted, not printed
    int v = only ? ex_variant_find(only) : -1;
    if (only && v < 0) {
        fprintf(stderr, "pmu-explore: no variant %s\n", only);
        return 2;
    }
    clock_t t0 = clock();
    if (replay_text && replay(replay_text) == 2)
        return 2;
    if (!replay_text)
        explore(seqs, seed, v);
    printf("time: %.1f s of CPU time, seed %llu\n", (double)(clock() - t0) / CLOCKS_PER_SEC, seed);
    printf("pmu-explore: %llu sequences, %llu steps, %llu NMIs injected, %u variants, %llu "
           "failures\n",
           tally.seqs, tally.steps, tally.nmis, only || replay_text ? 1 : ex_nvariants,
           tally.failures);
    return tally.failures ? 1 : 0;
}
