// A register-level model of N x86 CPUs' performance-monitoring units, and host
// versions of everything kernel/pmc calls (cpuid, rdmsr/wrmsr, the LAPIC,
// cpu_id, smp_call_all, the periodic timers, the heap, kprintf, clock_ns).
//
// The test drives events ("retire N events of kind E at IP X on CPU c"); the
// model advances the counters that select E, sets overflow status, and delivers
// PMIs by calling the real pmc_pmi_handler through a model LVTPC that masks
// itself on Intel. MSRs a machine does not have raise a #GP: a failed check.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/x86/timer.h"

#define MODEL_MAX_CPUS 8

enum model_vendor { MODEL_INTEL, MODEL_AMD, MODEL_OTHER };

// Events the model can retire.
enum model_event {
    EV_CORE_CYCLES,
    EV_INSTRUCTIONS,
    EV_REF_CYCLES,
    EV_LLC_REFS,
    EV_LLC_MISSES,
    EV_BRANCHES,
    EV_BRANCH_MISSES,
    EV_SLOTS,
    // The core crystal clock (intel/perfmon's REF_XCLK, event 3CH umask 01H on
    // a GP counter: SKL/events/skylake_core.json): not the TSC rate at which
    // FIXED_CTR2 counts EV_REF_CYCLES. The model retires one for every
    // xclk_ratio reference cycles; tests never retire it directly.
    EV_REF_XCLK,
    EV_COUNT
};

struct model_config {
    const char *name;
    enum model_vendor vendor;
    const char *vendor_id; // CPUID.0 string; default from vendor
    unsigned ncpus;
    const char *hypervisor; // CPUID.40000000H signature, NULL = bare metal
    unsigned max_leaf;      // CPUID.0:EAX; 0 = default for the vendor
    // Intel CPUID.0AH
    unsigned version, gp, gp_width, ebx_length, fixed, fixed_width;
    uint32_t ebx;       // bit set = event unavailable
    uint32_t fixed_ecx; // v5: fixed-counter bitmap
    bool pdcm, full_width;
    // AMD
    bool perfctr_core, perfmon_v2;
    unsigned v2_counters;
    unsigned family;     // CPUID.1 family (AMD: selects the event table); 0 = 0x10 AMD, 6 Intel
    unsigned xclk_ratio; // TSC (FIXED_CTR2) ticks per crystal (3CH/01H) tick; 0 = 108, Skylake's
                         // CPUID.15H EBX/EAX
    // Behaviour
    bool pmu_ignored;   // TCG: PMU MSRs read 0 and ignore writes
    unsigned skid;      // events retired between an overflow and its PMI
    bool sticky_status; // overflow status cannot be cleared (a stuck PMU)
    // What a hypervisor (or odd firmware) changes.
    uint64_t msr_cost_ns;    // model time per MSR or LAPIC access (MODEL_COST_*)
    unsigned handler_insns;  // instructions and core cycles the PMI path retires at entry and
                             // after each of its MSR/LAPIC accesses, counted by running counters
    bool late_pmi;           // PMIs wait for the next model_advance_time (a VM entry) and coalesce
    bool pmu_faults;         // every PMU MSR raises #GP although CPUID advertises the PMU
    uint32_t fault_msrs[8];  // these MSRs alone raise #GP on any access (0 ends the list)
    uint32_t firmware_gp;    // GP counters whose event select firmware left enabled (bit n)
    uint32_t firmware_fixed; // fixed counters firmware left enabled (bit n)
    // Intel: firmware left IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI set. Each PMI
    // then freezes the counters (SDM vol. 3B, "Freezing Counters on PMI"):
    // version 2-3 clears IA32_PERF_GLOBAL_CTRL, version 4+ sets
    // GLOBAL_STATUS.CTR_Frz (bit 59), which stops every counter until
    // written to IA32_PERF_GLOBAL_STATUS_RESET (OVF_CTRL).
    bool firmware_freeze;
    bool debugctl_ignored; // IA32_DEBUGCTL writes are ignored (a hypervisor's)
    bool cond_chgd;        // GLOBAL_STATUS.CondChgd (bit 63) is set from the first overflow
    // AMD: the LVTPC masks itself on delivery as Intel's does (AMD's APIC does
    // not; a hypervisor's emulated one may).
    bool amd_lvtpc_masks;
    // A hypervisor's event filter (KVM_SET_PMU_EVENT_FILTER): counters
    // programmed with these events (bit = enum model_event) accept every
    // write and never count.
    uint32_t filtered_events;
};

