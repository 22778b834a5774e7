// The log (see hwpmc/log.h): one lib/ring.h ring per CPU, written only by that
// CPU (the sampling interrupt, or process context and the switch path with
// interrupts off), drained by the log's owner under log_mutex. Every record
// of every mode goes here (lib/abi/pmclog.h: struct pmclog_*); the first read after the
// log is configured begins with a PMCLOG_INITIALIZE record, the time base.
//
// The writer reserves room for the largest record it may write (a sample with
// a full chain) and captures the chain in place, so a sample costs no copy.
// When there is no room the sample is lost: the CPU counts it in its ring, and
// the reader turns the count into a PMCLOG_LOST record after that CPU's
// records. So for every CPU, always: delivered = logged + lost.
//
// The rings are allocated by NtPmcConfigureLog, outside the interrupt path;
// the interrupt allocates nothing and takes no lock.
#include "pmc/hwpmc/log.h"

#include "lib/cmdline.h"
#include "lib/elf.h"
#include "lib/memlayout.h"
#include "lib/ring.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"

#include "core/grace.h"
#include "core/heap.h"
#include "core/mutex.h"
#include "core/process.h"
#include "core/ramdisk.h"
#include "core/smp.h"
#include "core/uaccess.h"

#include "pmc/hwpmc/callchain.h"
#include "pmc/hwpmc/kind_sampling.h"

struct log_cpu {
    struct ring ring;           // its lost count: samples without room
    uint64_t delivered, logged; // this CPU only
    uint64_t dropped;           // non-sample records without room
    uint64_t truncated, unreadable;
    uint32_t writes; // records pmc_log_write_irqoff wrote, an NMI's included
} __attribute__((aligned(64)));

static struct log_cpu logs[MAX_CPUS];
static struct mutex log_mutex = MUTEX_INIT("pmc log");
static struct process *log_owner; // NULL: no log (no reference: cleared when it exits)
static volatile bool log_ready;   // rings usable by writers
static unsigned log_users;        // running sampling PMCs (pmc_log_use)
static bool log_initialized;      // the PMCLOG_INITIALIZE record was read (log_mutex)
static uint32_t log_ring_bytes, log_depth = PMC_DEPTH_DEFAULT;
static uint32_t log_frames = PMC_DEPTH_DEFAULT + 1; // a chain's frames: log_depth and the IP

// Bytes reserved for a sample: the record with a full chain (log_depth frames
// and the IP). Kept with log_depth, so the interrupt computes nothing.
static uint32_t max_sample_bytes = sizeof(struct pmclog_sample) + 8u * (PMC_DEPTH_DEFAULT + 1);

// The chain is in r (how: callchain_capture's answer): publish the record.
// Its size, from the frames, is written here.
static inline void record_end(struct log_cpu *l, struct pmclog_sample *r, unsigned how)
{
    uint32_t size = (uint32_t)sizeof *r + 8u * r->nframes;
    r->h.size = size;
    if (__builtin_expect(how != 0, 0)) {
        r->flags |= PMCLOG_SAMPLE_TRUNC;
        l->truncated++;
        l->unreadable += (how & CALLCHAIN_UNREADABLE) != 0;
    }
    ring_commit(&l->ring, size);
}

_Static_assert(offsetof(struct pmclog_sample, h.tsc) == 8 &&
                   offsetof(struct pmclog_sample, flags) == 3 * 8 + 6 && PMCLOG_SAMPLE_USER == 1 &&
                   sizeof(struct pmclog_sample) == 5 * 8,
               "a sample's head is five words, the flags end the fourth");

// One sample of s's PMC: the head s keeps (pid, PMC, source, ...) copied, the
// time and the mode filled in, the chain captured in place.
static inline __attribute__((always_inline)) void log_sample(const struct pmc_sampler *s,
                                                             const struct intr_frame *f, bool user)
{
    struct log_cpu *l = s->log;
    l->delivered++;
    struct pmclog_sample *r =
        READ_ONCE(log_ready) ? ring_reserve(&l->ring, READ_ONCE(max_sample_bytes)) : NULL;
    if (!r) {
        ring_lose(&l->ring);
        return;
    }
    // The head's words but the time's, the user flag or'ed into its flags
    // (the last 16 bits of the fourth word, little-endian).
    uint64_t *w = (uint64_t *)r;
    w[0] = s->head[0];
    w[2] = s->head[2];
    w[3] = s->head[3] | (uint64_t)user << 48;
    w[4] = s->head[4];
    r->h.tsc = rdtsc();
    record_end(l, r, callchain_capture(f, user, s->chain, r, log_frames));
    l->logged++;
}

