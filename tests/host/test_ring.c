// The per-CPU record ring (kernel/lib/ring.h): one writer, one reader, here
// taking turns on one thread, which is what each side sees in the kernel.
#include <stdlib.h>
#include <string.h>
#include "lib/ring.h"
#include "harness.h"

#define T_REC 0x7777 // the records these tests write: a header and a sequence number

struct t_rec {
    struct pmclog_header h;
    uint64_t seq;
    uint64_t fill[]; // up to the record's size
};

// A writer: one record of size bytes (reserving max) numbered seq, or a loss.
// Keeps the delivered/logged count the sample log keeps.
static uint64_t delivered, logged;

static bool put(struct ring *r, uint32_t size, uint32_t max, uint64_t seq)
{
    delivered++;
    struct t_rec *w = ring_reserve(r, max);
    if (!w) {
        ring_lose(r);
        return false;
    }
    w->h = (struct pmclog_header){.type = T_REC, .cpu = 3, .size = size, .tsc = seq};
    w->seq = seq;
    for (uint32_t i = 0; i < (size - sizeof *w) / 8; i++)
        w->fill[i] = seq ^ i;
    ring_commit(r, size);
    logged++;
    return true;
}

// Records 1..n of size bytes each, reserving what they use.
static void fill(struct ring *r, uint64_t n, uint32_t size)
{
    for (uint64_t seq = 1; seq <= n; seq++)
        put(r, size, size, seq);
}

// A reader's destination: memory, with a copy that fails at byte fail_at.
static uint8_t out[4096];
static uint64_t fail_at = UINT64_MAX;
static unsigned copies;

static NTSTATUS copy_mem(void *ctx, uint64_t pos, const void *rec, uint32_t size)
{
    copies++;
    if (pos >= fail_at)
        return STATUS_ACCESS_VIOLATION;
    memcpy((uint8_t *)ctx + pos, rec, size);
    return STATUS_SUCCESS;
}

static struct ring_sink sink(uint64_t len)
{
    return (struct ring_sink){.copy = copy_mem, .ctx = out, .len = len};
}

// The records in out[0, len): returns how many; *ok says whether each is
// whole (a header, an intact body) and numbered above the one before.
static unsigned walk(uint64_t len, uint64_t *first_seq, uint64_t *last_seq, bool *ok)
{
    unsigned n = 0;
    *ok = true;
    for (uint64_t pos = 0; pos < len;) {
        const struct t_rec *w = (const void *)(out + pos);
        if (w->h.size < sizeof w->h || w->h.size % 8 || pos + w->h.size > len) {
            *ok = false;
            break;
        }
        if (w->h.type == T_REC) {
            for (uint32_t i = 0; i < (w->h.size - sizeof *w) / 8; i++)
                *ok = *ok && w->fill[i] == (w->seq ^ i);
            *ok = *ok && w->h.tsc == w->seq && (n == 0 || w->seq > *last_seq);
            if (n == 0)
                *first_seq = w->seq;
            *last_seq = w->seq;
            n++;
        }
        pos += w->h.size;
    }
    return n;
}

// Whether out[0, len) holds n whole records, numbered first to last in order.
static bool holds(uint64_t len, unsigned n, uint64_t first, uint64_t last)
{
    uint64_t f = 0, l = 0;
    bool ok;
    return walk(len, &f, &l, &ok) == n && ok && f == first && l == last;
}

static void check_wrap_pad(void)
{
    static uint64_t mem[128 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, NULL, 0);
    CHECK(put(&r, 40, 40, 1) && put(&r, 40, 40, 2) && put(&r, 40, 40, 3),
          "ring: three 40-byte records fill 120 of 128 bytes");
    struct ring_sink s = sink(80); // room for two
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && s.pos == 80 && s.full,
          "ring: a drain stops at a record that does not fit, marked full");
    CHECK(r.tail == 80, "ring: the tail passed the two records handed out");
    void *w = ring_reserve(&r, 40);
    struct {
        uint16_t type, cpu;
        uint32_t size;
    } pad; // the header's first 8 bytes: all there is room for
    memcpy(&pad, (uint8_t *)mem + 120, sizeof pad);
    CHECK(w == (void *)mem && pad.type == RING_PAD && pad.size == 8 && r.head == 128 && r.off == 0,
          "ring: 8 bytes before the end: a pad fills them, the record starts at 0");
    struct t_rec *t = w;
    t->h = (struct pmclog_header){.type = T_REC, .size = 40, .tsc = 4};
    t->seq = 4;
    for (int i = 0; i < 2; i++)
        t->fill[i] = 4 ^ (uint64_t)i;
    ring_commit(&r, 40);
    s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && !s.full && s.pos == 80 && holds(s.pos, 2, 3, 4),
          "ring: the drain skips the pad: records 3, then 4 from the start");
    CHECK(r.tail == r.head && r.head == 168, "ring: empty after the drain, pad counted in head");
}

