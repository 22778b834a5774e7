// The per-CPU record ring's reader side (see ring.h).
#include "lib/ring.h"

#include "lib/panic.h"

void ring_init(struct ring *r, void *mem, uint32_t size, void *side, uint32_t side_size)
{
    *r = (struct ring){
        .buf = mem, .size = mem ? size : 0, .side = side, .side_size = side ? side_size : 0};
}

// --- the writer's rare cases: see ring.h ------------------------------------

// nest less one, as one instruction (an NMI cannot split it): what is left.
static uint32_t nest_down(struct ring *r)
{
    uint32_t left;
    __asm__ volatile("subl $1, %0" : "+m"(r->nest), "=@ccnz"(left));
    return left;
}

static void publish(struct ring *r, uint32_t bytes)
{
    r->off += bytes;
    if (r->off == r->size)
        r->off = 0;
    __atomic_store_n(&r->head, r->head + bytes, __ATOMIC_RELEASE);
}

// Room for max bytes (a pad first where they do not fit before the end), or
// NULL; for the outermost writer, with nest set.
static void *room(struct ring *r, uint32_t max)
{
    uint64_t used = r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    uint32_t to_end = r->size - r->off;
    if (to_end >= max)
        return r->size - used >= max ? r->buf + r->off : NULL;
    if (r->size - used < (uint64_t)to_end + max)
        return NULL;
    return ring_pad_to_start(r, to_end);
}

// The record a nested writer left at side, after the interrupted one's.
static void copy_side(struct ring *r)
{
    uint32_t n = r->side_bytes;
    void *dst = room(r, n);
    if (dst) {
        __builtin_memcpy(dst, r->side, n);
        publish(r, n);
    } else {
        ring_lose(r); // not when the interrupted record was at most side_size
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&r->side_bytes, 0, __ATOMIC_RELAXED);
}

// nest is RING_SIDE_PENDING: the outermost writer is done and a nested one
// left a record. While it is copied nest is 1 and side_bytes not 0, so an NMI
// then loses its record; one after the copy leaves the side buffer full again,
// and the decrement sees it pending.
void ring_flush_pending(struct ring *r)
{
    do {
        __atomic_store_n(&r->nest, 1, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        copy_side(r);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    } while (nest_down(r));
}

void *ring_reserve_failed(struct ring *r)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (nest_down(r))
        ring_flush_pending(r);
    return NULL;
}

void ring_cancel(struct ring *r)
{
    ring_reserve_failed(r);
}

// A writer that interrupted this CPU's writer of r (nest is 1): the side
// buffer when it is free, big enough, and the ring has room for the
// interrupted record (at most side_size), a pad and this one after it.
void *ring_reserve_nested(struct ring *r, uint32_t max)
{
    uint64_t used = r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    uint64_t to_end = r->size - r->off, two = 2ull * r->side_size;
    uint64_t need = to_end >= two ? two : to_end + r->side_size; // both, or a pad too
    if (__atomic_load_n(&r->side_bytes, __ATOMIC_RELAXED) || max > r->side_size ||
        r->size - used < need)
        return NULL;
    __atomic_store_n(&r->nest, 2, __ATOMIC_RELAXED);
    return r->side;
}

void ring_commit_slow(struct ring *r, uint32_t bytes)
{
    if ((__atomic_load_n(&r->nest, __ATOMIC_RELAXED) & 0xff) == 2) { // nested: keep it aside
        __atomic_store_n(&r->side_bytes, bytes, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&r->nest, 1 | RING_SIDE_PENDING, __ATOMIC_RELAXED);
        return;
    }
    publish(r, bytes); // the outermost writer, a nested record pending
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    nest_down(r);
    ring_flush_pending(r);
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