struct log_cpu *pmc_log_cpu(unsigned cpu)
{
    return &logs[cpu];
}

void pmc_log_sample(struct pmc_sampler *s, const struct intr_frame *f)
{
    bool user = intr_from_user(f);
    do {
        if (pmc_sampler_take(s, user))
            log_sample(s, f, user);
        s = s->next;
    } while (s);
}

// The record into room reserved for it, published.
static void log_put(struct log_cpu *l, unsigned cpu, void *dst, struct pmclog_header *rec,
                    uint32_t size)
{
    rec->cpu = (uint16_t)cpu;
    rec->size = size;
    rec->tsc = rdtsc();
    memcpy(dst, rec, size);
    ring_commit(&l->ring, size);
    __atomic_fetch_add(&l->writes, 1, __ATOMIC_RELAXED);
}

void pmc_log_offcpu(const struct pmclog_offcpu *head, bool chain, const struct intr_frame *f)
{
    struct log_cpu *l = &logs[head->h.cpu];
    if (!READ_ONCE(log_ready))
        return;
    struct pmclog_offcpu *r = ring_reserve(&l->ring, READ_ONCE(max_sample_bytes));
    if (!r) {
        l->dropped++;
        return;
    }
    *r = *head;
    r->h.tsc = rdtsc();
    // The same layout as a sample's (lib/abi/pmclog.h), so the same walk fills it.
    struct pmclog_sample *as_sample = (struct pmclog_sample *)r;
    unsigned how = f ? callchain_capture(f, false, chain, as_sample, log_frames)
                     : callchain_user_state(as_sample, log_frames, chain);
    if (how)
        r->flags |= PMCLOG_SAMPLE_TRUNC;
    r->h.size = (uint32_t)sizeof *r + 8u * r->nframes;
    ring_commit(&l->ring, r->h.size);
}

void pmc_log_write_irqoff(struct pmclog_header *rec, uint32_t size)
{
    unsigned cpu = cpu_id();
    struct log_cpu *l = &logs[cpu];
    if (!READ_ONCE(log_ready))
        return;
    void *dst = ring_reserve(&l->ring, size);
    if (!dst) {
        l->dropped++;
        return;
    }
    log_put(l, cpu, dst, rec, size);
}

uint32_t pmc_log_mark(void)
{
    uint32_t mark = __atomic_load_n(&logs[cpu_id()].writes, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); // before the caller reads its values
    return mark;
}

// The count of writes is read once the room is reserved: an NMI before that
// wrote its record first and is seen; one after it writes its record into
// the ring's side buffer, which the commit publishes after this one.
bool pmc_log_write_unchanged(struct pmclog_header *rec, uint32_t size, uint32_t mark)
{
    unsigned cpu = cpu_id();
    struct log_cpu *l = &logs[cpu];
    if (!READ_ONCE(log_ready))
        return true;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); // the caller's values read before
    void *dst = ring_reserve(&l->ring, size);
    if (!dst) {
        l->dropped++;
        return true;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST); // reserved (nest set) before writes is read
    if (__atomic_load_n(&l->writes, __ATOMIC_RELAXED) != mark) {
        ring_cancel(&l->ring);
        return false;
    }
    log_put(l, cpu, dst, rec, size);
    return true;
}

void pmc_log_write(struct pmclog_header *rec, uint32_t size)
{
    uint64_t f = irq_save();
    pmc_log_write_irqoff(rec, size);
    irq_restore(f);
}

// --- image records ---------------------------------------------------------------

static void elf_text_range(const uint8_t *data, size_t size, uint64_t *base, uint64_t *end)
{
    *base = *end = 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;
    if (size < sizeof *eh || eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > size ||
        (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > size - eh->e_phoff)
        return;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(data + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X) || !ph[i].p_memsz)
            continue;
        if (!*end || ph[i].p_vaddr < *base)
            *base = ph[i].p_vaddr;
        *end = MAX(*end, ph[i].p_vaddr + ph[i].p_memsz);
    }
}

static void write_map(uint32_t pid, uint32_t parent, const char *name, uint64_t base, uint64_t end)
{
    struct pmclog_map m = {.h.type = PMCLOG_MAP, .pid = pid, .parent = parent};
    m.base = base;
    m.end = end;
    memcpy(m.name, name, MIN(strlen(name), sizeof m.name - 1));
    pmc_log_write(&m.h, sizeof m);
}

void pmc_log_map_process(const struct process *p, const uint8_t *elf, size_t size)
{
    if (!READ_ONCE(log_ready))
        return;
    uint64_t base, end;
    elf_text_range(elf, size, &base, &end);
    write_map(p->pid, p->parent, p->name, base, end);
}