// 48 bytes free, 8 of them at the end: a 48-byte record would need the pad's
// 8 and 48 from the start, where record 2 still waits to be read.
static void check_wrap_needs_room(void)
{
    static uint64_t mem[128 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, NULL, 0);
    fill(&r, 3, 40);
    struct ring_sink s = sink(40);
    ring_drain(&r, &s);
    CHECK(r.head - r.tail == 80 && !put(&r, 48, 48, 4) && r.head == 120 && r.lost == 1,
          "ring: no room for the pad and the record: lost, and no pad written");
    CHECK(put(&r, 40, 40, 5) && r.head == 168,
          "ring: a 40-byte record fits (8 of pad, 40 from the start)");
    s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && holds(s.pos, 3, 2, 5),
          "ring: records 2, 3 and 5 intact");
}

static void check_full_loses(void)
{
    static uint64_t mem[256 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, NULL, 0);
    delivered = logged = 0;
    unsigned kept = 0;
    for (uint64_t seq = 1; seq <= 10; seq++)
        kept += put(&r, 48, 48, seq);
    CHECK(kept == 5 && logged == 5 && r.lost == 5,
          "ring: a 256-byte ring keeps five 48-byte records; the next five are lost and counted");
    CHECK(delivered == logged + r.lost, "ring: delivered = logged + lost (%lu = %lu + %lu)",
          (unsigned long)delivered, (unsigned long)logged, (unsigned long)r.lost);
    struct ring_sink s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && s.pos == 5 * 48 && holds(s.pos, 5, 1, 5),
          "ring: a full ring keeps the oldest records (1-5): the new ones were lost");
    CHECK(ring_drain_lost(&r, 3, 99, &s) == STATUS_SUCCESS && s.pos == 5 * 48 + 24,
          "ring: the lost count becomes one record after them");
    const struct pmclog_lost *l = (const void *)(out + 5 * 48);
    CHECK(l->h.type == PMCLOG_LOST && l->h.cpu == 3 && l->h.size == sizeof *l && l->h.tsc == 99 &&
              l->count == 5,
          "ring: PMCLOG_LOST of cpu 3 at tsc 99, count 5");
    uint64_t first, last;
    bool ok;
    uint64_t logged_in_log = walk(5 * 48, &first, &last, &ok);
    CHECK(delivered == logged_in_log + l->count,
          "ring: delivered = records in the log + the LOST record's count");
    s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS &&
              ring_drain_lost(&r, 3, 100, &s) == STATUS_SUCCESS && s.pos == 0,
          "ring: the next drain has nothing: no record, the loss reported once");
    CHECK(put(&r, 48, 48, 11), "ring: drained, it takes records again");
    ring_init(&r, NULL, 0, NULL, 0);
    CHECK(!put(&r, 16, 16, 1) && r.lost == 1, "ring: a ring with no memory loses every record");
}

static void check_order_across_wraps(void)
{
    static uint64_t mem[512 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, NULL, 0);
    // Sizes 24..120 (not dividing 512), reserving 120 each, drained every one
    // to three records (so there is always room): the head crosses the end
    // many times, each time with a pad.
    uint64_t seq = 1, next_expected = 1, pads = 0;
    bool in_order = true, all_kept = true;
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 1 + round % 3; i++) {
            uint32_t size = 24 + 8 * (uint32_t)((seq * 7) % 13);
            uint64_t head = r.head;
            all_kept = all_kept && put(&r, size, 120, seq++);
            pads += r.head - head != size;
        }
        struct ring_sink s = sink(sizeof out);
        uint64_t first = 0, last = 0;
        bool ok;
        unsigned n;
        in_order = in_order && ring_drain(&r, &s) == STATUS_SUCCESS &&
                   (n = walk(s.pos, &first, &last, &ok)) > 0 && ok && first == next_expected &&
                   n == last - first + 1;
        next_expected = last + 1;
    }
    CHECK(all_kept && r.lost == 0, "ring: drained often enough, nothing is lost");
    CHECK(in_order && next_expected == seq,
          "ring: %lu records drained whole and in order across %lu wraps", (unsigned long)(seq - 1),
          (unsigned long)pads);
    CHECK(pads > 10, "ring: the test did wrap (%lu pads)", (unsigned long)pads);
}

