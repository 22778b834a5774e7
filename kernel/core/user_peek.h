// Reading the interrupted process's memory from an interrupt handler.
//
// Plain loads of user addresses through the current CR3, each covered by a
// fault fixup (trap.c): a kernel-mode page fault on a registered instruction
// resumes after the read instead of panicking, and kernel-mode faults never
// page anything in, so an unmapped, not-yet-touched or kernel-only page ends
// the read, takes no lock and changes nothing. With SMAP on, user pages are
// reachable only with RFLAGS.AC set (Intel SDM vol. 3A, 4.6.1 "Determination
// of Access Rights"): bracket the reads with user_peek_begin/user_peek_end,
// with interrupts off.
#pragma once
#include "lib/types.h"

#include "core/uaccess.h"

static inline void user_peek_begin(void)
{
    if (smap_enabled)
        __asm__ volatile("stac" ::: "memory");
}

static inline void user_peek_end(void)
{
    if (smap_enabled)
        __asm__ volatile("clac" ::: "memory");
}

// The word at addr, or false when the read faults. The fixup resumes at the
// C label fault (asm goto), so a read that succeeds costs just the load.
static inline bool user_peek(uint64_t addr, uint64_t *v)
{
    uint64_t a;
    __asm__ goto("1: movq %[m], %[a]\n"
                 ".pushsection .fixup_table, \"a\"\n"
                 ".balign 8\n"
                 ".quad 1b, %l[fault]\n"
                 ".popsection"
                 : [a] "=r"(a)
                 : [m] "m"(*(const uint64_t *)addr) // an operand only: the asm reads it
                 : "memory"
                 : fault);
    *v = a;
    return true;
fault:
    return false;
}

// The return addresses of the frame-pointer chain from fp (a user-half
// address) into out[], at most up to end: see arch/x86/user_frames.asm.
// How the walk ended: 0 at main's frame; otherwise cut (depth, loop,
// garbage), and also unreadable when a read faulted.
#define USER_FRAMES_CUT        1u
#define USER_FRAMES_UNREADABLE 2u
struct user_frames_end {
    uint64_t *out; // past the last return address stored
    unsigned how;  // 0, or USER_FRAMES_CUT with USER_FRAMES_UNREADABLE or not
};
// Called through inline asm: it clobbers only rax, rcx, rdx, rsi and rdi, so
// the caller keeps its values in the other registers and saves nothing.
static inline struct user_frames_end user_frames(uint64_t fp, uint64_t *out, uint64_t *end)
{
    uint64_t *last, how = (uint64_t)end, scratch;
    __asm__ volatile("call user_frames_walk"
                     : "+D"(fp), "+S"(out), "+d"(how), "=a"(last), "=c"(scratch)
                     :
                     : "memory", "cc");
    return (struct user_frames_end){last, (unsigned)how};
}
