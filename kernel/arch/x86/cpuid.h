// CPUID. Like msr.h, an instruction in the kernel and a model call when hosted.
#pragma once
#include "lib/types.h"

struct cpuid_regs {
    uint32_t eax, ebx, ecx, edx;
};

#ifdef KERNEL_HOSTED
struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf);
#else
static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
    struct cpuid_regs r;
    __asm__ volatile("cpuid"
                     : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
                     : "a"(leaf), "c"(subleaf));
    return r;
}
#endif

// Feature bits used by the kernel (leaf 1 and 0x80000001).
#define CPUID1_ECX_PDCM           (1u << 15) // IA32_PERF_CAPABILITIES present
#define CPUID1_ECX_X2APIC         (1u << 21)
#define CPUID1_ECX_TSC_DEADLINE   (1u << 24)
#define CPUID1_ECX_HYPERVISOR     (1u << 31)
#define CPUID1_EDX_APIC           (1u << 9)
#define CPUID7_EBX_SMEP           (1u << 7)
#define CPUID7_EBX_SMAP           (1u << 20)
#define CPUIDX1_ECX_PERFCTR_CORE  (1u << 23) // AMD PerfCtrExtCore
#define CPUIDX1_EDX_NX            (1u << 20)
#define CPUIDX1_EDX_PAGE1GB       (1u << 26)
#define CPUIDX7_EDX_INVARIANT_TSC (1u << 8)

// Performance-monitoring leaves.
#define CPUID_LEAF_PERFMON      0x0000000A // Intel architectural perfmon (eax/ebx/ecx/edx)
#define CPUID_LEAF_HYPERVISOR   0x40000000 // ebx:ecx:edx = hypervisor signature
#define CPUID_LEAF_EXT_MAX      0x80000000 // eax = highest extended leaf
#define CPUID_LEAF_EXT_FEATURES 0x80000001
#define CPUID_LEAF_AMD_PERFMON  0x80000022 // AMD PerfMonV2: eax bit 0, ebx[3:0] counters
#define CPUIDX22_EAX_PERFMON_V2 (1u << 0)

// The display family (base family, plus the extended family when base is 0xF).
static inline unsigned cpuid_family(void)
{
    uint32_t eax = cpuid(1, 0).eax;
    unsigned family = (eax >> 8) & 0xF;
    return family == 0xF ? family + ((eax >> 20) & 0xFF) : family;
}
