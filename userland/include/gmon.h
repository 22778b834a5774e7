// A histogram as a gmon.out file (what binutils gprof reads), sent off the
// machine on the console between two marker lines:
//
//   gmon: begin NAME BYTES
//   gmon: <base64, 76 characters a line>
//   gmon: end CRC32            (8 hex digits, the CRC-32 of the BYTES bytes)
//
// scripts/gmon-extract.py finds these lines in a console log and writes NAME.
#pragma once
#include <stdint.h>
#include <profrange.h>

// rate_hz: samples per second for a time source (10^7 / interval in 100 ns
// units), 0 for an event source (the histogram is then in "samples").
// Returns 0, or -1 when out of memory.
int gmon_emit(const char *name, const struct prof_range *r, uint32_t rate_hz);

uint32_t crc32(const void *data, size_t len); // IEEE 802.3, as zlib computes it
