// Helpers shared by the hosted pmc tests.
#include <stdio.h>
#include <string.h>
#include "arch/x86/percpu.h"
#include "ke_host.h"
#include "pmc/hwpmc/kind_sampling.h"
#include "tests.h"

struct samples samples;

static void record(KPROFILE_SOURCE source, const struct intr_frame *f)
{
    uint64_t ip = f->rip;
    bool user = intr_from_user(f);
    unsigned cpu = cpu_id();
    if (cpu < MODEL_MAX_CPUS && (unsigned)source < ProfileSourceCount)
        samples.count[cpu][source]++;
    samples.total++;
    samples.user += user;
    samples.last_ip = ip;
    samples.last_source = source;
    samples.last_cpu = cpu;
}

void samples_clear(void)
{
    memset(&samples, 0, sizeof(samples));
}

struct model_config model_variant(const struct model_config *base, const char *suffix,
                                  char name[40])
{
    struct model_config m = *base;
    snprintf(name, 40, "%s-%s", base->name, suffix);
    m.name = name;
    return m;
}

void boot(const struct model_config *cfg)
{
    model_reset(cfg);
    pmc_init();
    samples_clear();
    HAL_PROFILE_INTERRUPT_HANDLER h = record;
    NTSTATUS st = HalSetSystemInformation(HalProfileSourceInterruptHandler, sizeof(h), &h);
    if (st != STATUS_SUCCESS)
        tap_ok(false, "%s: register the profile callback (status 0x%x)", cfg->name, (unsigned)st);
}

void finish(const char *what)
{
    pmc_shutdown();
    tap_eq(model_heap_in_use(), 0, "%s: no heap left allocated after pmc_shutdown", what);
    tap_eq(model_gp_faults(), 0, "%s: no #GP", what);
}

const char *src(KPROFILE_SOURCE s)
{
    return profile_source_name(s);
}

bool start_ok(KPROFILE_SOURCE s)
{
    const char *why = "?";
    NTSTATUS st = HalStartProfileInterrupt(s, &why);
    bool ok = STATUS_EQ(st, STATUS_SUCCESS, "%s: HalStartProfileInterrupt(%s)",
                        model_config()->name, src(s));
    if (!ok)
        tap_diag("reason: %s", why);
    return ok;
}

bool stop_ok(KPROFILE_SOURCE s)
{
    NTSTATUS st = HalStopProfileInterrupt(s, NULL);
    return STATUS_EQ(st, STATUS_SUCCESS, "%s: HalStopProfileInterrupt(%s)", model_config()->name,
                     src(s));
}

bool supported(KPROFILE_SOURCE s)
{
    HAL_PROFILE_SOURCE_INFORMATION info = {.ProfileSource = s};
    uint32_t len = 0;
    if (HalQuerySystemInformation(HalProfileSourceInformation, sizeof(info), &info, &len) !=
        STATUS_SUCCESS)
        return false;
    return info.Supported;
}

uint64_t set_interval(KPROFILE_SOURCE s, uint64_t interval)
{
    HAL_PROFILE_SOURCE_INTERVAL in = {.ProfileSource = s, .Interval = interval};
    NTSTATUS st = HalSetSystemInformation(HalProfileSourceInterval, sizeof(in), &in);
    if (st != STATUS_SUCCESS)
        tap_ok(false, "set interval of %s to %llu: status 0x%x", src(s),
               (unsigned long long)interval, (unsigned)st);
    return in.Interval;
}

const char *console_last_line(void)
{
    static char line[512];
    const char *c = model_console();
    size_t n = strlen(c);
    while (n && c[n - 1] == '\n')
        n--;
    size_t start = n;
    while (start && c[start - 1] != '\n')
        start--;
    size_t len = n - start < sizeof(line) - 1 ? n - start : sizeof(line) - 1;
    memcpy(line, c + start, len);
    line[len] = '\0';
    return line;
}

void ke_host_boot(const struct model_config *cfg)
{
    boot(cfg);
    ke_host_reset(cfg->ncpus);
    pmc_object_init();
    pmc_sampling_init();
    pmc_counting_init();
}
