// The kernel/user ABI: status codes and the profile-source numbers.
//
// Included by the kernel and by userland; nothing here may depend on either.
// Status codes are NTSTATUS values: severity in bits 31:30 (0 success,
// 2 warning, 3 error), so NT_SUCCESS(s) is "s >= 0" as a signed 32-bit value.
#pragma once
#include <stdint.h>

typedef int32_t NTSTATUS;
#define NT_SUCCESS(s) ((NTSTATUS)(s) >= 0)

#define STATUS_SUCCESS                 ((NTSTATUS)0x00000000)
#define STATUS_DATATYPE_MISALIGNMENT   ((NTSTATUS)0x80000002)
#define STATUS_BUFFER_OVERFLOW         ((NTSTATUS)0x80000005)
#define STATUS_NOT_IMPLEMENTED         ((NTSTATUS)0xC0000002)
#define STATUS_INVALID_INFO_CLASS      ((NTSTATUS)0xC0000003)
#define STATUS_INFO_LENGTH_MISMATCH    ((NTSTATUS)0xC0000004)
#define STATUS_ACCESS_VIOLATION        ((NTSTATUS)0xC0000005)
#define STATUS_INVALID_HANDLE          ((NTSTATUS)0xC0000008)
#define STATUS_INVALID_PARAMETER       ((NTSTATUS)0xC000000D)
#define STATUS_NO_MEMORY               ((NTSTATUS)0xC0000017)
#define STATUS_ACCESS_DENIED           ((NTSTATUS)0xC0000022)
#define STATUS_BUFFER_TOO_SMALL        ((NTSTATUS)0xC0000023)
#define STATUS_PRIVILEGE_NOT_HELD      ((NTSTATUS)0xC0000061)
#define STATUS_INSUFFICIENT_RESOURCES  ((NTSTATUS)0xC000009A)
#define STATUS_PROFILING_NOT_STARTED   ((NTSTATUS)0xC00000B7)
#define STATUS_PROFILING_NOT_STOPPED   ((NTSTATUS)0xC00000B8)
#define STATUS_NOT_SUPPORTED           ((NTSTATUS)0xC00000BB)
#define STATUS_PROFILING_AT_LIMIT      ((NTSTATUS)0xC00000D3)
#define STATUS_INVALID_PARAMETER_7     ((NTSTATUS)0xC00000F5)
#define STATUS_DEVICE_BUSY             ((NTSTATUS)0x80000011)

// KPROFILE_SOURCE: 0x00-0x18 as in WDM.H, 0x19-0x1F Emon-specific.
typedef enum _KPROFILE_SOURCE {
    ProfileTime = 0x00,
    ProfileAlignmentFixup = 0x01,
    ProfileTotalIssues = 0x02,
    ProfilePipelineDry = 0x03,
    ProfileLoadInstructions = 0x04,
    ProfilePipelineFrozen = 0x05,
    ProfileBranchInstructions = 0x06,
    ProfileTotalNonissues = 0x07,
    ProfileDcacheMisses = 0x08,
    ProfileIcacheMisses = 0x09,
    ProfileCacheMisses = 0x0A,
    ProfileBranchMispredictions = 0x0B,
    ProfileStoreInstructions = 0x0C,
    ProfileFpInstructions = 0x0D,
    ProfileIntegerInstructions = 0x0E,
    Profile2Issue = 0x0F,
    Profile3Issue = 0x10,
    Profile4Issue = 0x11,
    ProfileSpecialInstructions = 0x12,
    ProfileTotalCycles = 0x13,
    ProfileIcacheIssues = 0x14,
    ProfileDcacheAccesses = 0x15,
    ProfileMemoryBarrierCycles = 0x16,
    ProfileLoadLinkedIssues = 0x17,
    ProfileMaximum = 0x18,
    ProfileUnhaltedCoreCycles = 0x19,
    ProfileInstructionRetired = 0x1A,
    ProfileUnhaltedReferenceCycles = 0x1B,
    ProfileLLCReference = 0x1C,
    ProfileLLCMisses = 0x1D,
    ProfileBranchInstructionRetired = 0x1E,
    ProfileBranchMispredictsRetired = 0x1F,
    ProfileSourceCount = 0x20 // one past the last source this kernel knows
} KPROFILE_SOURCE;
