// Call chains, walked by frame pointer in the sampling interrupt.
//
// Every function of the kernel and of userland is compiled with frame
// pointers (-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer): [rbp] holds
// the caller's rbp and [rbp + 8] the return address. The walk stops at rbp 0
// (the outermost frame: crt0 and the syscall entry clear rbp), and is cut
// (marked truncated) at a misaligned, non-increasing or out-of-range frame or
// when the depth is reached.
//
// Kernel frames are read only inside the current kernel stack, so a read can
// never fault. User frames are read with plain loads under the process's own
// CR3, each covered by a fault fixup (core/user_peek.h): a frame in an
// unmapped page ends the chain (counted), never faults, never takes a lock.
// The interrupt sees the process's own thread stopped, so its stack cannot
// change under the walk. When CR3 is not the process's (its exit has already
// switched to the kernel's tables) the user part is left out, as unreadable.
#include "profile/callchain.h"
#include "core/addrspace.h"
#include "lib/memlayout.h"
#include "arch/x86/percpu.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/vm.h"
#include "arch/x86/cpu.h"
#include "core/user_peek.h"

static void kstack_bounds(const struct thread *t, uint64_t *lo, uint64_t *hi)
{
    *hi = t->kstack_top;
    *lo = t->kstack ? (uint64_t)t->kstack : t->kstack_top - KSTACK_SIZE;
    if (t->kstack)
        *hi = (uint64_t)t->kstack + KSTACK_SIZE;
}

// Whether the 5, 2, 3 or 6 bytes before ret (at code, ret's kernel-readable
// address; the bytes from code - off are readable) end in a call instruction:
// E8 rel32, FF /2 with a register, a disp8 or a RIP-relative operand.
static bool after_call(const uint8_t *code, unsigned off)
{
    if (off >= 5 && code[-5] == 0xE8)
        return true;
    if (off >= 2 && code[-2] == 0xFF && (code[-1] & 0xF8) == 0xD0)
        return true;
    if (off >= 3 && code[-3] == 0xFF && (code[-2] & 0xF8) == 0x50)
        return true;
    return off >= 6 && code[-6] == 0xFF && code[-5] == 0x15;
}

// gcc 12 ignores -mno-omit-leaf-frame-pointer for a leaf that needs no stack:
// such a leaf, like any function sampled before its prologue or after its
// epilogue, has its return address on top of the stack and the caller's rbp
// in rbp. The word at rsp is taken for that return address when it points
// just past a call instruction in kernel text: otherwise the caller would
// be missing from the chain.
static bool kernel_return_at(uint64_t ret)
{
    extern char __kernel_start[], __text_end[];
    return ret >= (uint64_t)__kernel_start + 8 && ret < (uint64_t)__text_end &&
           after_call((const uint8_t *)ret, 8);
}

// The user-mode counterpart of kernel_return_at: ret in the image's
// executable segments, just past a call instruction.
static bool user_return_at(const struct addrspace *as, uint64_t ret)
{
    uint64_t code;
    return ret >= as->exec_lo + 8 && ret < as->exec_hi && user_peek(ret - 8, &code) &&
           after_call((const uint8_t *)&code + 8, 8);
}

static unsigned walk_kernel(const struct intr_frame *tf, const struct thread *t, uint64_t *frames,
                            unsigned max, bool *trunc)
{
    uint64_t lo, hi;
    kstack_bounds(t, &lo, &hi);
    unsigned n = 0;
    frames[n++] = tf->rip;
    uint64_t fp = tf->rbp, min = tf->rsp;
    if (!(min & 7) && min >= lo && min <= hi - 8 && n < max &&
        kernel_return_at(*(const uint64_t *)min))
        frames[n++] = *(const uint64_t *)min; // a leaf without a frame (see kernel_return_at)
    while (fp) {
        if (n == max || (fp & 7) || fp < min || fp < lo || fp > hi - 16) {
            *trunc = true;
            break;
        }
        const uint64_t *f = (const uint64_t *)fp;
        uint64_t ret = f[1];
        if (!ret)
            break; // a zero return address marks the outermost frame (an AP's start-up)
        if (ret < KERNEL_VMA) {
            *trunc = true;
            break;
        }
        frames[n++] = ret;
        min = fp + 16;
        fp = f[0];
    }
    return n;
}

static unsigned walk_user(const struct intr_frame *utf, const struct addrspace *as,
                          uint64_t *frames, unsigned n, unsigned max, struct callchain_result *r)
{
    frames[n++] = utf->rip;
    if ((read_cr3() & PTE_ADDR) != as->pml4) {
        r->truncated = r->unreadable = true;
        return n;
    }
    uint64_t fp = utf->rbp, sp = utf->rsp, top;
    user_peek_begin();
    if (!(sp & 7) && sp < USER_TOP - 8 && n < max && user_peek(sp, &top) && user_return_at(as, top))
        frames[n++] = top; // a leaf without a frame (see kernel_return_at)
    if (fp && fp < sp) {   // frames live above the stack pointer: this is garbage
        r->truncated = true;
        fp = 0;
    }
    uint64_t *out = frames + n, *end = frames + max;
    while (fp) {
        // Only user addresses are ever read (a kernel one would not fault).
        if (out == end || (fp & 7) || fp >= USER_TOP - 16) {
            r->truncated = true;
            break;
        }
        uint64_t next, ret;
        if (!user_peek2(fp, &next, &ret)) {
            r->truncated = r->unreadable = true;
            break;
        }
        if (!next)
            break; // main's frame: its return goes into crt0, which has no frame
        *out++ = ret;
        if (next <= fp) { // frames only go up the stack: a loop or garbage
            r->truncated = true;
            break;
        }
        fp = next;
    }
    n = (unsigned)(out - frames);
    user_peek_end();
    return n;
}

void callchain_capture(const struct thread *t, const struct intr_frame *f, bool want_chain,
                       uint64_t *frames, unsigned max, struct callchain_result *r)
{
    bool user = intr_from_user(f);
    r->n = r->nkernel = 0;
    r->truncated = r->unreadable = false;
    if (!want_chain) {
        frames[0] = f->rip;
        r->n = 1;
        r->nkernel = !user;
        return;
    }
    // Interrupted in ring 3, f is the user's state. Interrupted in the
    // kernel, f starts the kernel part, and a user thread's ring-3 state is
    // the trap frame at the top of its kernel stack (the system call or the
    // exception it is in: both build a full one there).
    struct intr_frame ustate;
    const struct intr_frame *u = NULL;
    if (user) {
        u = f;
    } else {
        r->n = walk_kernel(f, t, frames, max, &r->truncated);
        r->nkernel = r->n;
        if (t->proc && t->kstack) {
            const struct trapframe *utf =
                (const struct trapframe *)(t->kstack_top - sizeof(struct trapframe));
            if (tf_from_user(utf)) {
                ustate = tf_intr_frame(utf);
                u = &ustate;
            }
        }
    }
    if (u && r->n < max)
        r->n = walk_user(u, &t->proc->as, frames, r->n, max, r);
    else if (u)
        r->truncated = true; // the kernel part took every frame
    if (r->n == 0) {
        frames[0] = f->rip;
        r->n = 1;
    }
}