static void check_failed_copy(void)
{
    static uint64_t mem[1024 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, NULL, 0);
    fill(&r, 6, 32);
    r.lost = 2;       // as if two had been lost
    fail_at = 3 * 32; // the fourth record's copy faults
    struct ring_sink s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_ACCESS_VIOLATION && s.pos == 3 * 32 && r.tail == 3 * 32,
          "ring: a copy that fails stops the drain with its status, after three records");
    fail_at = UINT64_MAX;
    s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && holds(s.pos, 3, 4, 6),
          "ring: the next drain starts at the record whose copy failed (4-6)");
    fail_at = s.pos; // the LOST record's copy faults
    CHECK(ring_drain_lost(&r, 0, 1, &s) == STATUS_ACCESS_VIOLATION && r.lost_reported == 0,
          "ring: a LOST record that could not be copied leaves the count pending");
    fail_at = UINT64_MAX;
    s = sink(sizeof out);
    const struct pmclog_lost *l = (const void *)out;
    CHECK(ring_drain_lost(&r, 0, 2, &s) == STATUS_SUCCESS && s.pos == sizeof *l && l->count == 2 &&
              r.lost_reported == 2,
          "ring: ... and the next drain reports it");
}

static void check_max_size(void)
{
    static uint64_t mem[4096 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, NULL, 0);
    const uint32_t max = 2048; // the ring holds two of the largest records
    CHECK(put(&r, max, max, 1) && put(&r, max, max, 2) && !put(&r, 16, 16, 3),
          "ring: two records of max size fill it; a third record is lost");
    struct ring_sink s = sink(max - 8);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && s.full && s.pos == 0 && r.tail == 0,
          "ring: a destination smaller than a record takes nothing (full, pos 0)");
    s = sink(max);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && s.full && s.pos == max && r.tail == max,
          "ring: a destination of one max record takes exactly one");
    CHECK(ring_drain_lost(&r, 0, 0, &s) == STATUS_SUCCESS && s.pos == max && r.lost_reported == 0,
          "ring: the LOST record waits while the destination is full");
    CHECK(put(&r, 40, max, 4),
          "ring: reserving max, committing 40 bytes (a short chain), once max is free");
    CHECK(!put(&r, 40, max, 5), "ring: max is not free after those 40 bytes: lost");
    s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && holds(s.pos, 2, 2, 4) &&
              ring_drain_lost(&r, 5, 0, &s) == STATUS_SUCCESS && s.pos == max + 40 + 24,
          "ring: the drain hands out record 2 (max bytes), record 4 (40), then a LOST record");
    const struct pmclog_lost *l = (const void *)(out + max + 40);
    CHECK(l->h.type == PMCLOG_LOST && l->count == 2 && l->h.cpu == 5,
          "ring: the LOST record of cpu 5 counts records 3 and 5");
}

static void check_clear(void)
{
    static uint64_t mem[256 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, NULL, 0);
    fill(&r, 8, 64);
    ring_clear(&r);
    struct ring_sink s = sink(sizeof out);
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && ring_drain_lost(&r, 0, 0, &s) == STATUS_SUCCESS &&
              s.pos == 0 && copies == 0,
          "ring: cleared, it hands out no record and no lost count");
    CHECK(put(&r, 64, 64, 9) && ring_drain(&r, &s) == STATUS_SUCCESS && s.pos == 64,
          "ring: ... and takes new records");
}

// An NMI that writes a record while its CPU is between ring_reserve and
// ring_commit of the same ring (the put inside `outer`): its record waits in
// the side buffer and follows the interrupted one; a second NMI during the
// same write finds the side buffer taken and is lost; nothing is torn, and
// delivered = logged + lost.
static struct t_rec *outer_begin(struct ring *r, uint32_t max, uint64_t seq)
{
    delivered++;
    struct t_rec *w = ring_reserve(r, max);
    if (w) {
        w->h = (struct pmclog_header){.type = T_REC, .cpu = 3, .size = 24, .tsc = seq};
        w->seq = seq;
    }
    return w;
}

