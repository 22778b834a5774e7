// Integer arithmetic for `profile stat` (the userland has no floating point):
// multiplexing scale, running fraction, ratios, mean and the relative standard
// error of the mean that perf stat prints for -r N, and fixed-point output.
#pragma once
#include <stddef.h>
#include <stdint.h>

// a * b / c without overflowing 64 bits in between (c > 0); saturates.
uint64_t stat_muldiv(uint64_t a, uint64_t b, uint64_t c);

// perf's scaling of a multiplexed count: count * enabled / running; the count
// itself when running == enabled, 0 when running is 0 (never counted).
uint64_t stat_scale(uint64_t count, uint64_t enabled, uint64_t running);

// running / enabled in tenths of a percent (625 = 62.5 %), rounded, at most
// 999 while running < enabled; 1000 when enabled is 0 or running >= enabled.
unsigned stat_running_permille(uint64_t running, uint64_t enabled);

// a * scale / b rounded to the nearest integer (halves up): a ratio in
// units of 1/scale (CPUs utilized 0.997 = 997 of 1000, 16.67 % = 1667 of
// 10000); 0 when b is 0. Every figure printed with a fixed number of
// decimals is rounded, not cut, as printf's %.3f rounds.
uint64_t stat_ratio(uint64_t a, uint64_t b, uint64_t scale);

// a / b in hundredths (IPC 0.85 = 85), rounded; 0 when b is 0.
uint64_t stat_ratio_x100(uint64_t a, uint64_t b);

// Mean of v[0..n-1] (n >= 1), rounded down.
uint64_t stat_mean(const uint64_t *v, unsigned n);

// Relative standard error of the mean, in hundredths of a percent (perf stat's
// "( +- 1.23% )" is 123): sqrt(sum (v - mean)^2 / (n - 1) / n) / mean. 0 for n
// < 2 or a mean of 0.
uint64_t stat_rel_stderr_x100(const uint64_t *v, unsigned n);

// Write value_scaled / 10^decimals with that many decimals ("12.345").
int stat_fmt_fixed(char *buf, size_t size, uint64_t value_scaled, unsigned decimals);

uint64_t stat_isqrt(uint64_t v); // floor(sqrt(v))
