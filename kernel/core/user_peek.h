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
#include "core/uaccess.h"
#include "lib/types.h"

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

// The word at addr, or false when the read faults.
static inline bool user_peek(uint64_t addr, uint64_t *v)
{
    uint64_t a; // undefined when the read faults
    uint32_t fault;
    __asm__ volatile("movl $1, %[f]\n"
                     "1: movq (%[p]), %[a]\n"
                     "xorl %[f], %[f]\n"
                     "2:\n"
                     ".pushsection .fixup_table, \"a\"\n"
                     ".balign 8\n"
                     ".quad 1b, 2b\n"
                     ".popsection"
                     : [a] "=&r"(a), [f] "=&r"(fault)
                     : [p] "r"(addr)
                     : "memory");
    *v = a;
    return fault == 0;
}

// The words at addr and addr + 8, or false when either read faults.
static inline bool user_peek2(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
    uint64_t a, b; // undefined when the read faults
    uint32_t fault;
    __asm__ volatile("movl $1, %[f]\n"
                     "1: movq (%[p]), %[a]\n"
                     "2: movq 8(%[p]), %[b]\n"
                     "xorl %[f], %[f]\n"
                     "3:\n"
                     ".pushsection .fixup_table, \"a\"\n"
                     ".balign 8\n"
                     ".quad 1b, 3b\n"
                     ".quad 2b, 3b\n"
                     ".popsection"
                     : [a] "=&r"(a), [b] "=&r"(b), [f] "=&r"(fault)
                     : [p] "r"(addr)
                     : "memory");
    *lo = a;
    *hi = b;
    return fault == 0;
}
