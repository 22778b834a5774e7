// Model-specific registers: every MSR the kernel touches is named here, once.
//
// rdmsr/wrmsr are inline instructions in the kernel. When kernel sources are
// compiled for the host (tests/, KERNEL_HOSTED), they become calls into a
// register-level machine model instead, so the same code can be exercised.
#pragma once
#include "lib/types.h"

// Architectural, core.
#define MSR_IA32_APIC_BASE    0x0000001B // LAPIC base, bit 11 enable, bit 10 x2APIC
#define MSR_IA32_TSC_DEADLINE 0x000006E0 // LAPIC timer in TSC-deadline mode
#define MSR_EFER              0xC0000080 // bit 0 SCE, 8 LME, 11 NXE
#define MSR_STAR              0xC0000081 // syscall/sysret segment selectors
#define MSR_LSTAR             0xC0000082 // syscall entry point (64-bit)
#define MSR_FMASK             0xC0000084 // RFLAGS bits cleared on syscall
#define MSR_GS_BASE           0xC0000101 // per-CPU data while in the kernel
#define MSR_KERNEL_GS_BASE    0xC0000102 // swapped in by swapgs

#define EFER_SCE (1u << 0)
#define EFER_LME (1u << 8)
#define EFER_NXE (1u << 11)

#define APIC_BASE_X2APIC (1u << 10)
#define APIC_BASE_ENABLE (1u << 11)

// x2APIC registers are MSRs 0x800 + (xAPIC MMIO offset >> 4).
#define MSR_X2APIC_BASE 0x00000800

// Intel architectural performance monitoring (SDM vol. 3B ch. 20; CPUID.0AH).
#define MSR_IA32_PMC0                 0x000000C1 // legacy counters, writes sign-extend bit 31
#define MSR_IA32_PERFEVTSEL0          0x00000186
#define MSR_IA32_PERF_CAPABILITIES    0x00000345 // bit 13: full-width writes via IA32_A_PMCx
#define MSR_IA32_FIXED_CTR0           0x00000309 // instructions retired
#define MSR_IA32_FIXED_CTR_CTRL       0x0000038D // 4 bits per fixed counter
#define MSR_IA32_PERF_GLOBAL_STATUS   0x0000038E // v2+: bit i PMCi, bit 32+i FIXEDi overflowed
#define MSR_IA32_PERF_GLOBAL_CTRL     0x0000038F // v2+: per-counter enable
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL 0x00000390 // v2+: write 1 to clear status
#define MSR_IA32_A_PMC0               0x000004C1 // full-width alias of IA32_PMC0
#define MSR_IA32_DEBUGCTL             0x000001D9 // bit 12: freeze the counters on a PMI

// AMD performance counters.
#define MSR_K7_PERF_CTL0               0xC0010000 // legacy: CTL0-3 at +i, CTR0-3 at +4+i
#define MSR_K7_PERF_CTR0               0xC0010004
#define MSR_F15H_PERF_CTL0             0xC0010200 // PerfCtrExtCore: CTL at +2i, CTR at +2i+1
#define MSR_F15H_PERF_CTR0             0xC0010201
#define MSR_AMD_PERF_GLOBAL_STATUS     0xC0000300 // PerfMonV2
#define MSR_AMD_PERF_GLOBAL_CTL        0xC0000301
#define MSR_AMD_PERF_GLOBAL_STATUS_CLR 0xC0000302

// Fields of the PMU registers above (Intel layout; AMD PERF_CTL shares the low 32 bits).
#define PERFEVTSEL_EVENT_MASK          0x000000FFull // event select [7:0]
#define PERFEVTSEL_UMASK_SHIFT         8             // unit mask [15:8]
#define PERFEVTSEL_USR                 (1ull << 16)  // count at CPL 1-3
#define PERFEVTSEL_OS                  (1ull << 17)  // count at CPL 0
#define PERFEVTSEL_EDGE                (1ull << 18)
#define PERFEVTSEL_PC                  (1ull << 19)
#define PERFEVTSEL_INT                 (1ull << 20) // LVTPC interrupt on overflow
#define PERFEVTSEL_ANY                 (1ull << 21)
#define PERFEVTSEL_EN                  (1ull << 22)
#define PERFEVTSEL_INV                 (1ull << 23)
#define PERFEVTSEL_CMASK_SHIFT         24
#define AMD_PERF_CTL_EVENT_HI_SHIFT    32     // event select [11:8] live in bits 35:32
#define FIXED_CTR_CTRL_OS              0x1ull // per fixed counter i, shifted by 4*i
#define FIXED_CTR_CTRL_USR             0x2ull
#define FIXED_CTR_CTRL_ANY             0x4ull
#define FIXED_CTR_CTRL_PMI             0x8ull
#define PERF_GLOBAL_FIXED_SHIFT        32           // GLOBAL_CTRL/STATUS bit of fixed counter 0
#define PERF_CAPABILITIES_FW_WRITE     (1ull << 13) // IA32_A_PMCx full-width writes
#define PERF_GLOBAL_STATUS_CTR_FRZ     (1ull << 59) // v4+: counters frozen (by a PMI)
#define PERF_GLOBAL_STATUS_COND_CHG    (1ull << 63) // the PMU's configuration changed
#define DEBUGCTL_FREEZE_PERFMON_ON_PMI (1ull << 12)

// Fault-safe accessors for probing: a #GP (an MSR that CPUID or a hypervisor
// advertises but does not implement) is caught by the exception-table fixup in
// trap.c and returned as false; rdmsr_safe then stores 0. msr_safe.asm; the
// hosted tests' machine model provides its own.
bool rdmsr_safe(uint32_t msr, uint64_t *value);
bool wrmsr_safe(uint32_t msr, uint64_t value);

// MFENCE;LFENCE: orders the stores before a WRMSR that is not serializing
// (an x2APIC register's) ahead of it (Intel SDM vol. 3A, "x2APIC Register
// Behavior"; Linux's weak_wrmsr_fence).
#ifdef KERNEL_HOSTED
uint64_t rdmsr(uint32_t msr);
void wrmsr(uint32_t msr, uint64_t value);
void wrmsr_fence(void);
#else
static inline void wrmsr_fence(void)
{
    __asm__ volatile("mfence; lfence" ::: "memory");
}

static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t value)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)value), "d"((uint32_t)(value >> 32))
                     : "memory");
}
#endif
