// kernel/pmc/hwpmc/callchain.c on the host: where a kernel-mode sample finds
// the user's registers of the thread it interrupted. A thread in the kernel
// through timer_entry's user-work path (vectors.asm) has a lean frame at the
// top of its kernel stack, not a struct trapframe: its ring-3 rbp is the
// word just below the CPU's frame, and where a trap frame keeps rbp, the lean
// frame keeps r10.
#include <stdint.h>
#include <string.h>
#include "arch/x86/percpu.h"
#include "arch/x86/trapframe.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/user_peek.h"
#include "harness.h"
#include "lib/param.h"
#include "pmc/hwpmc/callchain.h"

#define USER_IP 0x401234ull

// A host array stands for the user's stack: rsp at its start, the user's
// rbp (where the frame chain starts) and r10 (another address above rsp: a
// plausible, wrong frame) inside it.
static uint64_t user_stack[512];
#define USER_SP  ((uint64_t)(uintptr_t)user_stack)
#define USER_RBP (USER_SP + 0x100)
#define USER_R10 (USER_SP + 0x800)

static struct cpu the_cpu;
struct cpu *this_cpu(void)
{
    return &the_cpu;
}

bool smap_enabled;
char __kernel_start[16], __text_end[1];
const char lean_user_work_return[1]; // vectors.asm's label, here only its address matters
static uint64_t cr3;
uint64_t read_cr3(void)
{
    return cr3;
}

// user_frames_walk (arch/x86/user_frames.asm) as the host sees it: record the
// frame pointer the walk starts from, store nothing, report a clean end.
uint64_t walk_started_at;
__asm__(".globl user_frames_walk\n"
        "user_frames_walk:\n"
        "    movq %rdi, walk_started_at(%rip)\n"
        "    movq %rsi, %rax\n"
        "    xorl %edx, %edx\n"
        "    ret\n");

static uint64_t kstack[KSTACK_SIZE / 8] __attribute__((aligned(16)));
static struct process proc;
static struct thread thr;

// The CPU's interrupt frame at the top of the kernel stack (ring 3's state).
static uint64_t *cpu_frame(void)
{
    uint64_t *top = kstack + KSTACK_SIZE / 8;
    top[-1] = 0x23;    // ss
    top[-2] = USER_SP; // rsp
    top[-3] = 0x202;   // rflags
    top[-4] = 0x2B;    // cs: ring 3
    top[-5] = USER_IP; // rip
    return top - 5;
}

// The user frame pointer the sample's walk started from.
static uint64_t sample_user_walk(void)
{
    static union {
        struct pmclog_sample s;
        uint64_t words[64];
    } rec;
    uint64_t *rsp = kstack + 64; // where the sample interrupted the kernel
    struct intr_frame f = {.rbp = 0,
                           .rip = (uint64_t)(uintptr_t)__kernel_start + 8,
                           .cs = 0x08,
                           .rflags = 0x2,
                           .rsp = (uint64_t)(uintptr_t)rsp};
    walk_started_at = 0;
    callchain_capture(&f, false, true, &rec.s, 16);
    return rec.s.nframes >= 2 && rec.s.frames[1] == USER_IP ? walk_started_at : 1;
}

// walk_user from a user state at USER_IP with rbp fp and, on top of the
// user's stack, a return address just past a call: the frames it gives.
static unsigned walk_from(uint64_t fp)
{
    static uint8_t code[16] = {[3] = 0xE8}; // a call rel32 at code[3]: it returns to code[8]
    proc.as.exec_lo = (uint64_t)(uintptr_t)code;
    proc.as.exec_hi = proc.as.exec_lo + sizeof code;
    user_stack[0] = proc.as.exec_lo + 8;
    struct intr_frame u = {.rip = USER_IP, .rbp = fp, .rsp = USER_SP, .cs = 0x2B};
    uint64_t frames[8];
    unsigned n = 0;
    walk_user(&u, &proc.as, frames, &n, 8);
    return n;
}

// A leaf sampled before its prologue: the return on top of the stack is its
// caller, unless rbp is 0 (crt0's outermost frame: the function crt0 called,
// whose return into crt0 no chain holds).
static void test_leaf_returns(void)
{
    CHECK(walk_from(USER_RBP) == 2, "callchain: a frameless leaf: its caller from the stack top");
    CHECK(walk_from(0) == 1,
          "callchain: main before its prologue (rbp 0): no frame of crt0 (%u frames)",
          walk_from(0));
}

void test_callchain(void)
{
    memset(&proc, 0, sizeof proc);
    memset(&thr, 0, sizeof thr);
    thr.kstack = (uint8_t *)kstack;
    thr.kstack_top = (uint64_t)(uintptr_t)(kstack + KSTACK_SIZE / 8);
    thr.proc = &proc;
    proc.as.pml4 = cr3 = 0x1000;
    the_cpu.current = &thr;
    // A trap frame: the fifteen general registers below vector and error.
    memset(kstack, 0, sizeof kstack);
    uint64_t *w = cpu_frame();
    struct trapframe *tf = (struct trapframe *)((uint8_t *)w - offsetof(struct trapframe, rip));
    tf->rbp = USER_RBP;
    tf->r10 = USER_R10;
    tf->r9 = USER_SP + 0x900; // where the lean frame keeps the hook's return address
    CHECK(sample_user_walk() == USER_RBP, "callchain: trap frame: the user walk starts at its rbp");
    // The lean frame of timer_entry's user-work path: rbp, then rax rcx rdx
    // rsi rdi r8 r9 r10 r11, then the user-work hook's return address.
    memset(kstack, 0, sizeof kstack);
    w = cpu_frame();
    w[-1] = USER_RBP;
    for (unsigned i = 2; i <= 10; i++)
        w[-(int)i] = 0x1000 * i; // rax ... r11: values of no importance
    w[-9] = USER_R10;            // r10 sits where a trap frame keeps rbp
    w[-11] = (uint64_t)(uintptr_t)lean_user_work_return;
    CHECK(sample_user_walk() == USER_RBP,
          "callchain: lean timer frame (user-work hook): the user walk starts at the user's rbp, "
          "not r10 (started at 0x%llx)",
          (unsigned long long)walk_started_at);
    test_leaf_returns();
}
