// `pmc info`: what detection found, the interface chosen, the counters and the
// sources, as text.
#include "lib/kprintf.h"

#include "arch/x86/percpu.h"
#include "arch/x86/timer.h"

#include "pmc/hal/counts.h"
#include "pmc/hal/detect.h"
#include "pmc/hal/hal.h"
#include "pmc/hal/hal_interface.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/pmu.h"
#include "pmc/hal/text.h"

static void put_cpuid(struct pmc_text *o, const struct pmc_caps *c)
{
    pmc_text_put(o, "vendor %s, max leaf 0x%x, max extended leaf 0x%x\n", c->vendor_id, c->max_leaf,
                 c->max_ext_leaf);
    if (c->hypervisor)
        pmc_text_put(o, "hypervisor: CPUID.1:ECX[31] set, CPUID.40000000H \"%s\"\n",
                     c->hypervisor_id);
    else
        pmc_text_put(o, "hypervisor: none (CPUID.1:ECX[31] clear)\n");
    if (c->vendor == PMC_VENDOR_INTEL) {
        const struct cpuid_regs *r = &c->perfmon;
        pmc_text_put(o, "CPUID.0AH: eax 0x%08x ebx 0x%08x ecx 0x%08x edx 0x%08x\n", r->eax, r->ebx,
                     r->ecx, r->edx);
        pmc_text_put(o, "  version %u, %u GP counters x %u bits, EBX length %u\n", c->version,
                     c->gp_counters, c->gp_width, c->ebx_length);
        pmc_text_put(o, "  events (EBX bit clear = available):");
        static const char *const events[] = {"core-cycles",   "instructions", "ref-cycles",
                                             "llc-refs",      "llc-misses",   "branches",
                                             "branch-misses", "topdown-slots"};
        for (int b = 0; b < (int)ARRAY_SIZE(events); b++)
            pmc_text_put(o, " %s=%s", events[b], pmc_ebx_event_available(c, b) ? "yes" : "no");
        pmc_text_put(o, "\n  fixed counters: %u x %u bits, present 0x%x\n", c->fixed_counters,
                     c->fixed_width, c->fixed_present);
        pmc_text_put(o, "  PDCM %s, IA32_PERF_CAPABILITIES 0x%lx, full-width writes %s\n",
                     c->pdcm ? "yes" : "no", (unsigned long)c->perf_capabilities,
                     c->full_width ? "yes" : "no");
    } else if (c->vendor == PMC_VENDOR_AMD) {
        pmc_text_put(o, "AMD: PerfCtrExtCore %s, PerfMonV2 %s, %u counters\n",
                     c->amd_perfctr_core ? "yes" : "no", c->amd_perfmon_v2 ? "yes" : "no",
                     c->amd_counters);
    }
    char name[32];
    pmc_text_put(o, "family %xh model %xh\n", c->family, c->model);
    pmc_text_put(o, "presence check (write/read back): %s\n",
                 c->msrs_respond ? "passed" : "failed or not run");
    if (c->gp_msr)
        pmc_text_put(o, "probe: %s 0x%x raised #GP on %s\n",
                     pmc_msr_name(c->gp_msr, name, sizeof(name)) ? name : "MSR", c->gp_msr,
                     c->gp_on_write ? "wrmsr" : "rdmsr");
    if (c->firmware_busy)
        pmc_text_put(o,
                     "firmware left counters enabled: mask 0x%lx (first %s = 0x%lx); taken over\n",
                     (unsigned long)c->firmware_busy,
                     pmc_msr_name(c->firmware_msr, name, sizeof(name)) ? name : "?",
                     (unsigned long)c->firmware_value);
}

