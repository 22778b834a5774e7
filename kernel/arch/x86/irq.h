// Interrupt dispatch table: one handler per vector, registered at init.
#pragma once
#include "arch/x86/trapframe.h"

typedef void (*irq_handler_t)(struct trapframe *tf);

// Install handler for vector (32..255). The handler runs with interrupts off and
// must not sleep; it does not send EOI (the dispatcher does, for LAPIC vectors).
void irq_register(unsigned vector, irq_handler_t handler);

// Route legacy ISA IRQ isa_irq through the IOAPIC to VEC_IRQ_BASE + isa_irq on the boot CPU.
void irq_route_isa(unsigned isa_irq, irq_handler_t handler);

// Counters: spurious LAPIC interrupts and interrupts at unregistered vectors.
extern uint64_t irq_spurious_count, irq_unhandled_count;

// The performance-monitoring interrupt (VEC_PMI): vectors.asm's lean
// pmi_entry calls pmi_interrupt, which calls the handler registered here,
// then sends the EOI.
void pmi_register(void (*handler)(const struct intr_frame *f));
void pmi_interrupt(const struct intr_frame *f);
