// Safe access to user memory from system calls.
//
// Every function checks that the whole range lies in the user half (no
// wrap-around, no kernel address) and survives unmapped pages; failure is
// STATUS_ACCESS_VIOLATION, never a kernel fault.
#pragma once
#include "lib/abi/status.h"
#include "lib/types.h"

NTSTATUS copy_from_user(void *dst, uint64_t usrc, size_t n);
NTSTATUS copy_to_user(uint64_t udst, const void *src, size_t n);
// Many copies into one user buffer (a drain handing out records one by one):
// user_buffer_check checks the whole of [ubuf, ubuf + len) once, in the user
// half and writable, as NT's ProbeForWrite probes an output buffer before a
// service writes it; each user_sink_copy into that buffer is then the
// fault-safe copy alone, without the address space's lock and page walk of
// copy_to_user. user_sink_copy has the shape of struct ring_sink's copy
// (lib/ring.h), ctx being ubuf.
NTSTATUS user_buffer_check(uint64_t ubuf, size_t len);
NTSTATUS user_sink_copy(void *ubuf, uint64_t pos, const void *src, uint32_t n);
// A NUL-terminated string of at most max-1 characters into dst[max].
// STATUS_INVALID_PARAMETER when it does not fit.
NTSTATUS copy_string_from_user(char *dst, uint64_t usrc, size_t max);
// n zero bytes at udst: a system call probes its output first, before it
// creates or changes anything, so a bad pointer fails with nothing to undo
// (as NT's services probe an output with ProbeForWrite before they act). The
// output is then zero until the call stores its answer.
NTSTATUS probe_user_output(uint64_t udst, size_t n);
void uaccess_init_cpu(void); // SMEP/SMAP on when the CPU has them
extern bool smap_enabled;    // set by uaccess_init_cpu; defined in arch/x86/uaccess.asm