#define MODEL_COST_BARE_NS 100  // an MSR access on bare metal: ~0.1 us
#define MODEL_COST_KVM_NS  2000 // an intercepted MSR access under KVM: ~2 us (exit + emulation)
#define MODEL_HANDLER_IP   0xFFFFFFFF80E00000ull // where the PMI path's own events retire

extern const struct model_config MODEL_INTEL_V1, MODEL_INTEL_KVM_V2, MODEL_INTEL_V4, MODEL_INTEL_V5,
    MODEL_AMD_LEGACY, MODEL_AMD_EXT, MODEL_AMD_V2, MODEL_TCG_INTEL, MODEL_TCG_AMD, MODEL_VIA;

// A new machine: every register at its reset value, heap/console/time cleared.
void model_reset(const struct model_config *cfg);

// CPUID from a table instead of the config (a real processor's dump, for
// build/cpuid-replay): each leaf's registers, subleaf 0 or the only one
// listed; a leaf not in the table reads 0. In effect until the next
// model_reset. The MSRs still follow the config.
struct model_cpuid {
    uint32_t leaf, subleaf;
    uint32_t eax, ebx, ecx, edx;
};
void model_set_cpuid(const struct model_cpuid *table, unsigned n);
const struct model_config *model_config(void);

// Retire n events of kind ev at ip on cpu (user or kernel mode).
void model_retire(unsigned cpu, enum model_event ev, uint64_t n, uint64_t ip, bool user);
// Send the PMI vector to cpu with nothing overflowed (a self-IPI, not the
// LVTPC: it cannot stand in for a PMI the LVTPC lost).
void model_raise_pmi(unsigned cpu, uint64_t ip);
// Deliver a PMI latched in cpu's LAPIC (late_pmi), as the next VM entry would.
void model_deliver_pending(unsigned cpu, uint64_t ip);
bool model_pmi_pending(unsigned cpu);

// Registers, without side effects or #GP.
uint64_t model_gp_ctl(unsigned cpu, unsigned i); // PERFEVTSELi / PERF_CTLi
uint64_t model_gp_ctr(unsigned cpu, unsigned i); // PMCi / PERF_CTRi (masked to width)
uint64_t model_fixed_ctr(unsigned cpu, unsigned i);
uint64_t model_fixed_ctrl(unsigned cpu);
uint64_t model_global_ctrl(unsigned cpu);
uint64_t model_global_status(unsigned cpu);
uint64_t model_debugctl(unsigned cpu);
uint32_t model_lvtpc(unsigned cpu);
void model_set_lvtpc(unsigned cpu, uint32_t v);
uint64_t model_pmis_delivered(unsigned cpu);
uint64_t model_pmis_lost(unsigned cpu);      // overflow while LVTPC masked, none pending: gone
uint64_t model_pmis_coalesced(unsigned cpu); // overflow while a PMI was already pending
uint64_t model_counted(unsigned cpu, enum model_event ev); // events counted by >= 1 counter
uint64_t model_handler_ns(unsigned cpu); // model time spent inside pmc_pmi_handler
// Instructions the PMI path retired on cpu (handler_insns at entry and after
// each access); as many core cycles. Kernel mode, counted by running counters.
uint64_t model_handler_retired(unsigned cpu);
// Handler time of the PMIs entered in each aligned window of window_ns: the
// largest total, and how many windows had any.
uint64_t model_max_handler_per_window(unsigned cpu, uint64_t window_ns, unsigned *windows);
unsigned model_enable_while_masked(unsigned cpu); // PMI-capable counter enabled, LVTPC masked
// Overflows of PMI-enabled counters on cpu, but those not yet re-armed (the
// last ones, when the counter was stopped before its PMI).
uint64_t model_int_overflows(unsigned cpu);
// Overflows the kernel re-armed (sampled) in a PMI that was neither the one
// they happened in nor the one they raised: found late, after their own
// signal was lost behind a masked LVTPC, their sample carries another IP.
uint64_t model_misattributed(unsigned cpu);
// Overflow signals that met a masked LVTPC while two or more PMI-enabled
// counters were enabled, after the handler's unmask point had passed or
// outside any handler (the signal is dropped: see deliver_pmi).
uint64_t model_masked_signals(unsigned cpu);
unsigned model_constraint_violations(void); // events programmed on counters that cannot count them
unsigned model_safe_faults(void);           // #GPs taken by rdmsr_safe/wrmsr_safe
uint64_t model_lvtpc_masked_after_pmi(unsigned cpu); // PMIs after which LVTPC stayed masked
unsigned model_gp_faults(void);
unsigned model_msr_writes(void); // every wrmsr so far

