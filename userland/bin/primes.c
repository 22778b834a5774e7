// primes N: counts the primes below N by trial division (default 10000).
// A CPU-bound workload whose time is all in is_prime.
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int is_prime(unsigned long n)
{
    if (n < 2)
        return 0;
    for (unsigned long d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 10000;
    unsigned long count = 0;
    for (unsigned long i = 0; i < n; i++)
        count += is_prime(i);
    printf("primes: %lu primes below %lu\n", count, n);
    return 0;
}
