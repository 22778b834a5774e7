// panic: the one way the kernel stops on a fatal error.
#include "lib/panic.h"

#include "lib/cmdline.h"
#include "lib/kprintf.h"
#include "lib/ksym.h"
#include "lib/memlayout.h"

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/nmi.h"
#include "arch/x86/percpu.h"
#include "arch/x86/qemu.h"
#include "arch/x86/trapframe.h"

#include "core/console.h"

volatile bool panicked;
extern bool lapic_ready;

static void print_address(uint64_t a)
{
    uint64_t off;
    const char *name = ksym_lookup(a, &off);
    if (name)
        kprintf("  [<%016lx>] %s+0x%lx\n", a, name, off);
    else
        kprintf("  [<%016lx>] ?\n", a);
}

// Walk saved frame pointers: [rbp] is the caller's rbp, [rbp+8] the return address.
// A trap on a function's first instruction has no frame yet: its return
// address is still on top of the stack (rsp), and rbp is the caller's.
static void backtrace(uint64_t rip, uint64_t rbp, uint64_t rsp)
{
    kprintf("backtrace:\n");
    print_address(rip);
    uint64_t off;
    if (rsp && ksym_lookup(rip, &off) && off == 0 && rsp >= DIRECT_MAP_BASE && !(rsp & 7))
        print_address(*(const uint64_t *)rsp - 1);
    for (int depth = 0; depth < 32 && rbp; depth++) {
        if (rbp < DIRECT_MAP_BASE || (rbp & 7))
            break; // not a kernel stack address: stop rather than fault
        const uint64_t *frame = (const uint64_t *)rbp;
        uint64_t ret = frame[1];
        if (ret < KERNEL_VMA)
            break;
        print_address(ret - 1); // inside the call instruction, not after it
        rbp = frame[0];
    }
}

// Become the only CPU that runs: stop the others with an NMI, bypass the console lock.
static void panic_begin(void)
{
    cli();
    if (__atomic_exchange_n(&panicked, true, __ATOMIC_SEQ_CST))
        halt_forever(); // another CPU is already panicking
    console_panic();
    if (lapic_ready)
        nmi_stop_others();
}

static void NORETURN panic_end(void)
{
    kprintf("panic: system halted\n");
    if (cmdline_test_mode())
        qemu_exit(QEMU_EXIT_FAILURE);
    halt_forever();
}

static unsigned panic_cpu(void)
{
    return lapic_ready ? cpu_id() : 0;
}

void panic(const char *fmt, ...)
{
    panic_begin();
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kprintf("\npanic: cpu %u: %s\n", panic_cpu(), msg);
    uint64_t rsp, rbp;
    __asm__ volatile("movq %%rsp, %0; movq %%rbp, %1" : "=r"(rsp), "=r"(rbp));
    kprintf("registers: rsp %016lx rbp %016lx rflags %016lx\n", rsp, rbp, read_rflags());
    kprintf("           cr0 %016lx cr2 %016lx cr3 %016lx cr4 %016lx\n", read_cr0(), read_cr2(),
            read_cr3(), read_cr4());
    backtrace((uint64_t)__builtin_return_address(0), *(uint64_t *)rbp, 0);
    panic_end();
}

void panic_trap(struct trapframe *tf, const char *what)
{
    panic_begin();
    kprintf("\npanic: cpu %u: %s (vector %lu, error 0x%lx) at %016lx\n", panic_cpu(), what,
            tf->vector, tf->error, tf->rip);
    kprintf("registers:\n");
    kprintf("  rax %016lx rbx %016lx rcx %016lx rdx %016lx\n", tf->rax, tf->rbx, tf->rcx, tf->rdx);
    kprintf("  rsi %016lx rdi %016lx rbp %016lx rsp %016lx\n", tf->rsi, tf->rdi, tf->rbp, tf->rsp);
    kprintf("  r8  %016lx r9  %016lx r10 %016lx r11 %016lx\n", tf->r8, tf->r9, tf->r10, tf->r11);
    kprintf("  r12 %016lx r13 %016lx r14 %016lx r15 %016lx\n", tf->r12, tf->r13, tf->r14, tf->r15);
    kprintf("  rip %016lx cs %04lx rflags %016lx ss %04lx\n", tf->rip, tf->cs, tf->rflags, tf->ss);
    kprintf("  cr0 %016lx cr2 %016lx cr3 %016lx cr4 %016lx\n", read_cr0(), read_cr2(), read_cr3(),
            read_cr4());
    backtrace(tf->rip, tf->rbp, tf->rsp);
    panic_end();
}