// RDPMC on cpu (Intel SDM vol. 2B, RDPMC; AMD APM vol. 3, RDPMC): false for
// the #GP it raises (counted, not a failed check) when user && !CR4.PCE or ECX
// names no counter (Intel: ECX[30] fixed, ECX[29:0] number; AMD: the number);
// else *value = the counter, masked to its width.
bool model_rdpmc(unsigned cpu, uint32_t ecx, bool user, uint64_t *value);
unsigned model_rdpmc_faults(void); // #GPs model_rdpmc raised
// The #GP of a ring-3 `rdpmc` with ECX = ecx on cpu, handed to the kernel's
// user #GP hook (trap.c's trap_user_gp_hook, which pmc_init installs) as
// trap() would: true and *value = EDX:EAX when the kernel emulated it, false
// when the #GP stands (the process would be killed).
bool model_user_rdpmc(unsigned cpu, uint32_t ecx, uint64_t *value);
// Run fn(arg) as code on cpu with interrupts off (cpu_id() == cpu meanwhile),
// as a context switch or the scheduler tick there; a PMI latched meanwhile is
// taken after it, when interrupts come back on.
void model_on_cpu(unsigned cpu, void (*fn)(void *arg), void *arg);
// Called after every MSR access made outside the PMI, on the CPU that made
// it, as an NMI taken there (not while the hook itself runs): where a
// hypervisor that intercepts rdmsr/wrmsr injects a pending NMI at the VM entry
// that resumes the guest. The hook does what the NMI would, e.g. retire
// events that overflow a counter whose PMI is an NMI, deliver a pending PMI,
// or fire a hook an NMI-delivered sample fires.
extern void (*model_nmi_hook)(unsigned cpu, uint32_t msr, bool write);
// Called once, then cleared, when the next smp_call_all begins (before any
// CPU runs its function): a call the code under test makes at that point
// races it, as another CPU's system call would.
extern void (*model_call_all_hook)(void);

// The periodic-timer fake.
struct model_timer {
    bool running;
    uint64_t period_ns;
    timer_fn fn;
    void *arg;
    unsigned starts;
    uint64_t fires; // expiries delivered since the last start (the model never misses one)
};
const struct model_timer *model_timer(unsigned cpu, enum timer_slot slot);
void model_timer_fire(unsigned cpu, enum timer_slot slot, uint64_t ip, bool user);

// Time, heap, console.
void model_set_time(uint64_t ns);
void model_advance_time(uint64_t ns);
void model_fail_alloc_after(int n); // the allocation after n more succeeds fails; -1: never
size_t model_heap_in_use(void);
const char *model_console(void);
void model_console_clear(void);
unsigned model_smp_calls(void);

// Interleaving (see pmu_model.c): program(cpu, arg) runs on every CPU at once,
// as coroutines switched at every MSR/LAPIC access, CR4 write, spinlock wait
// and model_user_point, in an order drawn from seed; check(cpu, arg) runs
// after every switch for each CPU parked at a model_user_point (in ring 3).
// Returns the switches made; a run that has not ended after max_steps is a
// failed check. Boot before, finish after.
uint64_t model_interleave(uint64_t seed, void (*program)(unsigned cpu, void *arg), void *arg,
                          void (*check)(unsigned cpu, void *arg), uint64_t max_steps);
void model_user_point(void);   // the program is in ring 3 here: a preemption point
void model_yield(void);        // a preemption point (none unless interleaving)
bool model_interleaving(void); // model_interleave is running
struct spinlock;
void model_spin_wait(struct spinlock *l); // until l is free (interleaving) or a failed check
uint64_t model_cr4(unsigned cpu);
