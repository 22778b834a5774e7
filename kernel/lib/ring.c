// The per-CPU record ring's reader side (see ring.h).
#include "lib/ring.h"
#include "lib/panic.h"

void ring_init(struct ring *r, void *mem, uint32_t size)
{
    *r = (struct ring){.buf = mem, .size = mem ? size : 0};
}

NTSTATUS ring_drain(struct ring *r, struct ring_sink *s)
{
    if (s->full)
        return STATUS_SUCCESS;
    // Everything before head is complete: the writer published it with a
    // release store after writing the record.
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), t = r->tail;
    NTSTATUS st = STATUS_SUCCESS;
    while (t < head) {
        // Type and size only: a pad at the end may be 8 bytes, less than a header.
        uint32_t at = (uint32_t)(t % r->size);
        const uint8_t *h = r->buf + at;
        uint16_t type;
        uint32_t size;
        __builtin_memcpy(&type, h + offsetof(struct pmclog_header, type), sizeof type);
        __builtin_memcpy(&size, h + offsetof(struct pmclog_header, size), sizeof size);
        // The writer commits whole records, multiples of 8 bytes, none
        // crossing the end: anything else was overwritten by someone else.
        if (size < 8 || size % 8 || size > head - t || size > r->size - at)
            panic("ring %p: a record of %u bytes at %lu, head %lu", (void *)r, size,
                  (unsigned long)t, (unsigned long)head);
        if (type != RING_PAD) {
            if (s->pos + size > s->len) {
                s->full = true;
                break;
            }
            st = s->copy(s->ctx, s->pos, h, size);
            if (!NT_SUCCESS(st))
                break;
            s->pos += size;
        }
        t += size;
    }
    // The bytes before t are the writer's again only after the copies above.
    __atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
    return st;
}

NTSTATUS ring_drain_lost(struct ring *r, uint16_t cpu, uint64_t tsc, struct ring_sink *s)
{
    uint64_t lost = __atomic_load_n(&r->lost, __ATOMIC_RELAXED);
    if (s->full || lost <= r->lost_reported)
        return STATUS_SUCCESS;
    struct pmclog_lost rec = {
        .h = {.type = PMCLOG_LOST, .cpu = cpu, .size = sizeof rec, .tsc = tsc},
        .count = lost - r->lost_reported,
    };
    if (s->pos + sizeof rec > s->len) {
        s->full = true;
        return STATUS_SUCCESS;
    }
    NTSTATUS st = s->copy(s->ctx, s->pos, &rec, sizeof rec);
    if (NT_SUCCESS(st)) {
        s->pos += sizeof rec;
        r->lost_reported = lost;
    }
    return st;
}

void ring_clear(struct ring *r)
{
    __atomic_store_n(&r->tail, __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
    r->lost_reported = __atomic_load_n(&r->lost, __ATOMIC_RELAXED);
}
