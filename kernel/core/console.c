// Console output to serial and VGA, and a small input ring fed by interrupts.
#include "core/console.h"
#include "arch/x86/serial.h"
#include "arch/x86/vga.h"
#include "core/sched.h"
#include "core/spinlock.h"
#include "lib/kprintf.h"

static struct spinlock console_lock = SPINLOCK_INIT("console");
static volatile bool panicking;

void console_init(void)
{
    serial_init();
    vga_init();
    kprintf_output = console_write;
}

void console_write(const char *s, size_t n)
{
    uint64_t flags = 0;
    if (!panicking)
        flags = spin_lock_irqsave(&console_lock);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n')
            serial_putc('\r');
        serial_putc(s[i]);
        vga_putc(s[i]);
    }
    if (!panicking)
        spin_unlock_irqrestore(&console_lock, flags);
}

void console_panic(void)
{
    panicking = true;
}

#define INPUT_SIZE 4096
static struct spinlock input_lock = SPINLOCK_INIT("console input");
static char input[INPUT_SIZE];
static unsigned input_head, input_tail; // head: next to read; tail: next to write
volatile bool console_has_input;

void console_input(char c)
{
    uint64_t flags = spin_lock_irqsave(&input_lock);
    if (input_tail - input_head < INPUT_SIZE) // full: drop the byte
        input[input_tail++ % INPUT_SIZE] = c;
    console_has_input = true;
    spin_unlock_irqrestore(&input_lock, flags);
    wakeup((const void *)&console_has_input);
}

size_t console_read(char *buf, size_t len)
{
    size_t n = 0;
    uint64_t flags = spin_lock_irqsave(&input_lock);
    while (n < len && input_head != input_tail)
        buf[n++] = input[input_head++ % INPUT_SIZE];
    console_has_input = input_head != input_tail;
    spin_unlock_irqrestore(&input_lock, flags);
    return n;
}
