// The logs (see hwpmc/log.h): one per owning process, PMC_LOGS_MAX slots on
// the machine. A log is one lib/ring.h ring per CPU, written only by that CPU
// (the sampling interrupt, or process context and the switch path with
// interrupts off), drained by its owner. Every record of a PMC or logger goes
// to its owner's log (lib/abi/pmclog.h: struct pmclog_*); the first read
// after a log is configured begins with a PMCLOG_INITIALIZE record, the time
// base.
//
// The writer reserves room for the largest record it may write (a sample with
// a full chain) and captures the chain in place, so a sample costs no copy.
// When there is no room the sample is lost: the CPU counts it in its ring, and
// the reader turns the count into a PMCLOG_LOST record after that CPU's
// records. So for every log and CPU, always: delivered = logged + lost.
//
// The rings are allocated by NtPmcConfigureLog, outside the interrupt path;
// the interrupt allocates nothing and takes no lock. A writer reaches a log
// only through a use of it (pmc_log_use: a running PMC, a logger) or with
// log_mutex held (image records), and a log is freed only when it has no use
// left, after a grace period; so no writer checks whether its log exists.
// Whose log is whose is found by its owner alone, in its own thread (one
// thread a process): nobody else can resize, release or read it meanwhile.
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
#include "core/sysmap.h"
#include "core/uaccess.h"

#include "pmc/hwpmc/callchain.h"

struct log_cpu {
    struct ring ring; // its lost count: samples without room
    // The log's largest sample and a chain's frames (its depth and the IP),
    // kept beside the ring for the interrupt.
    uint32_t max_sample_bytes, frames;
    uint64_t delivered, logged; // this CPU only
    uint64_t dropped;           // non-sample records without room
    uint64_t truncated, unreadable;
    uint32_t writes; // records pmc_log_write_irqoff wrote, an NMI's included
} __attribute__((aligned(64)));

// A slot: free while cpu is NULL. Its owner is NULL once the owner exited
// while a writer still used it (a logger: the exit stops those after the
// log is gone), until the last unuse frees it.
struct pmc_log {
    struct process *owner; // no reference: cleared when it exits
    struct log_cpu *cpu;   // [ncpus], in mem; NULL: a free slot
    void *mem;
    unsigned users;   // running PMCs and loggers writing it (pmc_log_use)
    bool privileged;  // its owner's privilege: unprivileged ones share PMC_LOG_UNPRIVILEGED_BYTES
    bool initialized; // the PMCLOG_INITIALIZE record was read (its owner's)
    uint32_t ring_bytes, depth;
};

static struct pmc_log logs[PMC_LOGS_MAX];
static struct mutex log_mutex = MUTEX_INIT("pmc logs"); // the slots, their users
static unsigned nlogs;                                  // slots taken (log_mutex; read without it)
static uint64_t unprivileged_bytes; // per CPU, the unprivileged logs' rings (log_mutex)

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
    struct log_cpu *l = s->log; // a running PMC's: its log is in use
    l->delivered++;
    struct pmclog_sample *r = ring_reserve(&l->ring, l->max_sample_bytes);
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
    record_end(l, r, callchain_capture(f, user, s->chain, r, l->frames));
    l->logged++;
}

struct log_cpu *pmc_log_cpu(struct pmc_log *log, unsigned cpu)
{
    return &log->cpu[cpu];
}

