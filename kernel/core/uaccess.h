// Safe access to user memory from system calls.
//
// Every function checks that the whole range lies in the user half (no
// wrap-around, no kernel address) and survives unmapped pages; failure is
// STATUS_ACCESS_VIOLATION, never a kernel fault.
#pragma once
#include "lib/abi.h"
#include "lib/types.h"

NTSTATUS copy_from_user(void *dst, uint64_t usrc, size_t n);
NTSTATUS copy_to_user(uint64_t udst, const void *src, size_t n);
// A NUL-terminated string of at most max-1 characters into dst[max].
// STATUS_INVALID_PARAMETER when it does not fit.
NTSTATUS copy_string_from_user(char *dst, uint64_t usrc, size_t max);
void uaccess_init_cpu(void); // SMEP/SMAP on when the CPU has them
extern bool smap_enabled;    // set by uaccess_init_cpu; defined in arch/x86/uaccess.asm
