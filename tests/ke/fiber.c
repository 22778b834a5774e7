// Coroutines for the simulated CPUs' contexts: a stack each and a switch of
// stack pointers (as the kernel's own switch_context in
// kernel/arch/x86/switch.asm: the callee-saved registers pushed, rsp saved,
// the other's loaded, its registers popped), every switch told to ASan
// (the compiler's sanitizer/common_interface_defs.h's fiber calls) so that it keeps each
// stack's frames apart. The scheduler (the program's own stack) resumes a
// fiber; the fiber runs until it yields or its function returns.
#define _GNU_SOURCE
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "kx.h"

#define FIBER_STACK (128 * 1024) // ASan's frames are large

struct kx_fiber {
    void *sp;    // its saved stack pointer while it is switched out
    void *stack; // FIBER_STACK bytes
    void *fake;  // ASan's fake stack of this fiber while it is switched out
    void (*fn)(void *arg);
    void *arg;
    bool done;
};

// kx_switch(&save, load): the callee-saved registers on this stack, its
// stack pointer into *save; then load's registers, and return on its stack.
void kx_switch(void **save, void *load);
__asm__(".text\n"
        ".globl kx_switch\n"
        ".type kx_switch, @function\n"
        "kx_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size kx_switch, . - kx_switch\n");

static void *home_sp; // the scheduler's
static void *home_fake;
static const void *home_bottom;
static size_t home_size;
static struct kx_fiber *running;

struct kx_fiber *kx_fiber_new(void)
{
    struct kx_fiber *f = calloc(1, sizeof *f);
    void *stack =
        mmap(NULL, FIBER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!f || stack == MAP_FAILED) {
        perror("ke-explore: fiber stack");
        exit(2);
    }
    f->stack = stack;
    f->done = true;
    return f;
}

static void entry(void)
{
    struct kx_fiber *f = running;
    __sanitizer_finish_switch_fiber(NULL, &home_bottom, &home_size);
    f->fn(f->arg);
    f->done = true;
    // Never resumed again: ASan may drop this stack's frames.
    __sanitizer_start_switch_fiber(NULL, home_bottom, home_size);
    void *dead;
    kx_switch(&dead, home_sp);
    abort();
}

// A stack whose first switch "returns" into entry, as if entry had been
// called (rsp 8 past a 16-byte boundary), with six zero registers to pop.
void kx_fiber_start(struct kx_fiber *f, void (*fn)(void *arg), void *arg)
{
    // The frames of the fiber that ran here before may have left their
    // redzones poisoned.
    ASAN_UNPOISON_MEMORY_REGION(f->stack, FIBER_STACK);
    void **top = (void **)((char *)f->stack + FIBER_STACK);
    *--top = NULL;          // entry's return address: it never returns
    *--top = (void *)entry; // kx_switch's ret
    for (unsigned i = 0; i < 6; i++)
        *--top = NULL;
    f->sp = top;
    f->fn = fn;
    f->arg = arg;
    f->done = false;
}

void kx_fiber_resume(struct kx_fiber *f)
{
    running = f;
    __sanitizer_start_switch_fiber(&home_fake, f->stack, FIBER_STACK);
    kx_switch(&home_sp, f->sp);
    __sanitizer_finish_switch_fiber(home_fake, NULL, NULL);
    running = NULL;
}

void kx_fiber_yield(void)
{
    struct kx_fiber *f = running;
    __sanitizer_start_switch_fiber(&f->fake, home_bottom, home_size);
    kx_switch(&f->sp, home_sp);
    __sanitizer_finish_switch_fiber(f->fake, &home_bottom, &home_size);
}

bool kx_fiber_done(const struct kx_fiber *f)
{
    return f->done;
}
