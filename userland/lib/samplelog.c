// The sample log as a file in /tmp (see samplelog.h).
#include <nt.h>
#include <samplelog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syscall.h>

NTSTATUS samplelog_load(const char *file, struct samplelog *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    for (;;) {
        if (cap - out->size < 65536) {
            size_t ncap = cap ? cap * 2 : 262144;
            uint8_t *d = realloc(out->data, ncap);
            if (!d) {
                samplelog_free(out);
                return STATUS_NO_MEMORY;
            }
            out->data = d;
            cap = ncap;
        }
        size_t got = 0;
        NTSTATUS s = SysTmpRead(file, out->size, out->data + out->size, cap - out->size, &got);
        if (!NT_SUCCESS(s)) {
            samplelog_free(out);
            return s;
        }
        if (got == 0)
            break;
        out->size += got;
    }
    size_t pos = 0;
    const struct pmclog_header *h;
    while ((h = samplelog_next(out, &pos)))
        if (h->type == PMCLOG_TRAILER && h->size == sizeof(struct samplelog_trailer))
            out->trailer = (const struct samplelog_trailer *)h;
    return STATUS_SUCCESS;
}

void samplelog_free(struct samplelog *log)
{
    free(log->data);
    log->data = NULL;
    log->size = 0;
    log->trailer = NULL;
}

const struct pmclog_header *samplelog_next(const struct samplelog *log, size_t *pos)
{
    if (*pos + sizeof(struct pmclog_header) > log->size)
        return NULL;
    const struct pmclog_header *h = (const struct pmclog_header *)(log->data + *pos);
    if (h->size < sizeof *h || h->size % 8 || h->size > log->size - *pos)
        return NULL;
    if (h->type == PMCLOG_SAMPLE) {
        const struct pmclog_sample *s = (const struct pmclog_sample *)h;
        if (h->size < sizeof *s || h->size != sizeof *s + 8u * s->nframes ||
            s->nkernel > s->nframes)
            return NULL;
    }
    *pos += h->size;
    return h;
}

long samplelog_drain(const char *file, void *buf, size_t len, unsigned max_reads)
{
    long total = 0;
    for (unsigned reads = 0; !max_reads || reads < max_reads; reads++) {
        size_t got = 0;
        NTSTATUS s = NtPmcReadLog(buf, len, &got);
        if (NT_SUCCESS(s) && got)
            s = samplelog_save(file, buf, got);
        if (!NT_SUCCESS(s))
            return s; // negative: bit 31 set
        if (got == 0)
            return total;
        total += (long)got;
        if (got < len / 2)
            return total; // drained: what was left fit with room to spare
    }
    return total;
}

NTSTATUS samplelog_save(const char *file, const void *buf, size_t len)
{
    if (strcmp(file, SAMPLELOG_HOST) != 0)
        return SysTmpWrite(file, buf, len, 0);
    size_t written;
    return SysHostWrite(buf, len, &written);
}

NTSTATUS samplelog_begin(const char *file)
{
    if (strcmp(file, SAMPLELOG_HOST) != 0)
        return SysTmpWrite(file, "", 0, TMP_TRUNCATE);
    struct samplelog_recording r = {
        .h = {.type = PMCLOG_RECORDING, .size = sizeof r},
        .version = SAMPLELOG_RECORDING_VERSION,
        .pmclog_version = PMCLOG_VERSION,
    };
    memcpy(r.magic, SAMPLELOG_RECORDING_MAGIC, sizeof r.magic);
    samplelog_cpu(r.cpu, sizeof r.cpu);
    return samplelog_save(file, &r, sizeof r);
}

static void cpuid(uint32_t leaf, uint32_t r[4])
{
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0));
}

// CPUID leaf 0's vendor, leaf 1's signature with the extended family and
// model folded in (Intel SDM vol. 2A, CPUID), leaves 0x80000002-4's brand.
void samplelog_cpu(char *buf, size_t len)
{
    uint32_t r[4], brand[13] = {0};
    char vendor[13] = {0};
    cpuid(0, r);
    memcpy(vendor, &r[1], 4);
    memcpy(vendor + 4, &r[3], 4);
    memcpy(vendor + 8, &r[2], 4);
    cpuid(1, r);
    uint32_t sig = r[0], family = (sig >> 8) & 0xf, model = (sig >> 4) & 0xf;
    if (family == 0xf)
        family += (sig >> 20) & 0xff;
    if (family >= 6)
        model |= ((sig >> 16) & 0xf) << 4;
    cpuid(0x80000000, r);
    for (uint32_t i = 0; r[0] >= 0x80000004 && i < 3; i++)
        cpuid(0x80000002 + i, brand + 4 * i);
    const char *b = (const char *)brand;
    while (*b == ' ')
        b++;
    snprintf(buf, len, "%s,%u,%u,%u %s", vendor, family, model, sig & 0xf, *b ? b : "-");
}

const char *samplelog_why(NTSTATUS s)
{
    // Only an unprivileged process is ever refused by owner or mode, and only
    // by the privileged user's files; sudo's processes may do anything.
    switch (s) {
    case STATUS_ACCESS_DENIED: return "the privileged user's file, private to it: use sudo";
    case STATUS_OBJECT_NAME_COLLISION:
        return "the privileged user's file: only sudo may replace it";
    case STATUS_QUOTA_EXCEEDED:
        return "unprivileged programs' share of /tmp is full; the rest is kept for sudo";
    case STATUS_TMP_FULL: return "/tmp is full";
    case STATUS_COMMITMENT_LIMIT:
        return "the memory left is kept for sudo's processes: free some, or use sudo";
    case STATUS_PMC_TOO_MANY_LOGS:
        return "unprivileged programs hold every log they may; the rest are kept for sudo";
    case STATUS_PMC_LOG_QUOTA:
        return "unprivileged programs' logs hold their share of memory: ask for a smaller ring "
               "(-r KB), or use sudo";
    case STATUS_PMC_TOO_MANY_RUNNING:
        return "the machine's sampling PMCs are all running (unprivileged programs may run "
               "three quarters of them; the rest are kept for sudo)";
    case STATUS_PRIVILEGE_NOT_HELD: return "the host's file is the privileged user's: use sudo";
    case STATUS_IO_TIMEOUT:
        return "the host stopped taking data for 5 s: its disk full, or QEMU stopped; the host's "
               "file keeps what it took";
    default: return NULL;
    }
}

void samplelog_error(const char *action, const char *file, NTSTATUS s, const char *hint)
{
    const char *why = samplelog_why(s);
    if (!strcmp(file, SAMPLELOG_HOST))
        file = "the host's file";
    fprintf(stderr, "profile: cannot %s %s: %s%s%s%s%s%s\n", action, file, nt_status_name(s),
            why || hint ? " (" : "", why ? why : "", why && hint ? "; " : "", hint ? hint : "",
            why || hint ? ")" : "");
}
