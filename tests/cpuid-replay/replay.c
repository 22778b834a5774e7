// build/cpuid-replay FILE...: the kernel's PMU detection (kernel/pmc/hal/detect.c
// and the interface it chooses, set up and initialized by pmc_init) run over
// real processors' CPUID, read from AIDA64 dumps, on the register-level PMU
// model (tests/pmc/pmu_model.c) as a bare-metal machine with those leaves.
//
// A dump is read as its first logical CPU's "CPUID xxxxxxxx: EAX-EBX-ECX-EDX"
// lines (any of the layouts scripts/cpuid-fixtures.py describes); the model
// answers CPUID from them and gives the machine the PMU registers the SDM and
// the APM say those leaves enumerate. One line per file:
//
//   FILE: interface=emon version=V gp=NxW fixed=MxW unavailable=0xHEX [...]
//   FILE: interface=amd64 family=XXh counters=N ext=yes|no v2=yes|no [...]
//   FILE: interface=none reason=...
//
// gp and fixed are counts x widths as CPUID enumerates them (fixed counters
// by the version's rule: EDX[4:0] from version 2, or also ECX's bitmap from
// version 5), unavailable is CPUID.0AH:EBX masked to its EAX[31:24] valid
// bits; AMD's counters are 4, 6 with PerfCtrExtCore, or CPUID 80000022H
// EBX[3:0] with PerfMonV2. Further fields: used_gp / used_fixed /
// used_counters where the kernel uses fewer, full_width=PERF_CAPABILITIES
// where full-width writes are decided by an MSR the dump cannot show
// (full_width=no without PDCM), ref_cycles=FIXED_CTR2|no (reference cycles
// count only there: without it the source is unsupported), hybrid=yes where CPUID.7:EDX[15] says
// the processor mixes core types (the kernel reads the first CPU's leaves for all), hypervisor=yes
// where CPUID.1:ECX[31] says the dump was taken in a guest.
//
// Exit status 1 if a file could not be read or the kernel took a #GP on the
// model (a check failed: its diagnostics go to stderr).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pmc/hal/counters.h"
#include "pmc/hal/detect.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmu.h"
#include "pmu_model.h"
#include "tap.h"

#define MAX_LEAVES 512

struct dump {
    struct model_cpuid leaf[MAX_LEAVES];
    unsigned n;
};

static bool header_line(const char *line)
{
    return strstr(line, "Logical CPU #") || strstr(line, "CPUID Registers (CPU #");
}

// "CPUID 0000000A: 07300404-00000000-00000000-00000603 [...]" and its
// variants (a tab or " :" after the leaf, spaces between the registers).
static bool parse_line(const char *line, struct model_cpuid *e)
{
    unsigned leaf, r[4];
    char sep[4][2];
    const char *p = line + 5;
    if (strncmp(line, "CPUID", 5) != 0)
        return false;
    while (*p == ' ' || *p == '\t')
        p++;
    int used = 0;
    if (sscanf(p, "%8x%n", &leaf, &used) != 1 || used != 8)
        return false;
    p += used;
    while (*p == ' ' || *p == '\t' || *p == ':')
        p++;
    if (sscanf(p, "%8x%1[- ]%8x%1[- ]%8x%1[- ]%8x", &r[0], sep[0], &r[1], sep[1], &r[2], sep[2],
               &r[3]) != 7)
        return false;
    const char *sl = strstr(p, "[SL ");
    *e = (struct model_cpuid){leaf, sl ? (uint32_t)strtoul(sl + 4, NULL, 16) : 0, r[0], r[1], r[2],
                              r[3]};
    return true;
}

// The first logical CPU's leaves: up to the next CPU's header, or its leaf 0
// in a dump without headers. A leaf listed twice without a subleaf mark keeps
// its first line.
static bool read_dump(const char *path, struct dump *d)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[512];
    unsigned headers = 0;
    d->n = 0;
    while (fgets(line, sizeof line, f)) {
        struct model_cpuid e;
        if (header_line(line) && ++headers > 1)
            break;
        if (!parse_line(line, &e) || d->n == MAX_LEAVES)
            continue;
        if (e.leaf == 0 && d->n > 0)
            break; // a dump without headers: leaf 0 again starts the next CPU
        bool seen = false;
        for (unsigned k = 0; k < d->n; k++)
            seen |= d->leaf[k].leaf == e.leaf && d->leaf[k].subleaf == e.subleaf;
        if (!seen)
            d->leaf[d->n++] = e;
    }
    fclose(f);
    return true;
}

static const struct model_cpuid *find(const struct dump *d, uint32_t leaf)
{
    static const struct model_cpuid zero;
    for (unsigned k = 0; k < d->n; k++)
        if (d->leaf[k].leaf == leaf && d->leaf[k].subleaf == 0)
            return &d->leaf[k];
    return &zero;
}

