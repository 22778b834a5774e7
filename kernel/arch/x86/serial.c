// COM1 at 115200 8N1.
#include "arch/x86/serial.h"

#include "arch/x86/cpu.h"
#include "arch/x86/irq.h"

#define COM1      0x3F8
#define UART_DATA 0 // RBR/THR (DLL when DLAB=1)
#define UART_IER  1 // interrupt enable (DLM when DLAB=1)
#define UART_FCR  2 // FIFO control
#define UART_LCR  3 // line control, bit 7 DLAB
#define UART_MCR  4 // modem control, bit 3 OUT2 gates the IRQ line
#define UART_LSR  5 // line status: bit 0 data ready, bit 5 THR empty

void serial_init(void)
{
    outb(COM1 + UART_IER, 0x00);
    outb(COM1 + UART_LCR, 0x80);
    outb(COM1 + UART_DATA, 1); // divisor 1: 115200 baud
    outb(COM1 + UART_IER, 0x00);
    outb(COM1 + UART_LCR, 0x03); // 8 bits, no parity, one stop bit
    // FIFOs stay off: switching them on flushes them, losing input typed
    // ahead, and one byte per interrupt is plenty for a console.
    outb(COM1 + UART_FCR, 0x00);
    outb(COM1 + UART_MCR, 0x0B); // DTR, RTS, OUT2
}

void serial_putc(char c)
{
    for (int spins = 0; !(inb(COM1 + UART_LSR) & 0x20) && spins < 100000; spins++)
        cpu_relax();
    outb(COM1 + UART_DATA, (uint8_t)c);
}

static void (*serial_input)(char c);

static void serial_irq(struct trapframe *tf)
{
    UNUSED(tf);
    while (inb(COM1 + UART_LSR) & 1) {
        char c = (char)inb(COM1 + UART_DATA);
        serial_input(c == '\r' ? '\n' : c);
    }
}

void serial_enable_irq(void (*input)(char c))
{
    serial_input = input;
    irq_route_isa(4, serial_irq);
    outb(COM1 + UART_IER, 0x01); // interrupt on received data
}
