// PS/2 keyboard (IRQ 1): scancode set 1 to ASCII, with shift and ctrl; the
// arrow keys become the ANSI escape sequences a serial terminal would send.
#include "arch/x86/cpu.h"
#include "arch/x86/irq.h"
#include "arch/x86/keyboard.h"

static void (*keyboard_input)(char c);

static const char normal[128] = {
    0,    27,  '1', '2', '3', '4', '5', '6', '7', '8', '9',  '0', '-', '=',  '\b',
    '\t', 'q', 'w', 'e', 'r', 't', 'y', 'u', 'i', 'o', 'p',  '[', ']', '\n', 0,
    'a',  's', 'd', 'f', 'g', 'h', 'j', 'k', 'l', ';', '\'', '`', 0,   '\\', 'z',
    'x',  'c', 'v', 'b', 'n', 'm', ',', '.', '/', 0,   '*',  0,   ' ',
};
static const char shifted[128] = {
    0,    27,  '!', '@', '#', '$', '%', '^', '&', '*', '(', ')', '_', '+',  '\b',
    '\t', 'Q', 'W', 'E', 'R', 'T', 'Y', 'U', 'I', 'O', 'P', '{', '}', '\n', 0,
    'A',  'S', 'D', 'F', 'G', 'H', 'J', 'K', 'L', ':', '"', '~', 0,   '|',  'Z',
    'X',  'C', 'V', 'B', 'N', 'M', '<', '>', '?', 0,   '*', 0,   ' ',
};

static bool shift, ctrl, extended;

static void keyboard_irq(struct trapframe *tf)
{
    UNUSED(tf);
    uint8_t sc = inb(0x60);
    if (sc == 0xE0) {
        extended = true;
        return;
    }
    bool release = sc & 0x80;
    sc &= 0x7F;
    if (sc == 0x2A || sc == 0x36) {
        shift = !release;
    } else if (sc == 0x1D) {
        ctrl = !release;
    } else if (!release && extended) {
        char arrow = sc == 0x48 ? 'A' : sc == 0x50 ? 'B' : sc == 0x4D ? 'C' : sc == 0x4B ? 'D' : 0;
        if (arrow) {
            keyboard_input(27);
            keyboard_input('[');
            keyboard_input(arrow);
        }
    } else if (!release) {
        char c = (shift ? shifted : normal)[sc];
        if (c && ctrl && c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 1);
        if (c)
            keyboard_input(c);
    }
    extended = false;
}

void keyboard_init(void (*input)(char c))
{
    keyboard_input = input;
    while (inb(0x64) & 1) // drain anything the firmware left
        inb(0x60);
    irq_route_isa(1, keyboard_irq);
}
