// The per-CPU record ring: one byte array of variable-size log records, each
// starting with a struct pmclog_header (abi.h), written by one CPU and
// drained by one reader. The PMC log (profile/pmc_log.c) and `pmc
// trace` (pmc/trace.c) each keep one per CPU.
//
// Two free-running positions: head, bytes ever written, advanced only by the
// ring's own CPU with interrupts off (a record is written in place first, then
// head is published with a release store); tail, bytes ever consumed,
// advanced only by the reader under its caller's lock (published with a
// release store, so the writer reuses space only after the reader is done
// with it). A record never wraps: when the room asked for does not fit before
// the end of the array, a pad record (type RING_PAD) fills the rest and the
// record starts at 0. A writer reserves room for the largest record it may
// write, fills it in place and commits what it used: the common case is a few
// instructions inline, with no division (off is head % size, kept as it goes).
// When there is no room the record is lost: the writer counts it (ring_lose),
// and the reader turns the count into a PMCLOG_LOST record after that CPU's
// records (ring_drain_lost).
//
// The memory is the caller's (ring_init): nothing here allocates.
//
// Not NMI-safe. The writer may be interrupted by nothing that writes the same
// ring: an NMI (a PMI delivered as NMI) landing between ring_reserve and
// ring_commit would reserve the same bytes. An NMI-safe ring would need: the
// reservation as one atomic step on the CPU (a cmpxchg loop on a reserve
// position, off derived from it rather than kept beside it); a separate
// published head that only the outermost of nested writers advances (a
// nesting count: an inner writer's record becomes visible with the outer
// one's commit, as Linux's perf ring buffer does); the pad written by the
// writer whose reservation crossed the end; and the lost count bumped with
// an atomic increment. The reader would be unchanged.
#pragma once
#include "lib/abi.h"
#include "lib/types.h"

#define RING_PAD 0 // a pad record's type: fills a ring's end; never handed out

struct ring {
    uint8_t *buf;
    uint32_t size;          // bytes, a multiple of 8; 0: no memory (every reserve fails)
    uint32_t off;           // head % size, kept by the writer (no division on the way)
    uint64_t head;          // bytes ever written (writer; release-published)
    uint64_t tail;          // bytes ever consumed (reader; release-published)
    uint64_t lost;          // records that found no room (writer: ring_lose)
    uint64_t lost_reported; // of those, already in a PMCLOG_LOST record (reader)
};

// Use size bytes at mem (8-byte aligned; size a multiple of 8, at least twice
// the largest record, so that an empty ring always has room for one past a
// pad) as an empty ring; mem NULL or size 0: a ring with no room. Only while
// no writer or reader can touch r.
void ring_init(struct ring *r, void *mem, uint32_t size);

// --- the writer: the ring's own CPU, interrupts off -------------------------

// ring_reserve's way past the ring's end, out of line: a pad record to the
// end, then max bytes from the start. It needs room for both, so that a
// reservation either fits whole or changes nothing. Static in each file that
// writes a ring (unused where none does), so its callers know which registers
// it leaves alone.
static __attribute__((noinline, unused)) void *ring_reserve_wrap(struct ring *r, uint32_t max)
{
    uint64_t used = r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    uint32_t to_end = r->size - r->off;
    if (r->size - used < (uint64_t)to_end + max)
        return NULL;
    // A pad may be only 8 bytes, less than a header: its type and size alone.
    uint16_t type = RING_PAD;
    __builtin_memcpy(r->buf + r->off + offsetof(struct pmclog_header, type), &type, sizeof type);
    __builtin_memcpy(r->buf + r->off + offsetof(struct pmclog_header, size), &to_end,
                     sizeof to_end);
    r->head += to_end;
    r->off = 0;
    return r->buf;
}

// Room for max bytes in one piece at the head, or NULL: the common case
// inline, the ring's end out of line.
static inline void *ring_reserve(struct ring *r, uint32_t max)
{
    uint64_t used = r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (__builtin_expect(r->size - r->off < max, 0))
        return ring_reserve_wrap(r, max);
    return r->size - used >= max ? r->buf + r->off : NULL;
}

// Publish the record reserved last: bytes (a multiple of 8, at most what was
// reserved) starting with its header, whose size field must say bytes.
static inline void ring_commit(struct ring *r, uint32_t bytes)
{
    r->off += bytes;
    if (r->off == r->size)
        r->off = 0;
    __atomic_store_n(&r->head, r->head + bytes, __ATOMIC_RELEASE);
}

// A record that found no room (ring_reserve said NULL), or that the caller
// dropped for want of a ring: reported by the reader as PMCLOG_LOST.
static inline void ring_lose(struct ring *r)
{
    r->lost++;
}

// --- the reader: under the caller's lock ------------------------------------

// Where drained records go: copy puts one whole record at byte pos of the
// destination (len bytes) and says whether it could (a copy to user memory
// can fault).
struct ring_sink {
    NTSTATUS (*copy)(void *ctx, uint64_t pos, const void *rec, uint32_t size);
    void *ctx;
    uint64_t len;
    uint64_t pos; // bytes handed out so far, advanced by each record
    bool full;    // a record did not fit in what was left: it and those after it stay
};

// Hand r's records to s, oldest first, each whole (pad records skipped),
// advancing the tail past each one copied. Stops when the next record does
// not fit (s->full) or a copy fails (its status; that record and the rest
// stay for the next drain). Returns STATUS_SUCCESS otherwise, with every
// record published before the call handed out. Does nothing once s->full.
NTSTATUS ring_drain(struct ring *r, struct ring_sink *s);

// After a ring_drain of r that succeeded: the records lost since the last
// report, as one PMCLOG_LOST record of cpu at time tsc, after r's records.
// Nothing when none were lost, or once s->full (it may set it); the count
// counts as reported only when the copy succeeds.
NTSTATUS ring_drain_lost(struct ring *r, uint16_t cpu, uint64_t tsc, struct ring_sink *s);

// Discard every record published so far, and the lost count with them.
void ring_clear(struct ring *r);
