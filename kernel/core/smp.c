// Starting the other processors, and running a function on all of them.
#include "core/smp.h"

#include "lib/acpi.h"
#include "lib/cmdline.h"
#include "lib/kprintf.h"
#include "lib/memlayout.h"
#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/cpuid.h"
#include "arch/x86/gdt.h"
#include "arch/x86/idt.h"
#include "arch/x86/irq.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/timer.h"
#include "arch/x86/trampoline.h"
#include "arch/x86/vectors.h"

#include "core/grace.h"
#include "core/heap.h"
#include "core/spinlock.h"
#include "core/vm.h"

extern char __ap_trampoline_start[], __ap_trampoline_end[];
extern char boot_pml4[];
static void (*ap_start)(struct cpu *c); // smp_boot_aps's argument
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
    ap_start(c);
    halt_forever(); // ap_start never returns
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
    ap_start = main;
    ncpus = madt.ncpus;
    if (madt.ncpus_listed > madt.ncpus)
        kprintf("smp: the MADT lists %u processors; this kernel runs at most %u (MAX_CPUS, "
                "lib/param.h): %u stay offline\n",
                madt.ncpus_listed, MAX_CPUS, madt.ncpus_listed - madt.ncpus);
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

// --- cross-CPU calls -----------------------------------------------------------
//
// Each CPU has a queue of calls other CPUs want it to run. A caller puts one
// node per target CPU (on its own stack) on the targets' queues, sends each
// target one interrupt, and waits until every target has run the function:
// callers never wait for one another, so calls between unrelated CPUs go on
// side by side (as Linux's smp_call_function_many queues a call per CPU).

struct call {
    void (*fn)(void *arg);
    void *arg;
    unsigned pending; // targets that have not run fn yet
};

struct call_node {
    struct call_node *next;
    struct call *call;
};

static struct call_queue {
    struct spinlock lock;
    struct call_node *head;
} __attribute__((aligned(64))) queues[MAX_CPUS];
static uint64_t calls_sent[MAX_CPUS]; // call interrupts each CPU sent (single writer each)

// Runs this CPU's queued calls. A node lives on its caller's stack, and the
// caller may return as soon as pending reaches zero: read it all first.
static void call_ipi(struct trapframe *tf)
{
    UNUSED(tf);
    grace_quiescent(); // interrupts were on where this one came in: no handler was running
    struct call_queue *q = &queues[cpu_id()];
    spin_lock(&q->lock);
    struct call_node *n = q->head;
    q->head = NULL;
    spin_unlock(&q->lock);
    while (n) {
        struct call_node *next = n->next;
        struct call *c = n->call;
        c->fn(c->arg);
        __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELEASE);
        n = next;
    }
}

void smp_call_many(uint64_t mask, void (*fn)(void *arg), void *arg)
{
    assert(irq_enabled());
    unsigned self = cpu_id();
    struct call c = {fn, arg, 0};
    struct call_node nodes[MAX_CPUS];
    mask &= smp_online_mask();
    for (unsigned i = 0; i < ncpus; i++) {
        if (i == self || !(mask & (1ull << i)))
            continue;
        nodes[i] = (struct call_node){.call = &c};
        __atomic_fetch_add(&c.pending, 1, __ATOMIC_RELAXED);
        uint64_t f = spin_lock_irqsave(&queues[i].lock);
        nodes[i].next = queues[i].head;
        queues[i].head = &nodes[i];
        spin_unlock_irqrestore(&queues[i].lock, f);
        lapic_send_ipi(cpus[i].apic_id, VEC_CALL);
        calls_sent[self]++;
    }
    if (mask & (1ull << self)) {
        uint64_t f = irq_save();
        fn(arg);
        irq_restore(f);
    }
    // Interrupts stay on while waiting: another CPU may be waiting on this one.
    while (__atomic_load_n(&c.pending, __ATOMIC_ACQUIRE))
        cpu_relax();
}

void smp_call_all(void (*fn)(void *arg), void *arg)
{
    smp_call_many(smp_online_mask(), fn, arg);
}

uint64_t smp_online_mask(void)
{
    uint64_t mask = 0;
    for (unsigned i = 0; i < ncpus; i++)
        if (READ_ONCE(cpus[i].online))
            mask |= 1ull << i;
    return mask;
}

uint64_t smp_calls_sent(unsigned cpu)
{
    return READ_ONCE(calls_sent[cpu]);
}

void smp_init_ipis(void)
{
    for (unsigned i = 0; i < MAX_CPUS; i++)
        queues[i].lock = (struct spinlock)SPINLOCK_INIT("smp call");
    irq_register(VEC_CALL, call_ipi);
}
