// The legacy 8259 PICs: remapped away from the exception vectors and masked.
// Every interrupt comes through the IOAPIC and the local APIC instead.
#include "arch/x86/cpu.h"
#include "arch/x86/pic.h"

void pic_disable(void)
{
    outb(0x20, 0x11); // ICW1: init, expect ICW4
    outb(0xA0, 0x11);
    outb(0x21, 0xF0); // ICW2: vectors 0xF0-0xF7 (never unmasked)
    outb(0xA1, 0xF8);
    outb(0x21, 0x04); // ICW3: slave on IRQ2
    outb(0xA1, 0x02);
    outb(0x21, 0x01); // ICW4: 8086 mode
    outb(0xA1, 0x01);
    outb(0x21, 0xFF); // mask everything
    outb(0xA1, 0xFF);
}