static void map_everything(void)
{
    write_map(0, 0, "kernel", (uint64_t)__kernel_start, (uint64_t)__text_end);
    static struct sys_process_info list[16]; // under log_mutex
    for (unsigned skip = 0;; skip += 16) {
        unsigned n = process_list(list, skip, 16);
        for (unsigned i = 0; i < n; i++) {
            if (list[i].state == PROC_ZOMBIE)
                continue;
            const struct ramdisk_file *f = ramdisk_find(list[i].name);
            uint64_t base = 0, end = 0;
            if (f)
                elf_text_range(f->data, f->size, &base, &end);
            write_map(list[i].pid, list[i].parent, list[i].name, base, end);
        }
        if (n < 16)
            break;
    }
}

// --- configuration ---------------------------------------------------------------

static void free_rings(void)
{
    WRITE_ONCE(log_ready, false);
    grace_wait(); // a writer is an interrupt handler: none is mid-record now
    for (unsigned i = 0; i < ncpus; i++) {
        kfree(logs[i].ring.buf);
        logs[i] = (struct log_cpu){0};
    }
}

static uint32_t default_ring_bytes(void)
{
    char v[16];
    if (cmdline_get("pmclog", v, sizeof v)) { // boot option pmclog=KB
        uint64_t kb = 0;
        for (const char *c = v; *c >= '0' && *c <= '9' && kb < (1u << 20); c++)
            kb = kb * 10 + (uint64_t)(*c - '0');
        uint64_t b = ALIGN_UP(kb * 1024, 4096);
        if (b >= PMC_LOG_RING_MIN && b <= PMC_LOG_RING_MAX)
            return (uint32_t)b;
    }
    return PMC_LOG_RING_DEFAULT;
}

NTSTATUS pmc_log_configure(struct process *owner, const struct pmc_log_config *cfg)
{
    uint32_t bytes = cfg->ring_bytes ? cfg->ring_bytes : default_ring_bytes();
    uint32_t depth = cfg->depth ? cfg->depth : PMC_DEPTH_DEFAULT;
    if (depth > PMC_DEPTH_MAX)
        return STATUS_PMC_BAD_DEPTH;
    uint32_t max_record = (uint32_t)sizeof(struct pmclog_sample) + 8u * (depth + 1);
    if (bytes % 4096 || bytes < PMC_LOG_RING_MIN || bytes > PMC_LOG_RING_MAX ||
        bytes < 2 * max_record)
        return STATUS_PMC_BAD_LOG_SIZE;
    mutex_lock(&log_mutex);
    NTSTATUS s = STATUS_SUCCESS;
    if (log_owner && log_owner != owner) {
        s = STATUS_PMC_LOG_BUSY;
    } else if (log_owner && log_users) {
        s = STATUS_PMC_LOG_IN_USE;
    } else {
        if (log_owner)
            free_rings();
        // Each ring, then the side buffer of a sample an NMI takes while its
        // CPU writes a record (lib/ring.h): as big as the largest sample.
        for (unsigned i = 0; i < ncpus && NT_SUCCESS(s); i++) {
            uint8_t *mem = kmalloc(bytes + max_record);
            ring_init(&logs[i].ring, mem, bytes, mem ? mem + bytes : NULL, max_record);
            if (!logs[i].ring.buf)
                s = STATUS_INSUFFICIENT_RESOURCES;
        }
        if (!NT_SUCCESS(s)) {
            free_rings();
            log_owner = NULL;
        } else {
            log_ring_bytes = bytes;
            log_depth = depth;
            log_frames = depth + 1;
            max_sample_bytes = (uint32_t)sizeof(struct pmclog_sample) + 8u * (depth + 1);
            log_owner = owner;
            log_initialized = false;
            __atomic_store_n(&log_ready, true, __ATOMIC_RELEASE);
            map_everything();
        }
    }
    mutex_unlock(&log_mutex);
    return s;
}

NTSTATUS pmc_log_release(struct process *owner)
{
    mutex_lock(&log_mutex);
    NTSTATUS s = STATUS_SUCCESS;
    if (log_owner != owner)
        s = log_owner ? STATUS_PMC_NOT_LOG_OWNER : STATUS_PMC_NO_LOG;
    else if (log_users)
        s = STATUS_PMC_LOG_IN_USE;
    else {
        free_rings();
        log_owner = NULL;
    }
    mutex_unlock(&log_mutex);
    return s;
}

