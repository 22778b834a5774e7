// peer: the workloads of userland/bin/bench.c (`bench cost` and
// `bench callchain D`) as a static Linux program, timed the same way, for
// `make bench-peers` (tests/bench/peers/peers.py). Linux's perf samples it
// from outside (`perf record -- peer ...`), so this program only runs the
// timed workload once and prints its length in TSC ticks, which under QEMU's
// -icount shift=0,sleep=off are guest instructions.
//
//   peer flat      bench.c's timed_work(): work(40,000,000)
//   peer deep D    bench.c's timed_deep(D): the same loop D - 4 calls of
//                  deep() down, under timed_deep, chain_run and callchain,
//                  at the root of the frame-pointer chain (see below)
//
// work(), deep(), timed_work() and timed_deep() are bench.c's: both include
// userland/include/benchloops.h, built with the userland's code-generation
// flags (peers.py checks that the compiled instructions are the same as in
// build/userland/bench).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "benchloops.h" // userland/include: bench.c's own workloads

// The frames bench.c has above timed_deep (there chain_run starts the PMC
// and callchain takes the baseline; here perf does both from outside).
__attribute__((noinline)) static uint64_t chain_run(unsigned frames)
{
    uint64_t t = timed_deep(frames);
    __asm__ volatile("" : "+r"(t));
    return t;
}

__attribute__((noinline)) static int callchain(unsigned frames)
{
    if (frames < 6 || frames > 64) {
        printf("peer: D must be 6..64\n");
        return 2;
    }
    uint64_t t = chain_run(frames);
    printf("peer: deep %u %llu instructions\n", frames, (unsigned long long)t);
    return 0;
}

__attribute__((noinline)) static int cost(void)
{
    uint64_t t = timed_work();
    printf("peer: flat %llu instructions\n", (unsigned long long)t);
    return 0;
}

// Calls fn(arg) with rbp = 0, as userland/lib/crt0.asm's _start calls main:
// a frame-pointer walk ends cleanly above fn instead of running on into the
// C library's startup code, which keeps no frame pointer. The chain a sample
// carries is then work's IP, deep x (D - 5), timed_deep, chain_run, callchain
// and the return into this function: D frames, as `bench callchain D` has
// (Linux's walk has no rule for a leaf without a frame, so it gives no frame
// to deep(1), which bench.c's walker records; this return stands for it).
int call_outermost(int (*fn)(unsigned), unsigned arg);
__asm__(".text\n"
        ".globl call_outermost\n"
        ".type call_outermost, @function\n"
        "call_outermost:\n"
        "    push %rbp\n"
        "    xor %ebp, %ebp\n"
        "    mov %rdi, %rax\n"
        "    mov %esi, %edi\n"
        "    call *%rax\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size call_outermost, . - call_outermost\n");

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "flat") == 0)
        return cost();
    if (argc >= 3 && strcmp(argv[1], "deep") == 0)
        return call_outermost(callchain, (unsigned)strtoul(argv[2], NULL, 0));
    printf("usage: peer flat | peer deep D\n");
    return 2;
}
