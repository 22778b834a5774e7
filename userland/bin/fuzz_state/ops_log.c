// The sample log: configure, release, flush, read, write, the driver's
// statistics; and the accounting of what was read against what the driver
// counted. Records are looked at through their header, and SAMPLE and LOST
// records through their bodies.
#include "fuzz_state.h"

#define RING_DEFAULT PMC_LOG_RING_DEFAULT // no pmclog= boot option in the fuzzer's boots

static struct pmc_log_config config;
static struct pmc_driver_stats dstats;

// A running sampling PMC holds the log, and so does a running counting one
// that writes switch or exit records into it.
bool log_sampling_running(const struct fuzzer *f)
{
    for (unsigned k = 0; k < NPMC; k++) {
        const struct pmc *m = &f->pmc[k];
        bool logs = !m->counting || (m->flags & (PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT));
        if (m->live && m->running && logs)
            return true;
    }
    return false;
}

// The status NtPmcConfigureLog's checks of the sizes give (docs/pmc-log.md),
// or STATUS_SUCCESS when they pass.
static NTSTATUS config_status(const struct pmc_log_config *c)
{
    uint64_t bytes = c->ring_bytes ? c->ring_bytes : RING_DEFAULT;
    uint64_t depth = c->depth ? c->depth : PMC_DEPTH_DEFAULT;
    if (depth > PMC_DEPTH_MAX)
        return STATUS_PMC_BAD_DEPTH;
    uint64_t max_record = sizeof(struct pmclog_sample) + 8 * (depth + 1);
    if (bytes % 4096 || bytes < PMC_LOG_RING_MIN || bytes > PMC_LOG_RING_MAX ||
        bytes < 2 * max_record)
        return STATUS_PMC_BAD_LOG_SIZE;
    return STATUS_SUCCESS;
}

void op_log_configure(struct fuzzer *f, const struct call *c)
{
    static const uint32_t rings[] = {0, 4096, 8192, 16384, 65536, 262144, 1u << 20, 12288};
    static const uint32_t depths[] = {0, 1, 8, 32, 128, 512, 3, 200};
    static const uint32_t bad_rings[] = {4095, PMC_LOG_RING_MAX + 4096, 4097, 1u << 31};
    static const uint32_t bad_depths[] = {PMC_DEPTH_MAX + 1, 0xFFFFFFFF, 1000, 513};
    config = (struct pmc_log_config){rings[c->variant % 8], depths[(c->variant >> 3) % 8]};
    uint64_t ptr = (uint64_t)&config;
    unsigned arg = c->mutate ? (c->mutate - 1) % 3 + 1 : 0;
    if (arg == 1) // (NULL would ask for the release)
        ptr = c->how % 6 == 0 ? 0xFFFFFFFF80100000ull : bad_in_pointer(f, c->how);
    else if (arg == 2)
        config.ring_bytes = bad_rings[c->how % 4];
    else if (arg == 3)
        config.depth = bad_depths[c->how % 4];
    NTSTATUS want = arg == 1 ? STATUS_ACCESS_VIOLATION : config_status(&config);
    if (want == STATUS_SUCCESS)
        want = f->log.owner && log_sampling_running(f) ? STATUS_PMC_LOG_IN_USE : NO_STATUS;
    NTSTATUS s = NtPmcConfigureLog((const struct pmc_log_config *)ptr);
    check(f, c->op, s, want, arg != 0);
    if (!f->log.owner && s == STATUS_PMC_LOG_IN_USE)
        fuzz_fail(f, FAIL_STATUS, "NtPmcConfigureLog: in use, but the log is not ours");
    if (f->log.owner && s == STATUS_PMC_LOG_BUSY)
        fuzz_fail(f, FAIL_STATUS, "NtPmcConfigureLog: busy, but the log is ours");
    if (s == STATUS_INSUFFICIENT_RESOURCES)
        f->log.owner = false; // the old rings are gone with the attempt
    if (!NT_SUCCESS(s))
        return;
    f->log = (struct logstate){.owner = true, .exact = true};
    f->log.depth = config.depth ? config.depth : PMC_DEPTH_DEFAULT;
}

