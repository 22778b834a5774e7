// NTSTATUS values as text, for messages a person reads ("sh: x: STATUS_NO_MEMORY").
#include <nt.h>
#include <stdio.h>

#define ENTRY(code) \
    { \
        code, #code \
    }

// One row per status code in kernel/lib/abi.h (tests/test_libc.c checks that none
// is missing).
static const struct {
    NTSTATUS code;
    const char *name;
} status_names[] = {
    ENTRY(STATUS_SUCCESS),
    ENTRY(STATUS_DATATYPE_MISALIGNMENT),
    ENTRY(STATUS_BUFFER_OVERFLOW),
    ENTRY(STATUS_UNSUCCESSFUL),
    ENTRY(STATUS_NOT_IMPLEMENTED),
    ENTRY(STATUS_INVALID_INFO_CLASS),
    ENTRY(STATUS_INFO_LENGTH_MISMATCH),
    ENTRY(STATUS_ACCESS_VIOLATION),
    ENTRY(STATUS_INVALID_HANDLE),
    ENTRY(STATUS_INVALID_PARAMETER),
    ENTRY(STATUS_NO_MEMORY),
    ENTRY(STATUS_OBJECT_NAME_NOT_FOUND),
    ENTRY(STATUS_INVALID_IMAGE_FORMAT),
    ENTRY(STATUS_PROCESS_IS_TERMINATING),
    ENTRY(STATUS_INVALID_SYSTEM_SERVICE),
    ENTRY(STATUS_ACCESS_DENIED),
    ENTRY(STATUS_BUFFER_TOO_SMALL),
    ENTRY(STATUS_OBJECT_TYPE_MISMATCH),
    ENTRY(STATUS_PRIVILEGE_NOT_HELD),
    ENTRY(STATUS_INSUFFICIENT_RESOURCES),
    ENTRY(STATUS_PROFILING_NOT_STARTED),
    ENTRY(STATUS_PROFILING_NOT_STOPPED),
    ENTRY(STATUS_NOT_SUPPORTED),
    ENTRY(STATUS_PROFILING_AT_LIMIT),
    ENTRY(STATUS_INVALID_PARAMETER_7),
    ENTRY(STATUS_DEVICE_BUSY),
};

const char *nt_status_name(NTSTATUS status)
{
    static char unknown[4][24]; // a few calls may share one printf
    static unsigned next;
    for (size_t i = 0; i < sizeof status_names / sizeof status_names[0]; i++)
        if (status_names[i].code == status)
            return status_names[i].name;
    char *buf = unknown[next++ % 4];
    snprintf(buf, sizeof unknown[0], "STATUS_0x%08X", (unsigned)status);
    return buf;
}
