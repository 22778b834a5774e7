// faulty [ITERATIONS] [exit]: computes in faulty_a (60% of ITERATIONS) and
// faulty_b (40%), then writes through a null pointer and is killed, unless
// the second argument is "exit".
//
// A profiler must still report what it sampled before the fault. Each worker
// starts on a 256-byte boundary, so that buckets of up to 256 bytes never
// straddle two of them: profiles with 4-byte and 256-byte buckets must then
// agree function by function (tests/profile-tests).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <workload.h>

WORKLOAD_LEAF(faulty_a, 256)
WORKLOAD_LEAF(faulty_b, 256)

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 50000000;
    int fault = !(argc > 2 && strcmp(argv[2], "exit") == 0);
    uint64_t a = n / 10 * 6;
    uint64_t x = faulty_b(n - a, faulty_a(a, 1));
    printf("faulty: expect faulty_a 60%% faulty_b 40%% (%lx)%s\n", x,
           fault ? ", now writing to address 0" : "");
    fflush(NULL);
    if (fault)
        *(volatile int *)(uintptr_t)0 = 1;
    return 0;
}
