// Call chains for the PMC log: the kernel's frames walked by frame pointer
// inside the interrupt, then the user's, read with fault-safe loads (see
// hwpmc/callchain.c and docs/pmc-log.md). callchain_capture is the one way
// in; it and the user walk are here, inline in the log's sample path (a user
// sample's chain then costs no C call), the kernel's part is in callchain.c.
#pragma once
#include "lib/abi/pmclog.h"
#include "lib/types.h"

#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trapframe.h"

#include "core/addrspace.h"
#include "core/process.h"
#include "core/sched.h"
#include "core/user_peek.h"
#include "core/vm.h"

struct thread;

// How a chain ended, when not at its outermost frame.
#define CALLCHAIN_TRUNCATED  1u // cut: depth reached, or a bad or unreadable frame
#define CALLCHAIN_UNREADABLE 2u // a user frame lay in an unmapped page or outside the user half

// Whether the 5, 2, 3 or 6 bytes before ret (at code, ret's kernel-readable
// address; the bytes from code - off are readable) end in a call instruction:
// E8 rel32, FF /2 with a register, a disp8 or a RIP-relative operand.
static inline __attribute__((always_inline)) bool after_call(const uint8_t *code, unsigned off)
{
    if (off >= 5 && code[-5] == 0xE8)
        return true;
    if (off >= 2 && code[-2] == 0xFF && (code[-1] & 0xF8) == 0xD0)
        return true;
    if (off >= 3 && code[-3] == 0xFF && (code[-2] & 0xF8) == 0x50)
        return true;
    return off >= 6 && code[-6] == 0xFF && code[-5] == 0x15;
}

// The user-mode counterpart of kernel_return_at: ret in the image's
// executable segments, just past a call instruction.
static inline __attribute__((always_inline)) bool user_return_at(const struct addrspace *as,
                                                                 uint64_t ret)
{
    uint64_t code;
    return ret >= as->exec_lo + 8 && ret < as->exec_hi && user_peek(ret - 8, &code) &&
           after_call((const uint8_t *)&code + 8, 8);
}

// The user part of the chain from utf (user mode's state) into frames[*n..max),
// *n < max: *n becomes the frames' count; returns how the walk ended.
static inline __attribute__((always_inline)) unsigned walk_user(const struct intr_frame *utf,
                                                                const struct addrspace *as,
                                                                uint64_t *frames, unsigned *n,
                                                                unsigned max)
{
    frames[(*n)++] = utf->rip;
    if ((read_cr3() & PTE_ADDR) != as->pml4)
        return CALLCHAIN_TRUNCATED | CALLCHAIN_UNREADABLE;
    uint64_t fp = utf->rbp, sp = utf->rsp, top;
    uint64_t *out = frames + *n, *end = frames + max;
    user_peek_begin();
    // A leaf without a frame (see kernel_return_at). sp is user mode's and may
    // point anywhere: only a user-half one is read (a kernel one is negative).
    // Not with rbp 0: that is crt0's outermost frame (userland/lib/crt0.asm
    // clears rbp), so the function sampled is the one crt0 called, before its
    // prologue, and the return on top is into crt0, which user_frames leaves
    // out of every chain: each begins at the function crt0 called.
    if (fp && (int64_t)sp >= 0 && out != end && user_peek(sp, &top) && user_return_at(as, top))
        *out++ = top;
    // The first frame lies in the user half, above the stack pointer;
    // anything else is garbage.
    unsigned how = fp && ((int64_t)fp < 0 || fp < sp) ? CALLCHAIN_TRUNCATED : 0;
    if (fp && !how) {
        struct user_frames_end e = user_frames(fp, out, end);
        out = e.out;
        how = e.how;
    }
    user_peek_end();
    *n = (unsigned)(out - frames);
    return how;
}
_Static_assert(CALLCHAIN_TRUNCATED == USER_FRAMES_CUT &&
                   CALLCHAIN_UNREADABLE ==
                       (USER_FRAMES_CUT | USER_FRAMES_UNREADABLE) - USER_FRAMES_CUT,
               "user_frames reports the walk's end in callchain's bits");

// A chain interrupted in the kernel (callchain.c): the kernel frames from f,
// then the user's from the user-mode state at the top of the thread's kernel
// stack, as callchain_capture.
unsigned callchain_kernel(const struct intr_frame *f, struct pmclog_sample *r, unsigned max);
// The user part alone of this CPU's current thread, in the kernel: its chain
// from the user-mode state at the top of its kernel stack (its IP alone
// without want_chain), for a record whose reader may not see kernel mode.
unsigned callchain_user_state(struct pmclog_sample *r, unsigned max, bool want_chain);

// The chain of a sample of the interrupted context f of this CPU's current
// thread into the record r: at most max (>= 2) frames into r->frames, leaf
// first, with r->nframes and r->nkernel (the kernel frames come first). user
// says f is user mode's state (intr_from_user(f), which the caller knows). With
// want_chain false only the IP. Returns 0 or CALLCHAIN_* bits.
static inline __attribute__((always_inline)) unsigned callchain_capture(const struct intr_frame *f,
                                                                        bool user, bool want_chain,
                                                                        struct pmclog_sample *r,
                                                                        unsigned max)
{
    if (!want_chain) {
        r->frames[0] = f->rip;
        r->nframes = 1;
        r->nkernel = !user;
        return 0;
    }
    if (!user)
        return callchain_kernel(f, r, max);
    unsigned n = 0, how = walk_user(f, &percpu_read(current_process)->as, r->frames, &n, max);
    r->nframes = (uint16_t)n;
    r->nkernel = 0;
    return how;
}
