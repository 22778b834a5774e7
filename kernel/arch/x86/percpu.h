// Per-CPU data, reached through the GS base: this_cpu() is one instruction,
// and so is percpu_read(field) (a %gs-relative load, for the hottest paths).
//
// The assembly (vectors.asm, syscall_entry.asm) reads fields through GS at
// offsets generated from this struct (arch/x86/asm_offsets.c).
#pragma once
#include "lib/param.h"
#include "lib/types.h"

struct process;
struct thread;
struct tss;
struct timer_cpu;

struct cpu {
    struct cpu *self;          // %gs:0 — lets this_cpu() read the pointer in one load
    uint64_t kernel_rsp;       // %gs:8 — stack for entries from ring 3 (syscall)
    uint64_t user_rsp_scratch; // %gs:16 — user RSP saved by the syscall stub
    struct thread *current;    // %gs:24 — the running thread
    uint32_t id;               // dense index 0..ncpus-1, boot CPU is 0
    uint32_t apic_id;
    volatile bool online;
    uint64_t ticks; // scheduler-tick count (every CPU's timer must tick)
    struct tss *tss;
    void *gdt;
    uint8_t *stack_top;                // boot/idle stack
    struct thread *idle;               // this CPU's idle thread (runs the boot stack)
    struct thread *prev_dead;          // a thread that exited here, freed after the switch away
    volatile bool need_resched;        // set by the scheduler tick or a wake-up
    const volatile bool *kill_pending; // the running thread's kill flag (trap.h)
    volatile bool idling;              // halted in the idle loop (a wake-up sends an IPI)
    uint64_t idle_ns, busy_ns;         // time accounting (scheduler tick resolution)
    struct timer_cpu *timer;           // this CPU's periodic timers (timer.c)
    // The per-CPU state of the layer that takes samples (pmc/ke/sample.c's
    // plans), one %gs load away for the sample path; set at boot.
    void *layer_area;
    struct process *current_process; // current->proc, one load for the sample path
    // Bumped by every context switch here (core/switch_publish.h: odd while
    // the running process changes) and by 2 at every drop of the sample
    // plans (pmc/ke/sample.c): a plan made at another value no longer holds.
    // Only grows.
    uint64_t plan_epoch;
    uint32_t nmi_depth; // inside nmi_dispatch (nmi.h): exceptions return without IRET
    // Ring-3 time in TSC ticks (user_time.h): the TSC at the running thread's
    // last return to ring 3 (0 while it is in the kernel), its running total
    // (in its struct thread; switch_to points here) and this CPU's total.
    volatile uint64_t user_since;
    volatile uint64_t *user_tsc;
    volatile uint64_t cpu_user_tsc;
};

_Static_assert(offsetof(struct cpu, self) == 0, "this_cpu() reads %gs:0");

extern struct cpu cpus[MAX_CPUS];
extern unsigned ncpus; // processors found in the MADT (1 without ACPI)
extern volatile unsigned ncpus_online;

#ifdef KERNEL_HOSTED
unsigned cpu_id(void); // provided by the host test harness
struct cpu *this_cpu(void);
// Called after every percpu_read's load when a harness sets it (tests/ke
// lets another CPU run there, between the load and its use). Weak, so every
// hosted build has it, NULL, without defining it.
__attribute__((weak)) void (*percpu_read_hook)(void);
#define percpu_read(field) \
    ({ \
        __typeof__(((struct cpu *)0)->field) v_ = this_cpu()->field; \
        if (percpu_read_hook) \
            percpu_read_hook(); \
        v_; \
    })
#else
static inline struct cpu *this_cpu(void)
{
    struct cpu *c;
    __asm__ volatile("movq %%gs:0, %0" : "=r"(c));
    return c;
}
static inline unsigned cpu_id(void)
{
    return this_cpu()->id;
}

// A field of this CPU's struct cpu in one load (a GNU statement expression).
#define percpu_read(field) \
    ({ \
        __typeof__(((struct cpu *)0)->field) v_; \
        _Static_assert(sizeof v_ == 8 || sizeof v_ == 4, "percpu_read: 4- or 8-byte fields"); \
        __asm__ volatile("mov %%gs:%c1, %0" : "=r"(v_) : "i"(offsetof(struct cpu, field))); \
        v_; \
    })
void percpu_init(struct cpu *c); // point GS at c (boot CPU and each AP)
#endif