static void put_counters(struct pmc_text *o)
{
    char name[32];
    pmc_text_put(o, "counters: %u (state %lu bytes for %u CPUs)\n", pmc_ncounters,
                 (unsigned long)pmc_counters_bytes(), (unsigned)MAX_CPUS);
    for (unsigned i = 0; i < pmc_ncounters; i++) {
        const struct pmc_counter_hw *hw = &pmc_hw[i];
        pmc_text_put(o, "  %2u %-16s %-7s max period %lu", i,
                     pmc_msr_name(hw->ctr_msr, name, sizeof(name)) ? name : "?",
                     pmc_counter_kind_name(hw->kind), (unsigned long)hw->max_period);
        unsigned used = 0, stopped = 0;
        int source = -1;
        for (unsigned cpu = 0; pmc_state && cpu < ncpus && cpu < MAX_CPUS; cpu++) {
            const struct pmc_counter_cpu *c = pmc_counter(cpu, i);
            if (c->period) {
                used++;
                stopped += c->stopped;
                source = (int)c->source;
            }
        }
        if (used)
            pmc_text_put(o, ": %s on %u CPUs (%u stopped)",
                         profile_source_name((KPROFILE_SOURCE)source), used, stopped);
        unsigned users, counting = 0;
        enum pmc_row_scope scope = pmc_row_scope(i, &users);
        for (unsigned cpu = 0; cpu < ncpus && cpu < MAX_CPUS; cpu++)
            counting += (pmc_counters_loaded[cpu] >> i) & 1;
        if (scope != PMC_ROW_FREE)
            pmc_text_put(o, ": reserved for %s-scope counting by %u PMC%s, counting on %u CPUs",
                         scope == PMC_ROW_THREAD ? "process" : "system", users,
                         users == 1 ? "" : "s", counting);
        pmc_text_put(o, "\n");
    }
}

static void put_sources(struct pmc_text *o)
{
    pmc_text_put(o, "sources:\n");
    for (unsigned s = 0; s < ProfileSourceCount; s++) {
        struct hal_profile_source_details d;
        if (!profile_source_listed((KPROFILE_SOURCE)s))
            continue;
        HalQueryProfileSource((KPROFILE_SOURCE)s, &d);
        if (!d.supported) {
            pmc_text_put(o, "  0x%02x %-32s unsupported: %s\n", s, d.name, d.reason);
            continue;
        }
        pmc_text_put(o, "  0x%02x %-32s %-7s interval %lu [%lu..%lu] default %lu", s, d.name,
                     pmc_counter_kind_name(d.kind), (unsigned long)d.interval,
                     (unsigned long)d.min_interval, (unsigned long)d.max_interval,
                     (unsigned long)d.default_interval);
        if (d.started)
            pmc_text_put(o, " STARTED (%u user%s)", d.users, d.users == 1 ? "" : "s");
        if (d.throttled)
            pmc_text_put(o, " throttled %lu", (unsigned long)d.throttled);
        pmc_text_put(o, "\n");
    }
}

static void put_pmi(struct pmc_text *o)
{
    for (unsigned cpu = 0; cpu < ncpus && cpu < MAX_CPUS; cpu++) {
        struct pmc_pmi_stats s;
        pmc_pmi_stats(cpu, &s);
        pmc_text_put(
            o, "cpu%u: pmis %lu samples %lu spurious %lu lost %lu throttled %lu stuck %lu\n", cpu,
            (unsigned long)s.pmis, (unsigned long)s.samples, (unsigned long)s.spurious,
            (unsigned long)s.lost, (unsigned long)s.throttled, (unsigned long)s.stuck);
        pmc_text_put(o,
                     "cpu%u: handler %lu us, busiest window %lu us of %u (limit %u%%), "
                     "budget ran out %lu times, periods now x%lu\n",
                     cpu, (unsigned long)(s.handler_ns / 1000),
                     (unsigned long)(s.max_window_ns / 1000), PMC_THROTTLE_WINDOW_NS / 1000,
                     PMC_PMI_MAX_PERCENT, (unsigned long)s.squeezed, 1ul << s.shift);
        uint64_t periods, missed;
        timer_periodic_stats(cpu, TIMER_SLOT_PROFILE, &periods, &missed);
        pmc_text_put(o,
                     "cpu%u: ProfileTime %lu periods since it last started, %lu missed "
                     "(the CPU came back a period or more late: one tick, not a burst)\n",
                     cpu, (unsigned long)periods, (unsigned long)missed);
    }
}

int pmc_info(char *buf, size_t size)
{
    struct pmc_text o = {buf, size, 0};
    char line[256];
    if (size)
        buf[0] = '\0';
    pmc_boot_line(line, sizeof(line));
    pmc_text_put(&o, "%s\n", line);
    put_cpuid(&o, &pmc_caps);
    put_counters(&o);
    put_sources(&o);
    pmc_text_put(&o, "ProfileTime delivery: %s: %s\n", timer_nmi ? "NMI" : "maskable interrupt",
                 timer_nmi_why);
    put_pmi(&o);
    return o.len;
}
