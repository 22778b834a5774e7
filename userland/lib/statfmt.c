// `profile stat`'s arithmetic, in integers (see statfmt.h).
#include <statfmt.h>
#include <stdio.h>

uint64_t stat_muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    if (c == 0)
        return UINT64_MAX;
    // 128-bit product as hi:lo, then long division one bit at a time (no
    // __int128 division: the freestanding link has no libgcc).
    uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
    uint64_t ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    uint64_t lo = (ll & 0xFFFFFFFFu) | (mid << 32);
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    if (hi >= c)
        return UINT64_MAX; // the quotient does not fit
    uint64_t q = 0, r = hi;
    for (int i = 63; i >= 0; i--) {
        uint64_t top = r >> 63;
        r = (r << 1) | ((lo >> i) & 1);
        q <<= 1;
        if (top || r >= c) {
            r -= c;
            q |= 1;
        }
    }
    return q;
}

uint64_t stat_scale(uint64_t count, uint64_t enabled, uint64_t running)
{
    if (running == 0)
        return 0;
    if (running >= enabled)
        return count;
    return stat_muldiv(count, enabled, running);
}

unsigned stat_running_permille(uint64_t running, uint64_t enabled)
{
    if (enabled == 0 || running >= enabled)
        return 1000;
    uint64_t p = stat_ratio(running, enabled, 1000);
    return p > 999 ? 999 : (unsigned)p; // [100.0%] only when it always ran
}

uint64_t stat_ratio(uint64_t a, uint64_t b, uint64_t scale)
{
    // round(x) = floor((floor(2x) + 1) / 2), x = a * scale / b.
    uint64_t twice = b ? stat_muldiv(a, 2 * scale, b) : 0;
    return twice / 2 + (twice & 1);
}

uint64_t stat_ratio_x100(uint64_t a, uint64_t b)
{
    return stat_ratio(a, b, 100);
}

uint64_t stat_mean(const uint64_t *v, unsigned n)
{
    // Sum of quotients and remainders: no overflow for any n values.
    uint64_t q = 0, r = 0;
    for (unsigned i = 0; i < n; i++) {
        q += v[i] / n;
        r += v[i] % n;
    }
    return q + r / n;
}

uint64_t stat_isqrt(uint64_t v)
{
    uint64_t r = 0, bit = 1ull << 62;
    while (bit > v)
        bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

uint64_t stat_rel_stderr_x100(const uint64_t *v, unsigned n)
{
    uint64_t mean = stat_mean(v, n);
    if (n < 2 || mean == 0)
        return 0;
    // Deviations relative to the mean in parts per million (capped at 100x the
    // mean), so the squares stay far inside 64 bits.
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t d = v[i] > mean ? v[i] - mean : mean - v[i];
        uint64_t ppm = d / 100 >= mean ? 100000000ull : stat_muldiv(d, 1000000, mean);
        sum += ppm * ppm / ((uint64_t)n - 1) / n;
    }
    return (stat_isqrt(sum) + 50) / 100; // ppm -> hundredths of a percent, rounded
}

int stat_fmt_fixed(char *buf, size_t size, uint64_t value_scaled, unsigned decimals)
{
    uint64_t div = 1;
    for (unsigned i = 0; i < decimals; i++)
        div *= 10;
    if (decimals == 0)
        return snprintf(buf, size, "%llu", (unsigned long long)value_scaled);
    return snprintf(buf, size, "%llu.%0*llu", (unsigned long long)(value_scaled / div),
                    (int)decimals, (unsigned long long)(value_scaled % div));
}