// Called after the exiting process's handles (so its PMCs) are gone.
void pmc_log_process_gone(struct process *p)
{
    if (READ_ONCE(log_owner) != p)
        return;
    mutex_lock(&log_mutex);
    if (log_owner == p) {
        free_rings();
        log_owner = NULL;
    }
    mutex_unlock(&log_mutex);
}

NTSTATUS pmc_log_owner_status(const struct process *p)
{
    struct process *o = READ_ONCE(log_owner);
    return o == p ? STATUS_SUCCESS : o ? STATUS_PMC_NOT_LOG_OWNER : STATUS_PMC_NO_LOG;
}

NTSTATUS pmc_log_use(const struct process *p)
{
    mutex_lock(&log_mutex);
    NTSTATUS s = p && log_owner == p ? STATUS_SUCCESS : STATUS_PMC_NO_LOG;
    log_users += NT_SUCCESS(s);
    mutex_unlock(&log_mutex);
    return s;
}

void pmc_log_unuse(void)
{
    mutex_lock(&log_mutex);
    log_users--;
    mutex_unlock(&log_mutex);
}

uint32_t pmc_log_depth(void)
{
    return log_depth;
}

// --- reading ---------------------------------------------------------------------

// The log's first record: its version, CPUs and time base.
static NTSTATUS initialize_record(struct ring_sink *out)
{
    struct pmclog_initialize r = {.version = PMCLOG_VERSION, .ncpus = ncpus, .tsc_hz = tsc_hz};
    r.h = (struct pmclog_header){PMCLOG_INITIALIZE, (uint16_t)cpu_id(), sizeof r, rdtsc()};
    if (out->pos + sizeof r > out->len) {
        out->full = true;
        return STATUS_SUCCESS;
    }
    NTSTATUS s = out->copy(out->ctx, out->pos, &r, sizeof r);
    out->pos += NT_SUCCESS(s) ? sizeof r : 0;
    return s;
}

NTSTATUS pmc_log_read(struct process *reader, uint64_t ubuf, uint64_t len, size_t *got)
{
    mutex_lock(&log_mutex);
    *got = 0;
    if (log_owner != reader) {
        mutex_unlock(&log_mutex);
        return log_owner ? STATUS_PMC_NOT_LOG_OWNER : STATUS_PMC_NO_LOG;
    }
    NTSTATUS s = STATUS_SUCCESS;
    // The caller checked [ubuf, ubuf + len) (user_buffer_check).
    struct ring_sink out = {.copy = user_sink_copy, .ctx = (void *)(uintptr_t)ubuf, .len = len};
    if (!log_initialized) {
        s = initialize_record(&out);
        log_initialized = NT_SUCCESS(s) && !out.full;
    }
    for (unsigned cpu = 0; log_initialized && cpu < ncpus && NT_SUCCESS(s) && !out.full; cpu++) {
        struct ring *r = &logs[cpu].ring;
        s = ring_drain(r, &out);
        // Samples dropped so far on this CPU, after the records it did keep.
        if (NT_SUCCESS(s))
            s = ring_drain_lost(r, (uint16_t)cpu, rdtsc(), &out);
    }
    mutex_unlock(&log_mutex);
    *got = out.pos;
    if (NT_SUCCESS(s) && out.full && out.pos == 0)
        s = STATUS_BUFFER_TOO_SMALL; // not even one record fits
    return s;
}

NTSTATUS pmc_log_flush(struct process *caller)
{
    if (READ_ONCE(log_owner) != caller)
        return READ_ONCE(log_owner) ? STATUS_PMC_NOT_LOG_OWNER : STATUS_PMC_NO_LOG;
    grace_wait(); // every record begun before the call is published
    return STATUS_SUCCESS;
}

_Static_assert(PMC_STATS_CPUS >= MAX_CPUS, "struct pmc_driver_stats has a row for every CPU");

void pmc_log_stats(struct pmc_driver_stats *out)
{
    out->ncpus = ncpus;
    out->log_configured = READ_ONCE(log_ready);
    out->ring_bytes = log_ring_bytes;
    out->depth = log_depth;
    for (unsigned i = 0; i < ncpus; i++) {
        const struct log_cpu *l = &logs[i];
        out->chains_truncated += READ_ONCE(l->truncated);
        out->user_frames_unread += READ_ONCE(l->unreadable);
        out->records_dropped += READ_ONCE(l->dropped);
        if (i < PMC_STATS_CPUS) {
            out->cpu[i].delivered = READ_ONCE(l->delivered);
            out->cpu[i].logged = READ_ONCE(l->logged);
            out->cpu[i].lost = READ_ONCE(l->ring.lost);
        }
    }
}
