// Console output to serial and VGA, and a small input ring fed by interrupts.
#include "core/console.h"

#include "lib/bootinfo.h"
#include "lib/kprintf.h"

#include "arch/x86/serial.h"
#include "arch/x86/vga.h"

#include "core/process.h"
#include "core/sched.h"
#include "core/spinlock.h"

static struct spinlock console_lock = SPINLOCK_INIT("console");
static volatile bool panicking;

void console_init(void)
{
    serial_init();
    if (!boot_info.efi) // UEFI firmware leaves no VGA text mode to write to
        vga_init();
    kprintf_output = console_write;
    if (boot_info.efi)
        kprintf("console: UEFI firmware: no screen console (no VGA text mode), serial only\n");
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

static volatile uint32_t foreground; // the group Ctrl-C interrupts; 0: none

// The owners, innermost last: a shell, and a shell (or any program) it runs
// in the foreground that sets the foreground group itself. The innermost
// that lives owns the console; when it ends, the one that ran it owns it
// again. Pids are never reused (next_pid only grows).
#define OWNERS 8
static uint32_t owners[OWNERS];
static unsigned nowners;
static struct spinlock owner_lock = SPINLOCK_INIT("console owners");

static bool lives(uint32_t pid)
{
    struct process *p = process_by_pid(pid);
    bool alive = p && !p->exited;
    if (p)
        object_unref(&p->obj);
    return alive;
}

// The owner's pid, 0 for none (owner_lock held: the ended are let go).
static uint32_t owner_locked(void)
{
    while (nowners && !lives(owners[nowners - 1]))
        nowners--;
    return nowners ? owners[nowners - 1] : 0;
}

NTSTATUS console_set_foreground(struct process *me, uint32_t pgid)
{
    NTSTATUS s = process_group_check(me, pgid);
    if (!NT_SUCCESS(s))
        return s;
    uint64_t f = spin_lock_irqsave(&owner_lock);
    uint32_t owner = owner_locked(), fg = READ_ONCE(foreground);
    // With no owner, or as a member of the foreground group, me takes it.
    if (owner != me->pid && (!owner || (fg && me->pgid == fg)) && nowners < OWNERS)
        owners[nowners++] = owner = me->pid;
    if (owner == me->pid)
        WRITE_ONCE(foreground, pgid);
    else
        s = STATUS_ACCESS_DENIED; // a background process: the console is not its own
    spin_unlock_irqrestore(&owner_lock, f);
    return s;
}

bool console_may_read(const struct process *me)
{
    uint32_t fg = READ_ONCE(foreground);
    if (fg)
        return me->pgid == fg;
    uint64_t f = spin_lock_irqsave(&owner_lock);
    uint32_t owner = owner_locked();
    spin_unlock_irqrestore(&owner_lock, f);
    return !owner || owner == me->pid;
}

// Ctrl-C with a foreground group: echo it, discard the typed-ahead input,
// interrupt the group (lib/abi/syscalls.h, after POSIX's ISIG without NOFLSH).
static bool console_interrupt(char c)
{
    uint32_t pgid = READ_ONCE(foreground);
    if (c != CONSOLE_INTR || !pgid)
        return false;
    console_write("^C\n", 3);
    uint64_t flags = spin_lock_irqsave(&input_lock);
    input_head = input_tail;
    console_has_input = false;
    spin_unlock_irqrestore(&input_lock, flags);
    process_interrupt_group(pgid);
    return true;
}

void console_input(char c)
{
    if (console_interrupt(c))
        return;
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
