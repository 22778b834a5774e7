// Call chains, walked by frame pointer in the sampling interrupt.
//
// Every function of the kernel and of userland is compiled with frame
// pointers (-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer): [rbp] holds
// the caller's rbp and [rbp + 8] the return address. The walk stops at rbp 0
// (the outermost frame: crt0 and the syscall entry clear rbp), and is cut
// (marked truncated) at a non-increasing or out-of-range frame (in the kernel,
// a misaligned one too) or when the depth is reached.
//
// Kernel frames are read only inside the current kernel stack, so a read can
// never fault. User frames (hwpmc/callchain.h: walk_user) are read with plain loads
// under the process's own CR3, each covered by a fault fixup (core/user_peek.h,
// arch/x86/user_frames.asm): a frame in an unmapped page ends the chain
// (counted), never faults, never takes a lock.
// The interrupt sees the process's own thread stopped, so its stack cannot
// change under the walk. When CR3 is not the process's (its exit has already
// switched to the kernel's tables) the user part is left out, as unreadable.
#include "pmc/hwpmc/callchain.h"

#include "lib/memlayout.h"

#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"

#include "core/addrspace.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/user_peek.h"
#include "core/vm.h"

static void kstack_bounds(const struct thread *t, uint64_t *lo, uint64_t *hi)
{
    *hi = t->kstack_top;
    *lo = t->kstack ? (uint64_t)t->kstack : t->kstack_top - KSTACK_SIZE;
    if (t->kstack)
        *hi = (uint64_t)t->kstack + KSTACK_SIZE;
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

// Where a user thread in the kernel keeps its user-mode registers: the trap
// frame at the top of its kernel stack (a system call, an exception, an
// interrupt through isr_common), or a lean entry's frame while that entry
// runs its user-work hook (vectors.asm: timer_entry, pmi_entry): struct intr_frame in place, with
// the nine saved registers and the hook's return address below it, where a trap frame would have
// r10 in the rbp slot. False when the top frame is not user mode's.
static bool user_state(const struct thread *t, struct intr_frame *out)
{
    const struct intr_frame *top = (const struct intr_frame *)(t->kstack_top - sizeof *top);
    if (!intr_from_user(top))
        return false;
    const uint64_t *ret = (const uint64_t *)((uint64_t)top - LEAN_SAVED_BYTES - 8);
    if (*ret == (uint64_t)lean_user_work_return)
        *out = *top;
    else
        *out = tf_intr_frame((const struct trapframe *)(t->kstack_top - sizeof(struct trapframe)));
    return true;
}

unsigned callchain_kernel(const struct intr_frame *f, struct pmclog_sample *r, unsigned max)
{
    const struct thread *t = percpu_read(current);
    uint64_t *frames = r->frames;
    unsigned how = 0;
    // f starts the kernel part, and a user thread's user-mode state is at
    // the top of its kernel stack (user_state).
    bool trunc = false;
    unsigned n = walk_kernel(f, t, frames, max, &trunc);
    r->nkernel = (uint16_t)n;
    struct intr_frame ustate;
    if (t->proc && t->kstack && user_state(t, &ustate)) {
        if (n == max)
            trunc = true; // the kernel part took every frame
        else
            how = walk_user(&ustate, &t->proc->as, frames, &n, max);
    }
    if (n == 0) {
        frames[0] = f->rip;
        n = 1;
    }
    r->nframes = (uint16_t)n;
    return how | (trunc ? CALLCHAIN_TRUNCATED : 0);
}

unsigned callchain_user_state(struct pmclog_sample *r, unsigned max, bool want_chain)
{
    const struct thread *t = percpu_read(current);
    struct intr_frame ustate;
    unsigned n = 0, how = 0;
    if (t->proc && t->kstack && user_state(t, &ustate)) {
        if (want_chain) {
            how = walk_user(&ustate, &t->proc->as, r->frames, &n, max);
        } else {
            r->frames[0] = ustate.rip;
            n = 1;
        }
    }
    if (n == 0) {
        r->frames[0] = 0; // no user-mode state: nothing the caller may see
        n = 1;
    }
    r->nframes = (uint16_t)n;
    r->nkernel = 0;
    return how;
}
