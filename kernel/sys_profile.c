// System calls of the profiling subsystem. The NT profile-object calls arrive
// with the profile-object layer (kernel/pmc/profile objects); until then they
// answer STATUS_NOT_IMPLEMENTED, which every caller must handle anyway.
#include "syscall.h"

#define STATUS(s) ((uint64_t)(uint32_t)(s))
#define NOT_YET(name) \
    uint64_t do_##name(const uint64_t *a, struct trapframe *tf) \
    { \
        UNUSED(a); \
        UNUSED(tf); \
        return STATUS(STATUS_NOT_IMPLEMENTED); \
    }

NOT_YET(NtCreateProfile)
NOT_YET(NtCreateProfileEx)
NOT_YET(NtStartProfile)
NOT_YET(NtStopProfile)
NOT_YET(NtQueryIntervalProfile)
NOT_YET(NtSetIntervalProfile)
NOT_YET(SysProfileStats)
NOT_YET(SysProfileSources)
NOT_YET(SysPmcTrace)
NOT_YET(SysPmcInfo)
