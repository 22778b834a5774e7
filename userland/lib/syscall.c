// The system-call stubs, one per SYSCALL_LIST entry in kernel/lib/abi/syscalls.h, so the
// numbers cannot drift from the kernel's table.
//
// Each stub is a leaf that moves argument 4 from rcx (C convention) to r10
// (rcx is lost to `syscall`), loads the number and traps. Arguments 7 and up
// stay on the caller's stack where the kernel reads them: the stub must not
// push anything.
#include <syscall.h>

#define STUB(num, name, nargs) \
    __asm__(".text\n" \
            ".p2align 4\n" \
            ".globl " #name "\n" \
            ".type " #name ", @function\n" #name ":\n" \
            "    mov %rcx, %r10\n" \
            "    mov $" #num ", %eax\n" \
            "    syscall\n" \
            "    ret\n" \
            ".size " #name ", . - " #name "\n");
SYSCALL_LIST(STUB)
#undef STUB

// Naming each call here fails the build when syscall.h lacks a prototype for
// an entry of the list (an implicit declaration is an error under -Werror).
#define NAME(num, name, nargs) (const void *)name,
__attribute__((used)) static const void *const prototyped[] = {SYSCALL_LIST(NAME)};
#undef NAME
