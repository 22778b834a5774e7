// The sample log as a file in /tmp (see samplelog.h).
#include <samplelog.h>
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
        if (!NT_SUCCESS(s))
            return -1;
        if (got == 0)
            return total;
        if (!NT_SUCCESS(SysTmpWrite(file, buf, got, 0)))
            return -1;
        total += (long)got;
        if (got < len / 2)
            return total; // drained: what was left fit with room to spare
    }
    return total;
}