void op_log_release(struct fuzzer *f, const struct call *c)
{
    NTSTATUS want = NO_STATUS;
    if (f->log.owner)
        want = log_sampling_running(f) ? STATUS_PMC_LOG_IN_USE : STATUS_SUCCESS;
    NTSTATUS s = NtPmcConfigureLog(NULL);
    check(f, c->op, s, want, !f->log.owner);
    if (NT_SUCCESS(s))
        f->log.owner = false;
}

void op_log_flush(struct fuzzer *f, const struct call *c)
{
    check(f, c->op, NtPmcFlushLog(), f->log.owner ? STATUS_SUCCESS : NO_STATUS, !f->log.owner);
}

void op_log_write(struct fuzzer *f, const struct call *c)
{
    NTSTATUS s = NtPmcWriteLog(c->v);
    check(f, c->op, s, f->log.owner ? STATUS_SUCCESS : NO_STATUS, !f->log.owner);
    if (NT_SUCCESS(s))
        f->log.user_written++;
}

static bool sample_ok(const struct fuzzer *f, const struct pmclog_sample *s)
{
    return s->h.size == sizeof *s + 8u * s->nframes && s->nkernel <= s->nframes &&
           s->nframes >= 1 && s->nframes <= f->log.depth + 1 && s->source < ProfileSourceCount;
}

// got bytes NtPmcReadLog handed out: whole records, each checked and counted.
static void parse_log(struct fuzzer *f, const uint8_t *buf, size_t got)
{
    size_t pos = 0;
    while (pos < got) {
        const struct pmclog_header *h = (const void *)(buf + pos);
        if (got - pos < sizeof *h || h->size < sizeof *h || h->size % 8 || h->size > got - pos ||
            h->type == 0 || h->cpu >= f->ncpus) {
            fuzz_fail(f, FAIL_LOG_RECORD, "log record at %lu of %lu: type %u, size %u, cpu %u", pos,
                      got, got - pos >= sizeof *h ? h->type : 0,
                      got - pos >= sizeof *h ? h->size : 0, got - pos >= sizeof *h ? h->cpu : 0);
            f->log.exact = false;
            return;
        }
        if (h->type == PMCLOG_SAMPLE && !sample_ok(f, (const struct pmclog_sample *)h))
            fuzz_fail(f, FAIL_LOG_RECORD, "a sample of %u bytes with %u frames (%u kernel)",
                      h->size, ((const struct pmclog_sample *)h)->nframes,
                      ((const struct pmclog_sample *)h)->nkernel);
        if (h->type == PMCLOG_LOST &&
            (h->size != sizeof(struct pmclog_lost) || !((const struct pmclog_lost *)h)->count))
            fuzz_fail(f, FAIL_LOG_RECORD, "a lost record of %u bytes counting %lu", h->size,
                      ((const struct pmclog_lost *)h)->count);
        f->log.samples += h->type == PMCLOG_SAMPLE;
        f->log.lost += h->type == PMCLOG_LOST ? ((const struct pmclog_lost *)h)->count : 0;
        f->log.user_read += h->type == PMCLOG_USER;
        pos += h->size;
    }
}

void op_log_read(struct fuzzer *f, const struct call *c)
{
    static const size_t lens[] = {8, 64, 4096, LOG_BYTES};
    static size_t got;
    uint8_t *buf = f->logbuf;
    size_t len = lens[c->variant % 4];
    uint64_t ptr = (uint64_t)buf, gotp = (uint64_t)&got;
    NTSTATUS want = NO_STATUS;
    unsigned arg = c->mutate ? (c->mutate - 1) % 2 + 1 : 0;
    if (arg == 1 && c->how % 3 == 0) { // into the page after the buffer: cut short
        buf = f->logbuf + LOG_BYTES - 4096;
        ptr = (uint64_t)buf;
        len = 8192;
    } else if (arg == 1) {
        ptr = c->how % 3 == 1 ? 0xFFFFFFFF80100000ull : 0x0000800000000000ull;
        want = STATUS_ACCESS_VIOLATION; // the range is checked before the log
    } else if (arg == 2) {
        gotp = bad_pointer(f, c->how);
        want = STATUS_ACCESS_VIOLATION; // probed first
    }
    got = 0;
    NTSTATUS s = NtPmcReadLog((void *)ptr, len, (size_t *)gotp);
    check(f, c->op, s, want, !f->log.owner);
    if (gotp != (uint64_t)&got)
        return;
    if (got > len || (got && !f->log.owner))
        fuzz_fail(f, FAIL_LOG_RECORD, "NtPmcReadLog gave %lu bytes for %lu (owner %d)", got, len,
                  f->log.owner);
    else if (ptr == (uint64_t)buf)
        parse_log(f, buf, got);
}