// The machine the dump describes, as the model's configuration: its PMU
// registers are those the leaves enumerate (SDM vol. 2A, CPUID 0AH; APM vol.
// 3, CPUID 80000001H and 80000022H), on one CPU, with bare-metal costs.
// Full-width writes are left off: IA32_PERF_CAPABILITIES is not in a dump.
static void machine(const struct dump *d, struct model_config *m, char vendor[13])
{
    const struct model_cpuid *l0 = find(d, 0), *l1 = find(d, 1), *a = find(d, 0xA);
    memcpy(vendor, &l0->ebx, 4);
    memcpy(vendor + 4, &l0->edx, 4);
    memcpy(vendor + 8, &l0->ecx, 4);
    vendor[12] = '\0';
    *m = (struct model_config){
        .name = "replay", .ncpus = 1, .vendor_id = vendor, .msr_cost_ns = MODEL_COST_BARE_NS};
    bool intel = strcmp(vendor, "GenuineIntel") == 0;
    bool amd = strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0;
    m->vendor = intel ? MODEL_INTEL : amd ? MODEL_AMD : MODEL_OTHER;
    unsigned base = (l1->eax >> 8) & 0xF;
    m->family = base == 0xF ? base + ((l1->eax >> 20) & 0xFF) : base;
    m->pdcm = (l1->ecx >> 15) & 1;
    if (intel && l0->eax >= 0xA) {
        m->version = a->eax & 0xFF;
        m->gp = (a->eax >> 8) & 0xFF;
        m->gp_width = (a->eax >> 16) & 0xFF;
        m->ebx_length = a->eax >> 24;
        m->ebx = a->ebx;
        m->fixed = m->version >= 2 ? a->edx & 0x1F : 0;
        m->fixed_width = m->version >= 2 ? (a->edx >> 5) & 0xFF : 0;
        m->fixed_ecx = m->version >= 5 ? a->ecx : 0;
    }
    uint32_t max_ext = find(d, 0x80000000)->eax;
    m->perfctr_core = amd && max_ext >= 0x80000001 && (find(d, 0x80000001)->ecx >> 23) & 1;
    m->perfmon_v2 = amd && max_ext >= 0x80000022 && (find(d, 0x80000022)->eax & 1);
    m->v2_counters = m->perfmon_v2 ? find(d, 0x80000022)->ebx & 0xF : 0;
}

static unsigned popcount(uint32_t v)
{
    unsigned n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

static unsigned kernel_fixed_counters(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < pmc_ncounters; i++)
        n += pmc_hw[i].kind == PMC_COUNTER_FIXED;
    return n;
}

static void print_emon(const struct pmc_caps *c, const struct dump *d)
{
    unsigned fixed = popcount(c->fixed_present);
    uint64_t valid = c->ebx_length >= 32 ? 0xFFFFFFFFull : (1ull << c->ebx_length) - 1;
    printf("interface=emon version=%u gp=%ux%u fixed=%ux%u unavailable=0x%llx", c->version,
           c->gp_counters, c->gp_width, fixed, fixed ? c->fixed_width : 0,
           (unsigned long long)(c->perfmon.ebx & valid));
    unsigned used_gp = pmc_ncounters - kernel_fixed_counters();
    if (used_gp < c->gp_counters)
        printf(" used_gp=%u", used_gp);
    if (kernel_fixed_counters() < fixed)
        printf(" used_fixed=%u", kernel_fixed_counters());
    printf(" full_width=%s", c->pdcm ? "PERF_CAPABILITIES" : "no");
    struct pmc_source_query q = {0};
    emon_profile_interface.QueryInformation(ProfileUnhaltedReferenceCycles, &q);
    printf(" ref_cycles=%s", q.supported ? "FIXED_CTR2" : "no");
    if ((find(d, 7)->edx >> 15) & 1)
        printf(" hybrid=yes");
    if (c->hypervisor)
        printf(" hypervisor=yes");
}

static void print_amd(const struct pmc_caps *c)
{
    printf("interface=amd64 family=%02Xh counters=%u ext=%s v2=%s", c->family, c->amd_counters,
           c->amd_perfctr_core ? "yes" : "no", c->amd_perfmon_v2 ? "yes" : "no");
    if (pmc_ncounters < c->amd_counters)
        printf(" used_counters=%u", pmc_ncounters);
    if (c->hypervisor)
        printf(" hypervisor=yes");
}

static bool replay(const char *path)
{
    static struct dump d;
    if (!read_dump(path, &d) || find(&d, 0)->eax == 0) {
        printf("%s: error=no CPUID 00000000 line\n", path);
        return false;
    }
    struct model_config m;
    char vendor[13];
    machine(&d, &m, vendor);
    model_reset(&m);
    model_set_cpuid(d.leaf, d.n);
    unsigned failed = tap_failures();
    pmc_init();
    const struct pmc_caps *c = &pmc_caps;
    printf("%s: ", path);
    if (c->choice == &emon_profile_interface)
        print_emon(c, &d);
    else if (c->choice == &amd64_profile_interface)
        print_amd(c);
    else
        printf("interface=none reason=%s", c->reason);
    printf("\n");
    pmc_shutdown();
    return tap_failures() == failed;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s AIDA64-CPUID-DUMP...\n", argv[0]);
        return 2;
    }
    tap_set_stream(stderr); // the model's failed checks (#GP) are diagnostics
    bool ok = true;
    for (int i = 1; i < argc; i++)
        ok &= replay(argv[i]);
    return ok ? 0 : 1;
}
