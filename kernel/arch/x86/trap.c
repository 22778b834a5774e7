// trap(): every interrupt and exception arrives here from vectors.asm.
//
// Exceptions (0-31) in the kernel are fatal unless a fault fixup covers the
// faulting instruction (NMIs have their own entry: nmi.h).
// Everything else goes through the dispatch table to its handler, then EOI.
#include "lib/panic.h"

#include "arch/x86/cpu.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/percpu.h"
#include "arch/x86/user_time.h"
#include "arch/x86/trap.h"
#include "arch/x86/vectors.h"

static const char *const exception_names[32] = {
    [0] = "divide error",
    [1] = "debug",
    [2] = "NMI",
    [3] = "breakpoint",
    [4] = "overflow",
    [5] = "bound range",
    [6] = "invalid opcode",
    [7] = "device not available",
    [8] = "double fault",
    [10] = "invalid TSS",
    [11] = "segment not present",
    [12] = "stack fault",
    [13] = "general protection",
    [14] = "page fault",
    [16] = "x87 error",
    [17] = "alignment check",
    [18] = "machine check",
    [19] = "SIMD error",
    [20] = "virtualization",
    [21] = "control protection",
};

const char *exception_name(unsigned vector)
{
    const char *n = vector < 32 ? exception_names[vector] : NULL;
    return n ? n : "reserved exception";
}

static irq_handler_t handlers[256];
uint64_t irq_spurious_count, irq_unhandled_count;
trap_hook_t trap_user_exception_hook;            // process.c installs it; NULL until then
bool (*trap_user_gp_hook)(struct trapframe *tf); // pmc.c installs it
void (*trap_user_return_hook)(void);             // sched.c installs it

void irq_register(unsigned vector, irq_handler_t handler)
{
    handlers[vector] = handler;
}

static void trap_dispatch(struct trapframe *tf)
{
    if (tf->vector < 32) {
        bool (*gp_hook)(struct trapframe *) = READ_ONCE(trap_user_gp_hook);
        if (tf->vector == 13 && tf_from_user(tf) && gp_hook && gp_hook(tf))
            return;
        if (tf_from_user(tf) && trap_user_exception_hook) {
            trap_user_exception_hook(tf);
            return;
        }
        if (fault_fixup(tf))
            return;
        panic_trap(tf, exception_name((unsigned)tf->vector));
    }
    if (tf->vector == VEC_SPURIOUS) {
        irq_spurious_count++; // no EOI for a spurious interrupt
    } else {
        irq_handler_t h = handlers[tf->vector];
        if (h)
            h(tf);
        else
            irq_unhandled_count++;
        lapic_eoi();
    }
    if (tf_from_user(tf))
        trap_return_to_user();
}

// An entry from ring 3 stops its ring-3 time until the return (user_time.h).
void trap(struct trapframe *tf)
{
    if (!tf_from_user(tf)) {
        trap_dispatch(tf);
        return;
    }
    user_time_enter();
    trap_dispatch(tf);
    user_time_leave();
}

// The performance-monitoring interrupt, entered from vectors.asm's lean
// pmi_entry: the handler the PMU layer registered, then the EOI.
static void (*pmi_handler)(const struct intr_frame *f);

void pmi_register(void (*handler)(const struct intr_frame *f))
{
    __atomic_store_n(&pmi_handler, handler, __ATOMIC_RELEASE);
}

void pmi_interrupt(const struct intr_frame *f)
{
    void (*h)(const struct intr_frame *) = __atomic_load_n(&pmi_handler, __ATOMIC_ACQUIRE);
    if (h)
        h(f);
    else
        irq_unhandled_count++;
    lapic_eoi();
}

// The lean entries' way back to ring 3 when a switch or a kill is due
// (vectors.asm): they left the ring-3 time running.
void lean_user_work_hook(void)
{
    user_time_enter();
    trap_user_return_hook();
    user_time_leave();
}

// Fault fixups: code that may fault on purpose (copying from user memory)
// registers {faulting instruction, where to resume} in the .fixup_table section.
struct fixup {
    uint64_t insn, resume;
};
extern const struct fixup __fixup_start[], __fixup_end[];

bool fault_fixup(struct trapframe *tf)
{
    for (const struct fixup *f = __fixup_start; f < __fixup_end; f++) {
        if (f->insn == tf->rip) {
            tf->rip = f->resume;
            return true;
        }
    }
    return false;
}
