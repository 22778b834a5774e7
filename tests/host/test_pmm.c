// The page-frame bitmap: reservations, first fit, contiguous runs, exhaustion.
#include <stdlib.h>
#include "harness.h"
#include "core/pmm.h"

void test_pmm(void)
{
    static uint64_t bitmap[4]; // 256 frames
    struct pmm p;
    pmm_core_init(&p, bitmap, 200);
    CHECK(p.nfree == 0, "pmm: starts with every frame in use");
    pmm_core_set(&p, 10, 100, false);
    pmm_core_set(&p, 150, 50, false);
    CHECK(p.nfree == 150, "pmm: two free regions counted (%zu)", p.nfree);
    pmm_core_set(&p, 20, 5, true); // a reservation inside a free region
    CHECK(p.nfree == 145, "pmm: a reservation removes its frames");

    int64_t a = pmm_core_alloc(&p, 1);
    CHECK(a == 10, "pmm: first fit returns the lowest free frame (%lld)", (long long)a);
    int64_t run = pmm_core_alloc(&p, 20);
    CHECK(run == 25, "pmm: a 20-frame run skips the reserved hole (%lld)", (long long)run);
    // Free now: 11-19, 45-109, 150-199. 60 frames fit only at 45.
    int64_t big = pmm_core_alloc(&p, 60);
    CHECK(big == 45, "pmm: a run starts where it fits without crossing in-use frames (%lld)",
          (long long)big);
    CHECK(pmm_core_alloc(&p, 51) == -1, "pmm: no run longer than the largest hole");
    CHECK(pmm_core_alloc(&p, 0) == -1, "pmm: a zero-length request fails");
    size_t before = p.nfree;
    pmm_core_free(&p, (size_t)run, 20);
    CHECK(p.nfree == before + 20, "pmm: free returns the frames");
    CHECK(PANICS(pmm_core_free(&p, (size_t)run, 1)), "pmm: double free panics");
    CHECK(PANICS(pmm_core_free(&p, 199 + 5, 1)), "pmm: freeing past the end panics");

    // Exhaust, then the next allocation fails and nothing is counted twice.
    size_t got = 0, expect = p.nfree;
    while (pmm_core_alloc(&p, 1) >= 0)
        got++;
    CHECK(p.nfree == 0 && got == expect && expect == 145 - 1 - 60,
          "pmm: exhaustion hands out every free frame exactly once (%zu)", got);
    CHECK(pmm_core_alloc(&p, 1) == -1, "pmm: allocation fails when empty");
}
