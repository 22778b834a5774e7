// What the boot CPU says about its performance-monitoring hardware, and which
// profile interface that selects.
#pragma once
#include "lib/types.h"

#include "arch/x86/cpuid.h"

struct halp_profile_interface;

enum pmc_vendor { PMC_VENDOR_OTHER, PMC_VENDOR_INTEL, PMC_VENDOR_AMD };

struct pmc_caps {
    enum pmc_vendor vendor;
    char vendor_id[13]; // CPUID.0 ebx:edx:ecx
    uint32_t max_leaf, max_ext_leaf;
    bool hypervisor;        // CPUID.1:ECX[31]
    char hypervisor_id[13]; // CPUID.40000000H ebx:ecx:edx, trailing NULs dropped

    // Intel: CPUID.0AH decoded.
    struct cpuid_regs perfmon; // the raw leaf
    unsigned version;          // EAX[7:0]
    unsigned gp_counters;      // EAX[15:8]
    unsigned gp_width;         // EAX[23:16]
    unsigned ebx_length;       // EAX[31:24]: how many EBX bits are meaningful
    unsigned fixed_counters;   // EDX[4:0] (version > 1)
    unsigned fixed_width;      // EDX[12:5]
    uint32_t fixed_present;    // bitmap: EDX[4:0] counters, plus the v5 ECX bitmap
    bool pdcm;                 // CPUID.1:ECX[15]: IA32_PERF_CAPABILITIES exists
    uint64_t perf_capabilities;
    bool full_width;         // PERF_CAPABILITIES bit 13: IA32_A_PMCx writes
    uint32_t full_width_msr; // the IA32_A_PMCx whose #GP turned full-width writes off (0: none)
    bool debugctl;           // IA32_DEBUGCTL reads without a #GP
    bool firmware_freeze;    // ... and firmware left FREEZE_PERFMON_ON_PMI set in it

    // AMD.
    bool amd_perfctr_core; // CPUID.80000001H:ECX[23]: 6 counters at 0xC0010200
    bool amd_perfmon_v2;   // CPUID.80000022H:EAX[0]: global ctl/status
    unsigned amd_counters; // counters the AMD interface will use

    unsigned family, model; // CPUID.1:EAX, extended fields folded in (e.g. 0x19, 0x11)

    bool msrs_respond; // the write/read-back presence check passed
    uint32_t gp_msr;   // the probe's #GP: the MSR that faulted, 0 if none did
    bool gp_on_write;  // ... on wrmsr (else rdmsr)

    // Counters firmware left enabled before the kernel took them over (bit =
    // GLOBAL_CTRL/STATUS numbering: GP n at bit n, fixed n at bit 32 + n), and
    // the first such control register and its value, for the report.
    uint64_t firmware_busy;
    uint32_t firmware_msr;
    uint64_t firmware_value;

    const struct halp_profile_interface *choice;
    char reason[160]; // for the boot line, without the hypervisor
};

extern struct pmc_caps pmc_caps;

// Boot CPU: fill caps and choose the interface.
void pmc_detect(struct pmc_caps *caps);

// The Emon gate: the EBX bit is meaningful (below EAX[31:24]) and clear
// (Intel SDM vol. 2A, CPUID leaf 0AH: a set bit means the event is unavailable).
static inline bool pmc_ebx_event_available(const struct pmc_caps *caps, int bit)
{
    if (bit < 0 || (unsigned)bit >= caps->ebx_length || bit >= 32)
        return false;
    return (caps->perfmon.ebx & (1u << bit)) == 0;
}
