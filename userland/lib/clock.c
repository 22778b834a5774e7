// Time since boot.
#include <clock.h>
#include <syscall.h>

uint64_t clock_ns(void)
{
    struct sys_clock c;
    if (!NT_SUCCESS(SysClock(&c)))
        return 0;
    return c.ns;
}
