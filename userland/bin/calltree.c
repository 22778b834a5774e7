// calltree [ITERATIONS]: a program whose call tree is known, for the
// call-chain profiler's tests and lessons.
//
//   main ─┬─ ct_left  ── ct_leaf
//         └─ ct_right ── ct_leaf
//
// Every function runs the same loop body (written once in assembly, as in
// calib) for a fixed share of ITERATIONS, so a profiler sampling by time or
// by instructions must find these folded stacks:
//
//   main;ct_left;ct_leaf   40 %      main;ct_left    20 %
//   main;ct_right;ct_leaf  20 %      main;ct_right   10 %
//   main                   10 %
//
// Two more modes for the tests:
//
//   calltree syscalls N      main -> ct_syscalls -> SysClock, N times: most
//                            samples fall in the kernel (profile record -k)
//   calltree spawn K ITER    K children `calltree ITER` at once, then waits
//
// Each caller does its own share before its call and uses the callee's
// result afterwards, so no call becomes a jump (a tail call would leave no
// frame of the caller on the stack, and the chain would skip it).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>
#include <workload.h>

#define DEFAULT_ITERATIONS 100000000ul

// Keeps x live across the call: the call cannot be a tail call.
#define CT_USE(x) __asm__ volatile("" : "+r"(x))

WORKLOAD_LEAF(ct_leaf, 64)

// Defines name(self, leaf, x): self iterations of its own, then leaf in ct_leaf.
#define CT_CALLER(name) \
    WORKLOAD_FN(64) uint64_t name(uint64_t self, uint64_t leaf, uint64_t x) \
    { \
        if (self) \
            WORKLOAD_LOOP(self, x); \
        x = ct_leaf(leaf, x); \
        CT_USE(x); \
        return x; \
    }

CT_CALLER(ct_left)
CT_CALLER(ct_right)

WORKLOAD_FN(64) uint64_t ct_syscalls(uint64_t n)
{
    struct sys_clock c = {0};
    uint64_t sum = 0;
    while (n--) {
        SysClock(&c);
        sum += c.tsc & 1;
    }
    return sum;
}

static int spawn(uint64_t k, const char *iterations)
{
    HANDLE h[64];
    uint64_t started = 0;
    const char *argv[] = {"calltree", iterations, NULL};
    for (; started < k && started < 64; started++)
        if (!NT_SUCCESS(SysSpawn("calltree", argv, 0, &h[started])))
            break;
    int bad = started != k;
    for (uint64_t i = 0; i < started; i++) {
        int status = -1;
        SysWait(h[i], &status);
        NtClose(h[i]);
        bad |= status != 0;
    }
    printf("calltree: %lu children done%s\n", started, bad ? ", some failed" : "");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "syscalls") == 0) {
        uint64_t sum = ct_syscalls(strtoul(argv[2], NULL, 0));
        printf("calltree: syscalls done (%lu)\n", sum);
        return 0;
    }
    if (argc > 3 && strcmp(argv[1], "spawn") == 0)
        return spawn(strtoul(argv[2], NULL, 0), argv[3]);
    uint64_t total = argc > 1 ? strtoul(argv[1], NULL, 0) : DEFAULT_ITERATIONS;
    uint64_t tenth = total / 10, self = tenth;
    printf("calltree: %lu iterations: main 10%%, ct_left 20%% + ct_leaf 40%%, "
           "ct_right 10%% + ct_leaf 20%%\n",
           total);
    uint64_t x = 1;
    if (self)
        WORKLOAD_LOOP(self, x);
    x = ct_left(2 * tenth, 4 * tenth, x);
    CT_USE(x);
    x = ct_right(tenth, 2 * tenth, x);
    CT_USE(x);
    printf("calltree: done (%lx)\n", x);
    return 0;
}
