// `pmc trace`: per-CPU rings of raw records (see hal/trace.h).
#include "pmc/hal/trace.h"

#include "lib/string.h"

#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"

#include "core/heap.h"
#include "core/mutex.h"

bool pmc_trace_on;
bool (*pmc_trace_sample_filter)(struct pmclog_trace *r);
static struct ring *rings; // one per CPU, each over PMC_TRACE_RING_BYTES of its own
static unsigned nrings;
static struct mutex trace_mutex = MUTEX_INIT("pmc trace"); // the rings' reader side

static bool is_sample_step(enum pmc_trace_kind kind, uint32_t reg)
{
    return kind == PMC_TRACE_STEP &&
           (reg == PMC_STEP_PMI || reg == PMC_STEP_SAMPLE || reg == PMC_STEP_BUCKET);
}

void pmc_trace_write_irqoff(struct pmclog_header *rec, uint32_t size)
{
    unsigned cpu = cpu_id();
    if (cpu >= READ_ONCE(nrings))
        return;
    struct ring *r = &rings[cpu];
    void *dst = ring_reserve(r, size);
    if (!dst) {
        ring_lose(r);
        return;
    }
    rec->cpu = (uint16_t)cpu;
    rec->size = size;
    rec->tsc = rdtsc();
    memcpy(dst, rec, size);
    ring_commit(r, size);
}

// Appends with interrupts off, so a PMI cannot interleave with a HAL step on
// the same CPU; each CPU writes only its own ring. A sample step the filter
// refuses leaves no record.
void pmc_trace_record2(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, uint64_t arg,
                       unsigned source)
{
    unsigned cpu = cpu_id();
    if (cpu >= READ_ONCE(nrings))
        return;
    struct pmclog_trace rec = {
        .h = {.type = PMCLOG_TRACE, .cpu = (uint16_t)cpu},
        .value = value,
        .arg = arg,
        .reg = reg,
        .kind = (uint16_t)kind,
        .source = (uint16_t)source,
    };
    uint64_t flags = irq_save();
    bool (*filter)(struct pmclog_trace *) = READ_ONCE(pmc_trace_sample_filter);
    if (!filter || !is_sample_step(kind, reg) || filter(&rec))
        pmc_trace_write_irqoff(&rec.h, sizeof rec);
    irq_restore(flags);
}

void pmc_trace_record(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, unsigned source)
{
    pmc_trace_record2(kind, reg, value, 0, source);
}

NTSTATUS pmc_trace_rings_alloc(void)
{
    if (rings == NULL) {
        unsigned n = ncpus ? ncpus : 1;
        struct ring *r = kzalloc(n * sizeof(*r));
        if (r == NULL)
            return STATUS_NO_MEMORY;
        for (unsigned i = 0; i < n; i++) {
            // The ring, then the side buffer of a record written by an NMI
            // that interrupts a write (lib/ring.h).
            void *mem = kmalloc(PMC_TRACE_RING_BYTES + sizeof(struct pmclog_trace));
            if (mem == NULL) {
                while (i--)
                    kfree(r[i].buf);
                kfree(r);
                return STATUS_NO_MEMORY;
            }
            ring_init(&r[i], mem, PMC_TRACE_RING_BYTES, (uint8_t *)mem + PMC_TRACE_RING_BYTES,
                      sizeof(struct pmclog_trace));
        }
        rings = r;
        __atomic_store_n(&nrings, n, __ATOMIC_RELEASE); // writers look at rings below nrings
    }
    return STATUS_SUCCESS;
}

void pmc_trace_clear(void)
{
    mutex_lock(&trace_mutex);
    for (unsigned i = 0; i < nrings; i++)
        ring_clear(&rings[i]);
    mutex_unlock(&trace_mutex);
}

void pmc_trace_free(void)
{
    pmc_trace_on = false; // pmc_trace_disable (hal/deliver.c) has chosen the untraced way
    for (unsigned i = 0; i < nrings; i++)
        kfree(rings[i].buf);
    kfree(rings);
    rings = NULL;
    nrings = 0;
}

NTSTATUS pmc_trace_drain(struct ring_sink *s)
{
    NTSTATUS st = STATUS_SUCCESS;
    mutex_lock(&trace_mutex);
    for (unsigned cpu = 0; cpu < nrings && NT_SUCCESS(st) && !s->full; cpu++) {
        st = ring_drain(&rings[cpu], s);
        if (NT_SUCCESS(st))
            st = ring_drain_lost(&rings[cpu], (uint16_t)cpu, rdtsc(), s);
    }
    mutex_unlock(&trace_mutex);
    return st;
}

uint64_t pmc_trace_lost(unsigned cpu)
{
    return cpu < nrings ? READ_ONCE(rings[cpu].lost) : 0;
}
