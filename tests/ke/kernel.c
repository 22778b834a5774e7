// The rest of the kernel that kernel/pmc/ke and core/grace.c call, stubbed:
// the heap is malloc (ASan sees a use after kfree); a system-space mapping
// is a malloc'd copy of the pinned user pages, copied back and freed at the
// unmap (a write through a stale mapping is a use after free); pins count
// per page; the page-table walk finds the profiles' buffers; the HAL counts
// its users; `pmc trace` and the hooks do nothing but yield. All but the
// HAL's queries are yield points (kx.h).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kx.h"

#include "arch/x86/percpu.h"
#include "core/heap.h"
#include "core/pin.h"
#include "core/process.h"
#include "core/sysmap.h"
#include "core/vm.h"
#include "lib/panic.h"
#include "pmc/hal/hal.h"
#include "pmc/hal/pmi.h"
#include "pmc/hal/trace.h"
#include "pmc/ke/profile_state.h"

// A profile slot's buffer: 0xFF0 into its first page, so that the 1 KiB ones
// span two pages and the mapping's offset matters.
#define BUF_BASE    0x10000000ull
#define USER_STRIDE 0x100000ull
#define BUF_OFFSET  0xFF0u
#define BUF_PAGES   2
#define MAPS        (KX_SLOTS * 2)

static uint8_t user_mem[KX_SLOTS][BUF_PAGES][PAGE_SIZE]; // "physical" memory: pa is the va
static unsigned pins[KX_SLOTS][BUF_PAGES];
static struct mapping {
    uint8_t *va; // malloc'd; NULL: free
    uint64_t pa[BUF_PAGES], npages;
} maps[MAPS];
static struct {
    unsigned live;         // kmalloc'd and not freed
    bool nomem[KX_CPUS];   // the CPU's next kmalloc fails
    unsigned hal_users[3]; // by kx_sources index
} k;

void kx_kernel_reset(void)
{
    memset(pins, 0, sizeof pins);
    memset(maps, 0, sizeof maps);
    memset(&k, 0, sizeof k);
    pmc_trace_on = false;
}

uint64_t kx_user_va(unsigned slot)
{
    return BUF_BASE + slot * USER_STRIDE + BUF_OFFSET;
}

uint8_t *kx_user_buffer(unsigned slot)
{
    return &user_mem[slot][0][BUF_OFFSET];
}

// The user page at pa (a profile buffer's), or NULL.
static uint8_t *page_at(uint64_t pa, unsigned **pin)
{
    uint64_t slot = (pa - BUF_BASE) / USER_STRIDE, page = (pa - BUF_BASE) % USER_STRIDE / PAGE_SIZE;
    if (pa < BUF_BASE || slot >= KX_SLOTS || page >= BUF_PAGES || pa % PAGE_SIZE)
        return NULL;
    *pin = &pins[slot][page];
    return user_mem[slot][page];
}

// --- heap -------------------------------------------------------------------

void kx_nomem(unsigned cpu)
{
    k.nomem[cpu % KX_CPUS] = true;
}

void *kmalloc(size_t size)
{
    unsigned cpu = cpu_id();
    if (k.nomem[cpu]) {
        k.nomem[cpu] = false;
        return NULL;
    }
    void *p = malloc(size ? size : 1);
    if (!p)
        abort();
    k.live++;
    return p;
}

void kfree(void *p)
{
    if (!p)
        return;
    kx_yield();
    kx_sets_forget(p);
    k.live--;
    free(p);
    kx_yield();
}

// --- pages: the walk, pins, system-space mappings ----------------------------

pte_t *vm_walk(uint64_t pml4, uint64_t va, bool alloc)
{
    static pte_t ptes[KX_CPUS];
    (void)pml4;
    (void)alloc;
    unsigned *pin, cpu = cpu_id();
    if (!page_at(va & ~(PAGE_SIZE - 1), &pin))
        return NULL;
    ptes[cpu] = (va & ~(PAGE_SIZE - 1)) | PTE_P | PTE_U | PTE_W;
    return &ptes[cpu];
}

bool pin_page(uint64_t pa)
{
    unsigned *pin;
    kx_yield();
    if (!page_at(pa, &pin)) {
        kx_fail("pin: %#llx is no buffer page", (unsigned long long)pa);
        return false;
    }
    ++*pin;
    return true;
}

void unpin_page(uint64_t pa)
{
    unsigned *pin;
    if (!page_at(pa, &pin) || *pin == 0)
        kx_fail("unpin: %#llx is not pinned", (unsigned long long)pa);
    else
        --*pin;
    kx_yield();
}

void *sysmap_map(const uint64_t *pa, uint64_t npages)
{
    kx_yield();
    struct mapping *m = maps;
    while (m < maps + MAPS && m->va)
        m++;
    if (m == maps + MAPS || npages > BUF_PAGES)
        return NULL; // no room in the window
    m->va = aligned_alloc(PAGE_SIZE, npages * PAGE_SIZE);
    m->npages = npages;
    for (uint64_t i = 0; i < npages; i++) {
        unsigned *pin;
        uint8_t *page = page_at(pa[i], &pin);
        if (!page || *pin == 0)
            kx_fail("sysmap_map: page %#llx not pinned", (unsigned long long)pa[i]);
        else
            memcpy(m->va + i * PAGE_SIZE, page, PAGE_SIZE);
        m->pa[i] = pa[i];
    }
    return m->va;
}

