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
            s = SysTmpWrite(file, buf, got, 0);
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

const char *samplelog_tmp_why(NTSTATUS s)
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
    default: return NULL;
    }
}

void samplelog_error(const char *action, const char *file, NTSTATUS s, const char *hint)
{
    const char *why = samplelog_tmp_why(s);
    fprintf(stderr, "profile: cannot %s %s: %s%s%s%s%s%s\n", action, file, nt_status_name(s),
            why || hint ? " (" : "", why ? why : "", why && hint ? "; " : "", hint ? hint : "",
            why || hint ? ")" : "");
}
