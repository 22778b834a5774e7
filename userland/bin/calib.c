// calib [ITERATIONS]: a profiler's calibration target. calib_a, calib_b and
// calib_c run the same loop body, written once in assembly so that every
// iteration is the same instructions in each, for 50%, 30% and 20% of
// ITERATIONS. A profiler that samples by time or by instructions retired
// should therefore put about 50/30/20 of this program's samples in them.
//
// The default, a billion iterations of five instructions, takes one to two
// seconds under TCG (about 1.4 ns an iteration where it was measured) and
// about a second on hardware, where the add-rol-xor chain costs three cycles.
// A profile with fewer samples than wanted needs a larger ITERATIONS.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <workload.h>

#define DEFAULT_ITERATIONS 1000000000ul

// Each function starts on a 256-byte boundary, so buckets of up to 256 bytes
// (profile -b 8) still separate them.
WORKLOAD_LEAF(calib_a, 256)
WORKLOAD_LEAF(calib_b, 256)
WORKLOAD_LEAF(calib_c, 256)

int main(int argc, char **argv)
{
    uint64_t total = argc > 1 ? strtoul(argv[1], NULL, 0) : DEFAULT_ITERATIONS;
    uint64_t a = total / 10 * 5, b = total / 10 * 3, c = total - a - b;
    printf("calib: expect calib_a 50%% calib_b 30%% calib_c 20%%\n");
    printf("calib: %lu iterations (a %lu, b %lu, c %lu)\n", total, a, b, c);
    uint64_t x = calib_a(a, 1);
    x = calib_b(b, x);
    x = calib_c(c, x);
    printf("calib: done (%lx)\n", x);
    return 0;
}
