// gmon.out bytes: a 20-byte header ("gmon", version 1, 12 zero bytes), then
// TIME_HIST records (tag 0, low_pc and high_pc as 8 bytes, u32 bin count,
// u32 rate, 15-byte dimension, 1-byte abbreviation, then u16 bins), all
// little-endian like the x86-64 ELF files they describe.
//
// Bins hold at most 65,535. gprof adds records with the same range, so a
// histogram with bigger buckets is split over as many records as needed:
// record k holds what is left of each bucket after k records, capped.
#include <gmon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GMON_TAG_TIME_HIST 0
#define BIN_MAX            65535u
#define HIST_HEADER        41 // tag 1, two addresses 16, count 4, rate 4, dimension 15, abbreviation 1
#define B64_LINE           57 // input bytes per console line (76 characters)

static uint8_t *put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

uint32_t crc32(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1));
    }
    return ~crc;
}

static void base64_line(const uint8_t *in, size_t len)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char out[B64_LINE / 3 * 4 + 1];
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = digits[v >> 18 & 63];
        out[o++] = digits[v >> 12 & 63];
        out[o++] = i + 1 < len ? digits[v >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? digits[v & 63] : '=';
    }
    out[o] = '\0';
    printf("gmon: %s\n", out);
}

int gmon_emit(const char *name, const struct prof_range *r, uint32_t rate_hz)
{
    uint64_t most = 0;
    for (uint64_t i = 0; i < r->nbuckets; i++)
        if (r->buckets[i] > most)
            most = r->buckets[i];
    uint64_t records = most ? (most + BIN_MAX - 1) / BIN_MAX : 1;
    size_t len = 20 + records * (HIST_HEADER + 2 * r->nbuckets);
    uint8_t *buf = calloc(1, len), *p = buf;
    if (!buf)
        return -1;
    memcpy(p, "gmon", 4);
    p = put_le(p + 4, 1, 4) + 12;
    for (uint64_t k = 0; k < records; k++) {
        *p++ = GMON_TAG_TIME_HIST;
        p = put_le(p, r->base, 8);
        p = put_le(p, r->base + (r->nbuckets << r->shift), 8);
        p = put_le(p, r->nbuckets, 4);
        p = put_le(p, rate_hz ? rate_hz : 1, 4);
        strcpy((char *)p, rate_hz ? "seconds" : "samples");
        p += 15;
        *p++ = rate_hz ? 's' : 'n';
        for (uint64_t i = 0; i < r->nbuckets; i++) {
            uint64_t left = r->buckets[i] > k * BIN_MAX ? r->buckets[i] - k * BIN_MAX : 0;
            p = put_le(p, left < BIN_MAX ? left : BIN_MAX, 2);
        }
    }
    printf("gmon: begin %s %zu\n", name, len);
    for (size_t i = 0; i < len; i += B64_LINE)
        base64_line(buf + i, len - i < B64_LINE ? len - i : B64_LINE);
    printf("gmon: end %08x\n", crc32(buf, len));
    free(buf);
    return 0;
}
