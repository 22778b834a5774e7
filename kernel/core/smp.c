// Starting the other processors, and running a function on all of them.
#include "core/smp.h"
#include "core/spinlock.h"
#include "lib/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/gdt.h"
#include "arch/x86/idt.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/vectors.h"
#include "arch/x86/clock.h"
#include "lib/cmdline.h"
#include "core/heap.h"
#include "lib/kprintf.h"
#include "lib/memlayout.h"
#include "lib/panic.h"
#include "arch/x86/percpu.h"
#include "lib/string.h"
#include "arch/x86/timer.h"
#include "arch/x86/trampoline.h"
#include "core/vm.h"

extern char __ap_trampoline_start[], __ap_trampoline_end[];
extern char boot_pml4[];
static void (*ap_main)(struct cpu *c); // smp_boot_aps's argument
// The AP the boot CPU is waiting for; NULL once it has given up on it.
static struct cpu *ap_expected;

// First 64-bit C code of an AP, on its own stack but still on the boot page
// tables. An AP that arrives after the boot CPU gave up on it (a virtual CPU
// the host did not run for seconds) stops here, touching nothing.
static void NORETURN ap_entry(struct cpu *c)
{
    struct cpu *want = c;
    if (!__atomic_compare_exchange_n(&ap_expected, &want, NULL, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        halt_forever();
    vm_load_kernel();
    percpu_init(c);
    ap_main(c);
    halt_forever(); // ap_main never returns
}

// INIT-SIPI-SIPI (Intel SDM vol. 3A, 9.4.4.1), then up to 10 s for the AP to
// come online, as Linux waits: a virtual CPU may not run for a long time on a
// loaded host. False when it did not; it will then never run kernel code.
static bool start_ap(struct cpu *c, struct trampoline_params *params)
{
    params->stack = (uint64_t)c->stack_top;
    params->cpu = (uint64_t)c;
    __atomic_store_n(&ap_expected, c, __ATOMIC_SEQ_CST);
    lapic_send_init(c->apic_id);
    // The MP specification's 10 ms wait after INIT matters only to pre-P6 parts.
    udelay(cpuid_family() < 6 ? 10000 : 100);
    for (int sipi = 0; sipi < 2; sipi++) {
        lapic_send_sipi(c->apic_id, TRAMPOLINE_ADDR >> 12);
        uint64_t deadline = clock_ns() + (sipi == 0 ? 20 : 10000) * 1000000ull;
        while (clock_ns() < deadline) {
            if (READ_ONCE(c->online))
                return true;
            cpu_relax();
        }
    }
    struct cpu *want = c;
    if (__atomic_compare_exchange_n(&ap_expected, &want, NULL, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return false;             // given up: it halts if it ever arrives
    while (!READ_ONCE(c->online)) // it arrived just now
        cpu_relax();
    return true;
}

void smp_boot_aps(void (*main)(struct cpu *c))
{
    ap_main = main;
    ncpus = madt.ncpus;
    for (unsigned i = 0; i < ncpus; i++) {
        cpus[i].id = i;
        cpus[i].apic_id = madt.apic_ids[i];
    }
    if (cmdline_has("nosmp"))
        ncpus = 1;
    size_t size = (size_t)(__ap_trampoline_end - __ap_trampoline_start);
    if (size > PAGE_SIZE || (uint8_t)__ap_trampoline_start[0] != 0xEB) // jmp short real_mode
        panic("smp: the embedded AP trampoline is malformed (%zu bytes)", size);
    uint8_t *page = phys_to_virt(TRAMPOLINE_ADDR);
    memcpy(page, __ap_trampoline_start, size);
    struct trampoline_params *params = (void *)(page + TRAMPOLINE_PARAMS_OFFSET);
    params->cr3 = virt_to_phys(boot_pml4);
    params->entry = (uint64_t)ap_entry;
    params->efer = (uint32_t)(EFER_LME | (vm_nx_supported() ? EFER_NXE : 0));

    unsigned started = 1;
    for (unsigned i = 1; i < ncpus; i++) {
        struct cpu *c = &cpus[i];
        uint8_t *stack = kmalloc(KSTACK_SIZE);
        if (!stack)
            panic("smp: no memory for CPU %u's stack", i);
        c->stack_top = stack + KSTACK_SIZE;
        if (start_ap(c, params)) {
            started++;
        } else {
            // It may still be in the trampoline, on the parameters: starting
            // the next CPU would rewrite them under it.
            kprintf("smp: CPU %u (APIC id %u) did not start; starting no more\n", i, c->apic_id);
            break;
        }
    }
    // Renumber nothing: a CPU that failed to start keeps its slot, offline.
    kprintf("smp: %u CPUs online\n", ncpus_online);
    UNUSED(started);
}

// smp_call_all: one call at a time (call_lock), each CPU decrements pending.
static struct spinlock call_lock = SPINLOCK_INIT("smp call");
static void (*volatile call_fn)(void *);
static void *volatile call_arg;
static volatile unsigned call_pending;

static void call_ipi(struct trapframe *tf)
{
    UNUSED(tf);
    call_fn(call_arg);
    __atomic_fetch_sub(&call_pending, 1, __ATOMIC_RELEASE);
}

void smp_call_all(void (*fn)(void *arg), void *arg)
{
    assert(irq_enabled());
    // Take the lock by polling with interrupts on, so this CPU keeps answering
    // another CPU's call while it waits for its own turn.
    for (;;) {
        uint64_t f = spin_lock_irqsave(&call_lock);
        if (call_fn == NULL) {
            call_fn = fn;
            call_arg = arg;
            call_pending = ncpus_online - 1;
            spin_unlock_irqrestore(&call_lock, f);
            break;
        }
        spin_unlock_irqrestore(&call_lock, f);
        cpu_relax();
    }
    if (ncpus_online > 1)
        lapic_send_ipi_shorthand(IPI_ALL_BUT_SELF, VEC_CALL);
    uint64_t f = irq_save();
    fn(arg);
    irq_restore(f);
    while (__atomic_load_n(&call_pending, __ATOMIC_ACQUIRE))
        cpu_relax();
    call_fn = NULL;
}

void smp_init_ipis(void)
{
    irq_register(VEC_CALL, call_ipi);
}
