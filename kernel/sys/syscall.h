// System-call dispatch. The table is generated from SYSCALL_LIST (lib/abi/syscalls.h): each
// entry do_NAME receives the arguments as an array (7 and up fetched from the
// user stack) and the caller's frame.
#pragma once
#include "lib/abi/status.h"
#include "lib/abi/syscalls.h"

#include "arch/x86/trapframe.h"

typedef uint64_t (*syscall_fn)(const uint64_t *a, struct trapframe *tf);

// A system call's NTSTATUS as its result in rax: the 32-bit code, zero-extended.
#define STATUS(s) ((uint64_t)(uint32_t)(s))

struct object;
struct process;
// The object a handle of the calling process names (NT's pseudo-handles
// included), when it is of type: a new reference, which the caller drops
// with object_unref. STATUS_INVALID_HANDLE or STATUS_OBJECT_TYPE_MISMATCH.
NTSTATUS sys_object(uint64_t handle, int type, struct object **out);
// The same for a process handle.
NTSTATUS sys_process(uint64_t handle, struct process **out);

#define SYSCALL_DECLARE(num, name, nargs) \
    uint64_t do_##name(const uint64_t *a, struct trapframe *tf);
SYSCALL_LIST(SYSCALL_DECLARE)
#undef SYSCALL_DECLARE

void syscall_init_cpu(void); // STAR, LSTAR, FMASK, EFER.SCE on this CPU
// How often system call nr was made, and how often it failed (its NTSTATUS
// was not NT_SUCCESS), on every CPU since boot.
void syscall_counts(unsigned nr, uint64_t *calls, uint64_t *failed);
