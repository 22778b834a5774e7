// Each CPU has its own GDT (its TSS descriptor differs) and TSS (its own
// ring-0 stack and IST stacks for NMI, double fault and machine check, so those
// run on a known-good stack whatever state the interrupted code left).
#include "arch/x86/gdt.h"

#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/percpu.h"

struct gdt {
    uint64_t entry[5];
    uint64_t tss_lo, tss_hi; // a system descriptor takes two slots
} __attribute__((aligned(16)));

static void load_gdt(struct gdt *g)
{
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed)) ptr = {sizeof *g - 1, (uint64_t)g};
    __asm__ volatile("lgdt %0" ::"m"(ptr));
    // Reload CS with a far return, then the data segments. FS and GS keep the
    // null selector entry.asm gave them: loading GS would clear its base on
    // Intel, and the per-CPU pointer lives there.
    __asm__ volatile("pushq %0\n"
                     "leaq 1f(%%rip), %%rax\n"
                     "pushq %%rax\n"
                     "lretq\n"
                     "1:\n"
                     "movw %w1, %%ax\n"
                     "movw %%ax, %%ds\n"
                     "movw %%ax, %%es\n"
                     "movw %%ax, %%ss\n" ::"i"(SEL_KCODE),
                     "i"(SEL_KDATA)
                     : "rax", "memory");
    __asm__ volatile("ltr %w0" ::"r"(SEL_TSS));
}

static struct gdt gdts[MAX_CPUS];
static struct tss tsss[MAX_CPUS];

void gdt_init_cpu(struct cpu *c, uint8_t *ist_stacks)
{
    struct gdt *g = &gdts[c->id];
    struct tss *t = &tsss[c->id];
    g->entry[0] = 0;
    g->entry[1] = 0x00AF9A000000FFFFull; // kernel code: L, P, DPL 0
    g->entry[2] = 0x00CF92000000FFFFull; // kernel data
    g->entry[3] = 0x00CFF2000000FFFFull; // user data, DPL 3
    g->entry[4] = 0x00AFFA000000FFFFull; // user code, L, DPL 3
    uint64_t base = (uint64_t)t, limit = sizeof *t - 1;
    g->tss_lo = (limit & 0xFFFF) | ((base & 0xFFFFFF) << 16) | (0x89ull << 40) |
                (((limit >> 16) & 0xF) << 48) | (((base >> 24) & 0xFF) << 56);
    g->tss_hi = base >> 32;

    for (int i = 0; i < 3; i++)
        t->ist[i] = (uint64_t)(ist_stacks + (i + 1) * IST_STACK_SIZE);
    t->rsp[0] = (uint64_t)c->stack_top;
    t->iomap_base = sizeof *t; // no I/O permission bitmap: ring 3 gets no ports
    c->gdt = g;
    c->tss = t;
    load_gdt(g);
}
