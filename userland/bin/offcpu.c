// offcpu [MS]: a program whose time on and off the CPU is known, for
// off-CPU analysis (docs/off-cpu.md). Of MS milliseconds (default 1000) it
// computes for 40% (offcpu_compute), sleeps for 30% (offcpu_sleep, SysSleep)
// and waits 30% for a child that computes meanwhile (offcpu_wait_child,
// SysWait; the child is this program again, in child_compute). It reads
// nothing else, so a profiler that sees the waits too finds its wall time
// split 40/30/30: on CPU, asleep, waiting for the child. A sampling profile
// alone sees only the first 40% (and the child's 30%, elsewhere).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

static uint64_t tsc_per_ms;

// Global, so that no compiler clones them under another name (.isra, .constprop).
uint64_t offcpu_compute(uint64_t ms);
uint64_t child_compute(uint64_t ms);
int offcpu_sleep(uint64_t ms);
int offcpu_wait_child(uint64_t ms);

static inline uint64_t tsc_now(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

// Spin in ring 3 for ms of the TSC's time: no system call on the way.
__attribute__((noinline)) static uint64_t spin(uint64_t ms, uint64_t x)
{
    uint64_t end = tsc_now() + ms * tsc_per_ms;
    while (tsc_now() < end)
        for (int i = 0; i < 64; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

__attribute__((noinline)) uint64_t offcpu_compute(uint64_t ms)
{
    uint64_t x = spin(ms, 1);
    __asm__ volatile("" ::: "memory"); // keep this frame: no tail call
    return x;
}

__attribute__((noinline)) uint64_t child_compute(uint64_t ms)
{
    uint64_t x = spin(ms, 2);
    __asm__ volatile("" ::: "memory");
    return x;
}

__attribute__((noinline)) int offcpu_sleep(uint64_t ms)
{
    int st = NT_SUCCESS(SysSleep(ms)) ? 0 : 1;
    __asm__ volatile("" ::: "memory");
    return st;
}

__attribute__((noinline)) int offcpu_wait_child(uint64_t ms)
{
    char arg[24];
    snprintf(arg, sizeof arg, "%lu", ms);
    const char *argv[] = {"offcpu", "child", arg, NULL};
    HANDLE child;
    int status = -1;
    if (!NT_SUCCESS(SysSpawn("offcpu", argv, 0, &child)))
        return -1;
    NTSTATUS s = SysWait(child, &status);
    NtClose(child);
    __asm__ volatile("" ::: "memory");
    return NT_SUCCESS(s) ? status : -1;
}

int main(int argc, char **argv)
{
    struct sys_clock c;
    SysClock(&c);
    tsc_per_ms = c.tsc_hz / 1000;
    if (argc > 2 && !strcmp(argv[1], "child"))
        return (int)(child_compute(strtoul(argv[2], NULL, 0)) & 0);
    uint64_t ms = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
    if (ms < 10 || ms > 600000) {
        printf("usage: offcpu [MS]  (10 to 600000 ms)\n");
        return 2;
    }
    uint64_t on = ms * 4 / 10, asleep = ms * 3 / 10, child = ms - on - asleep;
    printf("offcpu: expect on-CPU offcpu_compute 40%%, [sleep] 30%%, [child] 30%% of %lu ms\n", ms);
    uint64_t x = offcpu_compute(on);
    int st = offcpu_sleep(asleep) | offcpu_wait_child(child);
    printf("offcpu: done (%lx, %d)\n", x & 0xff, st);
    return st ? 1 : 0;
}