void sysmap_unmap(void *va, uint64_t npages)
{
    struct mapping *m = maps;
    while (m < maps + MAPS && m->va != va)
        m++;
    if (m == maps + MAPS || m->npages != npages) {
        kx_fail("sysmap_unmap: %p (%llu pages) is no mapping", va, (unsigned long long)npages);
        return;
    }
    for (uint64_t i = 0; i < npages; i++) {
        unsigned *pin;
        memcpy(page_at(m->pa[i], &pin), m->va + i * PAGE_SIZE, PAGE_SIZE);
    }
    free(m->va); // a sample writing here from now on writes freed memory
    m->va = NULL;
    kx_yield();
}

bool kx_kernel_idle(char *msg, unsigned size)
{
    unsigned pinned = 0, mapped = 0, users = 0;
    for (unsigned s = 0; s < KX_SLOTS; s++)
        for (unsigned p = 0; p < BUF_PAGES; p++)
            pinned += pins[s][p];
    for (unsigned i = 0; i < MAPS; i++)
        mapped += maps[i].va != NULL;
    for (unsigned i = 0; i < KX_SOURCES; i++)
        users += k.hal_users[i];
    if (!k.live && !pinned && !mapped && !users)
        return true;
    snprintf(msg, size, "leak: at the end %u allocations, %u pins, %u mappings, %u HAL users",
             k.live, pinned, mapped, users);
    return false;
}

// --- processes ------------------------------------------------------------------

// A system call on an idle CPU runs as this process: its address space
// (pin_buffer's lock) and its charge of started profiles are used. A
// reference of its own keeps it (never counted live: object_init is not
// called); privileged, as init is.
static struct profile_process shell_area;
static struct process shell = {.obj = {.type = OBJ_PROCESS, .refs = 1},
                               .pid = 1,
                               .privileged = true,
                               .layer_area = &shell_area,
                               .as = {.lock = SPINLOCK_INIT("shell as")}};

struct process *process_current(void)
{
    struct process *p = this_cpu()->current_process;
    return p ? p : &shell;
}

void process_area_reserve(size_t bytes)
{
    if (bytes > sizeof(struct profile_process))
        kx_fail("process_area_reserve: %zu bytes", bytes);
}

// --- the HAL, `pmc trace`, the hooks ------------------------------------------------

static unsigned *users_of(KPROFILE_SOURCE source)
{
    for (unsigned i = 0; i < KX_SOURCES; i++)
        if (kx_sources[i] == source)
            return &k.hal_users[i];
    kx_fail("HAL: source %u is none of the explorer's", (unsigned)source);
    return &k.hal_users[0];
}

NTSTATUS HalStartProfileInterrupt(KPROFILE_SOURCE source, const char **reason)
{
    kx_yield();
    if (reason)
        *reason = "";
    ++*users_of(source);
    return STATUS_SUCCESS;
}

NTSTATUS HalStartProfileInterruptEx(KPROFILE_SOURCE source, unsigned levels, const char **reason)
{
    (void)levels;
    return HalStartProfileInterrupt(source, reason);
}

NTSTATUS HalStopProfileInterrupt(KPROFILE_SOURCE source, const char **reason)
{
    kx_yield();
    if (reason)
        *reason = "";
    unsigned *users = users_of(source);
    if (*users == 0)
        kx_fail("HAL: source %u stopped more often than started", (unsigned)source);
    else
        --*users;
    return STATUS_SUCCESS;
}

NTSTATUS HalQueryProfileSource(KPROFILE_SOURCE source, struct hal_profile_source_details *out)
{
    memset(out, 0, sizeof *out);
    out->source = source;
    out->supported = true;
    out->interval = 1000;
    return STATUS_SUCCESS;
}

uint64_t HalSetProfileInterval(uint64_t interval)
{
    return interval;
}

NTSTATUS HalSetSystemInformation(HAL_SET_INFORMATION_CLASS cls, uint32_t size, void *buffer)
{
    (void)cls;
    (void)size;
    (void)buffer;
    return STATUS_SUCCESS;
}

uint64_t pmc_pmi_throttled(KPROFILE_SOURCE source)
{
    (void)source;
    return 0;
}

bool pmc_trace_on;
uint64_t (*swevent_profile_ticks)(unsigned cpu);

void pmc_trace_record2(enum pmc_trace_kind kind, uint32_t reg, uint64_t value, uint64_t arg,
                       unsigned source)
{
    (void)kind;
    (void)reg;
    (void)value;
    (void)arg;
    (void)source;
    kx_yield();
}

void panic(const char *fmt, ...)
{
    char msg[KX_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kx_fail("panic: %s", msg);
    kx_die();
}