// Per CPU, always: delivered = logged + lost, once nothing samples.
static void stats_invariant(struct fuzzer *f, const struct pmc_driver_stats *st)
{
    if (!f->log.owner || log_sampling_running(f))
        return;
    if (!st->log_configured)
        fuzz_fail(f, FAIL_LOG_STATS, "our log is configured, the driver says it is not");
    for (unsigned i = 0; i < st->ncpus && i < PMC_STATS_CPUS; i++)
        if (st->cpu[i].delivered != st->cpu[i].logged + st->cpu[i].lost)
            fuzz_fail(f, FAIL_LOG_STATS, "cpu%u: delivered %lu != logged %lu + lost %lu", i,
                      st->cpu[i].delivered, st->cpu[i].logged, st->cpu[i].lost);
}

void op_log_stats(struct fuzzer *f, const struct call *c)
{
    uint64_t out = c->mutate ? bad_pointer(f, c->how) : (uint64_t)&dstats;
    NTSTATUS s = NtPmcGetDriverStats((struct pmc_driver_stats *)out);
    check(f, c->op, s, c->mutate ? STATUS_ACCESS_VIOLATION : STATUS_SUCCESS, false);
    if (NT_SUCCESS(s) && !c->mutate)
        stats_invariant(f, &dstats);
}

// The records read since the configuration against the driver's counts.
static void log_totals(struct fuzzer *f, const struct pmc_driver_stats *st)
{
    uint64_t logged = 0, lost = 0;
    for (unsigned i = 0; i < st->ncpus && i < PMC_STATS_CPUS; i++) {
        logged += st->cpu[i].logged;
        lost += st->cpu[i].lost;
    }
    if (logged != f->log.samples || lost != f->log.lost)
        fuzz_fail(f, FAIL_LOG_COUNT,
                  "read %lu samples and %lu lost; the driver logged %lu, lost %lu", f->log.samples,
                  f->log.lost, logged, lost);
    if (f->log.user_read > f->log.user_written ||
        f->log.user_written > f->log.user_read + st->records_dropped)
        fuzz_fail(f, FAIL_LOG_COUNT, "%lu user records written, %lu read, %lu records dropped",
                  f->log.user_written, f->log.user_read, st->records_dropped);
}

// The end of a sequence, nothing sampling: every record read, the counts
// checked, the log released.
void log_drain_and_check(struct fuzzer *f)
{
    if (!f->log.owner)
        return;
    check(f, OP_LOG_FLUSH, NtPmcFlushLog(), STATUS_SUCCESS, false);
    size_t got = 1;
    for (unsigned i = 0; i < 4096 && got; i++) {
        got = 0;
        NTSTATUS s = NtPmcReadLog(f->logbuf, LOG_BYTES, &got);
        check(f, OP_LOG_READ, s, STATUS_SUCCESS, false);
        parse_log(f, f->logbuf, got);
    }
    NTSTATUS s = NtPmcGetDriverStats(&dstats);
    check(f, OP_LOG_STATS, s, STATUS_SUCCESS, false);
    if (NT_SUCCESS(s)) {
        stats_invariant(f, &dstats);
        if (f->log.exact)
            log_totals(f, &dstats);
        f->log_samples += f->log.samples;
    }
    check(f, OP_LOG_RELEASE, NtPmcConfigureLog(NULL), STATUS_SUCCESS, false);
    f->log.owner = false;
}