void pmc_log_sample(void *samplers, const struct intr_frame *f)
{
    struct pmc_sampler *s = samplers;
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

void pmc_log_offcpu(struct pmc_log *log, const struct pmclog_offcpu *head, bool chain,
                    const struct intr_frame *f)
{
    struct log_cpu *l = &log->cpu[head->h.cpu];
    struct pmclog_offcpu *r = ring_reserve(&l->ring, l->max_sample_bytes);
    if (!r) {
        l->dropped++;
        return;
    }
    *r = *head;
    r->h.tsc = rdtsc();
    // The same layout as a sample's (lib/abi/pmclog.h), so the same walk fills it.
    struct pmclog_sample *as_sample = (struct pmclog_sample *)r;
    unsigned how = f ? callchain_capture(f, false, chain, as_sample, l->frames)
                     : callchain_user_state(as_sample, l->frames, chain);
    if (how)
        r->flags |= PMCLOG_SAMPLE_TRUNC;
    r->h.size = (uint32_t)sizeof *r + 8u * r->nframes;
    ring_commit(&l->ring, r->h.size);
}

void pmc_log_write_irqoff(struct pmc_log *log, struct pmclog_header *rec, uint32_t size)
{
    unsigned cpu = cpu_id();
    struct log_cpu *l = &log->cpu[cpu];
    void *dst = ring_reserve(&l->ring, size);
    if (!dst) {
        l->dropped++;
        return;
    }
    log_put(l, cpu, dst, rec, size);
}

uint32_t pmc_log_mark(struct pmc_log *log)
{
    uint32_t mark = __atomic_load_n(&log->cpu[cpu_id()].writes, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); // before the caller reads its values
    return mark;
}

// The count of writes is read once the room is reserved: an NMI before that
// wrote its record first and is seen; one after it writes its record into
// the ring's side buffer, which the commit publishes after this one.
bool pmc_log_write_unchanged(struct pmc_log *log, struct pmclog_header *rec, uint32_t size,
                             uint32_t mark)
{
    unsigned cpu = cpu_id();
    struct log_cpu *l = &log->cpu[cpu];
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

// From process context.
static void log_write(struct pmc_log *log, struct pmclog_header *rec, uint32_t size)
{
    uint64_t f = irq_save();
    pmc_log_write_irqoff(log, rec, size);
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

static void write_map(struct pmc_log *log, uint32_t pid, uint32_t parent, const char *name,
                      uint64_t base, uint64_t end)
{
    struct pmclog_map m = {.h.type = PMCLOG_MAP, .pid = pid, .parent = parent};
    m.base = base;
    m.end = end;
    memcpy(m.name, name, MIN(strlen(name), sizeof m.name - 1));
    log_write(log, &m.h, sizeof m);
}

void pmc_log_map_process(const struct process *p, const uint8_t *elf, size_t size)
{
    if (!READ_ONCE(nlogs))
        return;
    uint64_t base, end;
    elf_text_range(elf, size, &base, &end);
    mutex_lock(&log_mutex); // no log is freed meanwhile
    for (unsigned i = 0; i < PMC_LOGS_MAX; i++)
        if (logs[i].owner)
            write_map(&logs[i], p->pid, p->parent, p->name, base, end);
    mutex_unlock(&log_mutex);
}

static void map_everything(struct pmc_log *log)
{
    write_map(log, 0, 0, "kernel", (uint64_t)__kernel_start, (uint64_t)__text_end);
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
            write_map(log, list[i].pid, list[i].parent, list[i].name, base, end);
        }
        if (n < 16)
            break;
    }
}

// --- configuration ---------------------------------------------------------------

// p's log, or NULL. Without log_mutex only from p's own thread: only that
// thread puts p into a slot or takes it out (configure, release, exit).
static struct pmc_log *log_of(const struct process *p)
{
    for (unsigned i = 0; p && i < PMC_LOGS_MAX; i++)
        if (READ_ONCE(logs[i].owner) == p)
            return &logs[i];
    return NULL;
}

// The largest sample of a depth: the record with its frames and the IP.
static uint32_t sample_bytes(uint32_t depth)
{
    return (uint32_t)sizeof(struct pmclog_sample) + 8u * (depth + 1);
}

// The pages of one CPU's ring of bytes and its side buffer of side bytes.
static uint64_t ring_pages(uint32_t bytes, uint32_t side)
{
    return ALIGN_UP((uint64_t)bytes + side, PAGE_SIZE) / PAGE_SIZE;
}

// The slot's rings and counts freed (log_mutex held; no use of it is left,
// so no writer can begin): the slot is free.
static void free_rings(struct pmc_log *log)
{
    // A writer is an interrupt handler or runs with interrupts off: after a
    // grace period none is mid-record.
    grace_wait();
    for (unsigned i = 0; log->cpu && i < ncpus; i++) {
        struct ring *r = &log->cpu[i].ring;
        if (r->buf)
            sysmap_free(r->buf, ring_pages(r->size, r->side_size));
    }
    kfree(log->mem);
    if (log->ring_bytes) { // it was counted
        WRITE_ONCE(nlogs, nlogs - 1);
        unprivileged_bytes -= log->privileged ? 0 : log->ring_bytes;
    }
    *log = (struct pmc_log){0};
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

static NTSTATUS check_config(const struct pmc_log_config *cfg, uint32_t *bytes, uint32_t *depth)
{
    *bytes = cfg->ring_bytes ? cfg->ring_bytes : default_ring_bytes();
    *depth = cfg->depth ? cfg->depth : PMC_DEPTH_DEFAULT;
    if (*depth > PMC_DEPTH_MAX)
        return STATUS_PMC_BAD_DEPTH;
    if (*bytes % 4096 || *bytes < PMC_LOG_RING_MIN || *bytes > PMC_LOG_RING_MAX ||
        *bytes < 2 * sample_bytes(*depth))
        return STATUS_PMC_BAD_LOG_SIZE;
    return STATUS_SUCCESS;
}

// Whether p may have a log of bytes per CPU, replacing old (its log, or
// NULL: a new slot): a slot for it, and, without the privilege, at most
// PMC_LOGS_UNPRIVILEGED slots and PMC_LOG_UNPRIVILEGED_BYTES per CPU for the
// unprivileged together, so that a privileged process always finds a log,
// and rings that leave the privileged reserve of memory free
// (STATUS_COMMITMENT_LIMIT), so that it finds the memory for one too.
static NTSTATUS admit(const struct process *p, const struct pmc_log *old, uint32_t bytes,
                      uint32_t depth)
{
    unsigned unprivileged = 0;
    for (unsigned i = 0; i < PMC_LOGS_MAX; i++)
        unprivileged += logs[i].cpu && !logs[i].privileged;
    if (!old && nlogs == PMC_LOGS_MAX)
        return STATUS_PMC_TOO_MANY_LOGS;
    if (p->privileged)
        return STATUS_SUCCESS;
    if (!old && unprivileged >= PMC_LOGS_UNPRIVILEGED)
        return STATUS_PMC_TOO_MANY_LOGS;
    uint64_t others = unprivileged_bytes - (old && !old->privileged ? old->ring_bytes : 0);
    if (others + bytes > PMC_LOG_UNPRIVILEGED_BYTES)
        return STATUS_PMC_LOG_QUOTA;
    uint64_t pages = ncpus * ring_pages(bytes, sample_bytes(depth));
    return as_reserve_admits(&p->as, pages) ? STATUS_SUCCESS : STATUS_COMMITMENT_LIMIT;
}

// Each CPU's part, 64-byte aligned, and its ring, then the side buffer of a
// sample an NMI takes while its CPU writes a record (lib/ring.h): as big as
// the largest sample, in system space (core/sysmap.h), so that a big ring
// needs no contiguous physical memory. The free slot log becomes owner's
// (log_mutex held).
static NTSTATUS setup_rings(struct pmc_log *log, struct process *owner, uint32_t bytes,
                            uint32_t depth)
{
    uint32_t max_record = sample_bytes(depth);
    log->mem = kzalloc(ncpus * sizeof(struct log_cpu) + 63);
    log->cpu = log->mem ? (struct log_cpu *)ALIGN_UP((uintptr_t)log->mem, 64) : NULL;
    NTSTATUS s = log->cpu ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
    for (unsigned i = 0; i < ncpus && NT_SUCCESS(s); i++) {
        struct log_cpu *l = &log->cpu[i];
        uint8_t *mem = sysmap_alloc(ring_pages(bytes, max_record));
        ring_init(&l->ring, mem, bytes, mem ? mem + bytes : NULL, max_record);
        l->max_sample_bytes = max_record;
        l->frames = depth + 1;
        if (!l->ring.buf)
            s = STATUS_INSUFFICIENT_RESOURCES;
    }
    if (!NT_SUCCESS(s)) {
        free_rings(log);
        return s;
    }
    log->ring_bytes = bytes;
    log->depth = depth;
    log->privileged = owner->privileged;
    unprivileged_bytes += owner->privileged ? 0 : bytes;
    WRITE_ONCE(nlogs, nlogs + 1);
    WRITE_ONCE(log->owner, owner);
    map_everything(log);
    return STATUS_SUCCESS;
}

static struct pmc_log *free_slot(void)
{
    for (unsigned i = 0; i < PMC_LOGS_MAX; i++)
        if (!logs[i].cpu)
            return &logs[i];
    return NULL;
}

NTSTATUS pmc_log_configure(struct process *owner, const struct pmc_log_config *cfg)
{
    uint32_t bytes, depth;
    NTSTATUS s = check_config(cfg, &bytes, &depth);
    if (!NT_SUCCESS(s))
        return s;
    mutex_lock(&log_mutex);
    struct pmc_log *log = log_of(owner);
    s = log && log->users ? STATUS_PMC_LOG_IN_USE : admit(owner, log, bytes, depth);
    if (NT_SUCCESS(s)) {
        if (log)
            free_rings(log); // resized: the old rings go first, as hwpmc's do
        else
            log = free_slot(); // admit found one
        s = setup_rings(log, owner, bytes, depth);
    }
    mutex_unlock(&log_mutex);
    return s;
}

NTSTATUS pmc_log_release(struct process *owner)
{
    mutex_lock(&log_mutex);
    struct pmc_log *log = log_of(owner);
    NTSTATUS s = !log ? STATUS_PMC_NO_LOG : log->users ? STATUS_PMC_LOG_IN_USE : STATUS_SUCCESS;
    if (NT_SUCCESS(s))
        free_rings(log);
    mutex_unlock(&log_mutex);
    return s;
}

// Called after the exiting process's handles (so its PMCs) are gone; its
// loggers may still write the log (they stop after this): then their last
// unuse frees it.
void pmc_log_process_gone(struct process *p)
{
    if (!log_of(p))
        return;
    mutex_lock(&log_mutex);
    struct pmc_log *log = log_of(p);
    if (log) {
        WRITE_ONCE(log->owner, NULL);
        if (!log->users)
            free_rings(log);
    }
    mutex_unlock(&log_mutex);
}

NTSTATUS pmc_log_use(const struct process *p, struct pmc_log **out)
{
    mutex_lock(&log_mutex);
    struct pmc_log *log = log_of(p);
    if (log)
        log->users++;
    mutex_unlock(&log_mutex);
    *out = log;
    return log ? STATUS_SUCCESS : STATUS_PMC_NO_LOG;
}

void pmc_log_unuse(struct pmc_log *log)
{
    mutex_lock(&log_mutex);
    if (--log->users == 0 && !log->owner)
        free_rings(log); // its owner exited meanwhile
    mutex_unlock(&log_mutex);
}

NTSTATUS pmc_log_write_user(const struct process *p, uint64_t userdata)
{
    struct pmc_log *log = log_of(p);
    if (!log)
        return STATUS_PMC_NO_LOG;
    struct pmclog_user r = {.h.type = PMCLOG_USER, .pid = p->pid, .userdata = userdata};
    log_write(log, &r.h, sizeof r);
    return STATUS_SUCCESS;
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
    *got = 0;
    struct pmc_log *log = log_of(reader); // its own: it stays while the owner reads
    if (!log)
        return STATUS_PMC_NO_LOG;
    NTSTATUS s = STATUS_SUCCESS;
    // The caller checked [ubuf, ubuf + len) (user_buffer_check).
    struct ring_sink out = {.copy = user_sink_copy, .ctx = (void *)(uintptr_t)ubuf, .len = len};
    if (!log->initialized) {
        s = initialize_record(&out);
        log->initialized = NT_SUCCESS(s) && !out.full;
    }
    for (unsigned cpu = 0; log->initialized && cpu < ncpus && NT_SUCCESS(s) && !out.full; cpu++) {
        struct ring *r = &log->cpu[cpu].ring;
        s = ring_drain(r, &out);
        // Samples dropped so far on this CPU, after the records it did keep.
        if (NT_SUCCESS(s))
            s = ring_drain_lost(r, (uint16_t)cpu, rdtsc(), &out);
    }
    *got = out.pos;
    if (NT_SUCCESS(s) && out.full && out.pos == 0)
        s = STATUS_BUFFER_TOO_SMALL; // not even one record fits
    return s;
}

NTSTATUS pmc_log_flush(struct process *caller)
{
    if (!log_of(caller))
        return STATUS_PMC_NO_LOG;
    grace_wait(); // every record begun before the call is published
    return STATUS_SUCCESS;
}

_Static_assert(PMC_STATS_CPUS >= MAX_CPUS, "struct pmc_driver_stats has a row for every CPU");

void pmc_log_stats(const struct process *caller, struct pmc_driver_stats *out)
{
    const struct pmc_log *log = log_of(caller);
    out->ncpus = ncpus;
    out->log_configured = log != NULL;
    out->ring_bytes = log ? log->ring_bytes : 0;
    out->depth = log ? log->depth : 0;
    for (unsigned i = 0; log && i < ncpus; i++) {
        const struct log_cpu *l = &log->cpu[i];
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
