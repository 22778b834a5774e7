// The per-CPU record ring: one byte array of variable-size log records, each
// starting with a struct pmclog_header (lib/abi/pmclog.h), written by one CPU and
// drained by one reader. The PMC log (pmc/hwpmc/log.c) and `pmc
// trace` (pmc/hal/trace.c) each keep one per CPU.
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
// NMI-safe. An NMI (a sample taken by NMI) may land while its CPU is between
// ring_reserve and ring_commit of the same ring, and write a record itself.
// nest counts the writers between their reserve and commit on the CPU; the
// CPU's NMIs never nest (arch/x86/nmi.h), so it is 0, 1, or 2 for an NMI's
// writer inside an interrupted one. A nested writer never touches off or
// head: it writes its record into the side buffer (as big as the largest
// record the ring takes), marks it pending in nest (RING_SIDE_PENDING), and
// the interrupted writer's commit copies it into the ring after its own
// record and publishes both. When the side buffer is taken (a second NMI
// during the same interrupted write) the nested record is lost and counted.
// So an interrupted writer's fast path costs three instructions in reserve
// (test nest, set it) and four in commit (test it, decrement it and see no
// record pending); Linux's perf ring buffer instead reserves atomically and
// lets only the outermost writer publish head (kernel/events/ring_buffer.c),
// which costs a cmpxchg in every reservation. The lost count is bumped with
// one read-modify-write instruction, which an NMI cannot split.
#pragma once
#include "lib/abi/pmclog.h"
#include "lib/abi/status.h"
#include "lib/types.h"

#define RING_PAD          0      // a pad record's type: fills a ring's end; never handed out
#define RING_SIDE_PENDING 0x100u // nest: a nested writer's record waits in the side buffer

struct ring {
    uint8_t *buf;
    uint32_t size;          // bytes, a multiple of 8; 0: no memory (every reserve fails)
    uint32_t off;           // head % size, kept by the writer (no division on the way)
    uint64_t head;          // bytes ever written (writer; release-published)
    uint64_t tail;          // bytes ever consumed (reader; release-published)
    uint64_t lost;          // records that found no room (writer: ring_lose)
    uint64_t lost_reported; // of those, already in a PMCLOG_LOST record (reader)
    uint32_t nest;          // writers between reserve and commit, | RING_SIDE_PENDING
    uint32_t side_size;     // bytes at side: a nested writer's largest record
    uint8_t *side;          // a nested writer's record until the interrupted commit
    uint32_t side_bytes;    // the record waiting at side (0: none)
};

// Use size bytes at mem (8-byte aligned; size a multiple of 8, at least twice
// the largest record, so that an empty ring always has room for one past a
// pad) as an empty ring; mem NULL or size 0: a ring with no room. side
// (side_size bytes, 8-byte aligned; may be NULL) holds the record of a writer
// that interrupts another one (an NMI). Only while no writer or reader can
// touch r.
void ring_init(struct ring *r, void *mem, uint32_t size, void *side, uint32_t side_size);

// --- the writer: the ring's own CPU, interrupts off (or in an NMI) -----------

// The out-of-line halves (ring.c): a reservation that found no room, one by a
// writer that interrupted another, and a commit that is not the plain one.
void *ring_reserve_failed(struct ring *r);
void *ring_reserve_nested(struct ring *r, uint32_t max);
void ring_commit_slow(struct ring *r, uint32_t bytes);
void ring_flush_pending(struct ring *r);

// A pad record over the to_end bytes left before the ring's end, then the
// start: where the next record goes. A pad may be only 8 bytes, less than a
// header: its type and size alone. The writer's, with room for both checked.
static inline void *ring_pad_to_start(struct ring *r, uint32_t to_end)
{
    uint16_t type = RING_PAD;
    __builtin_memcpy(r->buf + r->off + offsetof(struct pmclog_header, type), &type, sizeof type);
    __builtin_memcpy(r->buf + r->off + offsetof(struct pmclog_header, size), &to_end,
                     sizeof to_end);
    r->head += to_end;
    r->off = 0;
    return r->buf;
}

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
        return ring_reserve_failed(r);
    return ring_pad_to_start(r, to_end);
}

// Room for max bytes in one piece at the head, or NULL: the common case
// inline, the ring's end out of line. Every reservation that is not NULL is
// followed by one ring_commit on the same CPU.
static inline void *ring_reserve(struct ring *r, uint32_t max)
{
    if (__builtin_expect(__atomic_load_n(&r->nest, __ATOMIC_RELAXED) != 0, 0))
        return ring_reserve_nested(r, max);
    __atomic_store_n(&r->nest, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); // nest set before head and off are read
    uint64_t used = r->head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (__builtin_expect(r->size - r->off < max, 0))
        return ring_reserve_wrap(r, max);
    if (__builtin_expect(r->size - used >= max, 1))
        return r->buf + r->off;
    return ring_reserve_failed(r);
}

// Publish the record reserved last: bytes (a multiple of 8, at most what was
// reserved) starting with its header, whose size field must say bytes. The
// decrement of nest is one instruction, so an NMI either sees the writer
// still busy (and leaves its record pending, seen here) or sees it done.
static inline void ring_commit(struct ring *r, uint32_t bytes)
{
    if (__builtin_expect(__atomic_load_n(&r->nest, __ATOMIC_RELAXED) != 1, 0)) {
        ring_commit_slow(r, bytes);
        return;
    }
    r->off += bytes;
    if (r->off == r->size)
        r->off = 0;
    __atomic_store_n(&r->head, r->head + bytes, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint32_t left;
    __asm__ volatile("subl $1, %0" : "+m"(r->nest), "=@ccnz"(left));
    if (__builtin_expect(left, 0))
        ring_flush_pending(r);
}

// Give back the room the last ring_reserve handed out, writing nothing: as
// a reservation that failed, a nested writer's record pending meanwhile is
// published. The outermost writer's only (an NMI's writer never gives back).
void ring_cancel(struct ring *r);

// A record that found no room (ring_reserve said NULL), or that the caller
// dropped for want of a ring: reported by the reader as PMCLOG_LOST.
static inline void ring_lose(struct ring *r)
{
    __asm__ volatile("addq $1, %0" : "+m"(r->lost)); // one instruction: NMI-safe
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
