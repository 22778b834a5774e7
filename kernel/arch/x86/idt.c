// One IDT for all CPUs: 256 interrupt gates into the stubs of vectors.asm.
#include "arch/x86/idt.h"

#include "lib/types.h"

#include "arch/x86/gdt.h"
#include "arch/x86/vectors.h"

struct gate {
    uint16_t offset_lo;
    uint16_t selector;
    uint8_t ist;
    uint8_t type_attr; // P | DPL | type 0xE (64-bit interrupt gate: IF cleared on entry)
    uint16_t offset_mid;
    uint32_t offset_hi;
    uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct gate) == 16, "IDT gate");

extern const uint64_t isr_stubs[256];
static struct gate idt[256] __attribute__((aligned(16)));

extern void timer_entry(void); // vectors.asm: the lean entry of the LAPIC timer
extern void nmi_entry(void);   // vectors.asm: the NMI's entry (nmi.h)
extern void pmi_entry(void);   // vectors.asm: the lean entry of the PMI (trap.h)

static void set_gate_to(unsigned v, uint64_t a, unsigned ist, unsigned dpl)
{
    idt[v] = (struct gate){
        .offset_lo = a & 0xFFFF,
        .selector = SEL_KCODE,
        .ist = (uint8_t)ist,
        .type_attr = (uint8_t)(0x80 | (dpl << 5) | 0xE),
        .offset_mid = (a >> 16) & 0xFFFF,
        .offset_hi = (uint32_t)(a >> 32),
    };
}

static void set_gate(unsigned v, unsigned ist, unsigned dpl)
{
    set_gate_to(v, isr_stubs[v], ist, dpl);
}

void idt_init(void)
{
    for (unsigned v = 0; v < 256; v++)
        set_gate(v, 0, 0);
    set_gate_to(2, (uint64_t)nmi_entry, IST_NMI, 0); // nmi.h
    set_gate(8, IST_DOUBLE_FAULT, 0);
    set_gate(18, IST_MACHINE_CHECK, 0);
    set_gate(3, 0, 3); // int3 from ring 3 is a breakpoint, not a #GP
    set_gate_to(VEC_TIMER, (uint64_t)timer_entry, 0, 0); // straight to timer_interrupt
    set_gate_to(VEC_PMI, (uint64_t)pmi_entry, 0, 0);     // straight to pmi_interrupt
}

void idt_load(void)
{
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed)) ptr = {sizeof idt - 1, (uint64_t)idt};
    __asm__ volatile("lidt %0" ::"m"(ptr));
}