static void outer_end(struct ring *r)
{
    ring_commit(r, 24);
    logged++;
}

static void check_nmi_between_reserve_and_commit(void)
{
    static uint64_t mem[256 / 8], side[64 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, side, sizeof side);
    delivered = logged = 0;
    put(&r, 40, 40, 1);
    struct t_rec *o = outer_begin(&r, 64, 2); // reserves 64, will use 24
    bool nmi1 = put(&r, 32, 32, 3);           // an NMI lands here
    bool nmi2 = put(&r, 32, 32, 4);           // and another one, same write
    CHECK(o && nmi1 && !nmi2 && r.head == 40 && r.lost == 1,
          "ring: an NMI's record during a write waits; a second one is lost");
    outer_end(&r);
    CHECK(r.head == 40 + 24 + 32 && r.nest == 0 && r.side_bytes == 0,
          "ring: the interrupted commit publishes its record and the NMI's after it");
    CHECK(put(&r, 24, 24, 5), "ring: the next write goes straight into the ring");
    struct ring_sink s = sink(sizeof out);
    uint64_t first = 0, last = 0;
    bool ok;
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && walk(s.pos, &first, &last, &ok) == 4 && ok &&
              first == 1 && last == 5 && delivered == logged + r.lost,
          "ring: records 1, 2, 3, 5 whole and in order; delivered = logged + lost");

    // Near the end: the interrupted record wraps (a pad first), the NMI's
    // follows it from the start.
    while (r.off + 64 <= r.size - 8)
        put(&r, 24, 24, ++last + 100);
    s = sink(sizeof out);
    ring_drain(&r, &s);
    uint64_t seq = last + 200;
    o = outer_begin(&r, 64, seq);
    bool nmi = put(&r, 32, 32, seq + 1);
    outer_end(&r);
    s = sink(sizeof out);
    CHECK(o && nmi && ring_drain(&r, &s) == STATUS_SUCCESS &&
              walk(s.pos, &first, &last, &ok) == 2 && ok && first == seq && last == seq + 1 &&
              delivered == logged + r.lost,
          "ring: across the end too: pad, the interrupted record, then the NMI's");

    // A reservation that fails with an NMI's record pending still publishes it.
    static uint64_t small[128 / 8];
    ring_init(&r, small, sizeof small, side, sizeof side);
    put(&r, 96, 96, 1);
    CHECK(r.nest == 0 && !ring_reserve(&r, 64) && r.nest == 0,
          "ring: a reservation without room leaves nobody writing");
}

// A writer that gives its room back (ring_cancel) after an NMI wrote a
// record during its reservation: the NMI's record is published alone, and
// the writer's next reservation goes after it.
static void check_cancel(void)
{
    static uint64_t mem[256 / 8], side[64 / 8];
    struct ring r;
    ring_init(&r, mem, sizeof mem, side, sizeof side);
    delivered = logged = 0;
    put(&r, 24, 24, 1);
    CHECK(ring_reserve(&r, 64) != NULL, "ring cancel: a reservation");
    bool nmi = put(&r, 32, 32, 2); // an NMI lands here
    ring_cancel(&r);
    CHECK(nmi && r.head == 24 + 32 && r.nest == 0 && r.side_bytes == 0,
          "ring cancel: the room given back, the NMI's record published");
    CHECK(put(&r, 24, 24, 3), "ring cancel: the record written again, after it");
    struct ring_sink s = sink(sizeof out);
    uint64_t first = 0, last = 0;
    bool ok;
    CHECK(ring_drain(&r, &s) == STATUS_SUCCESS && walk(s.pos, &first, &last, &ok) == 3 && ok &&
              first == 1 && last == 3 && delivered == logged + r.lost,
          "ring cancel: records 1, 2, 3 whole and in order");
}

void test_ring(void)
{
    check_wrap_pad();
    check_wrap_needs_room();
    check_full_loses();
    check_order_across_wraps();
    check_failed_copy();
    check_max_size();
    copies = 0;
    check_clear();
    check_nmi_between_reserve_and_commit();
    check_cancel();
}
