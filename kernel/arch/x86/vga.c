// VGA text console: light grey on black, scrolls, hardware cursor follows.
#include "arch/x86/vga.h"

#include "lib/memlayout.h"

#include "arch/x86/cpu.h"

#define COLS 80
#define ROWS 25
#define ATTR 0x0700

static volatile uint16_t *screen;
static int row, col;

static void move_cursor(void)
{
    uint16_t pos = (uint16_t)(row * COLS + col);
    outb(0x3D4, 14);
    outb(0x3D5, pos >> 8);
    outb(0x3D4, 15);
    outb(0x3D5, pos & 0xFF);
}

void vga_init(void)
{
    screen = (volatile uint16_t *)phys_to_virt(0xB8000);
    for (int i = 0; i < COLS * ROWS; i++)
        screen[i] = ATTR | ' ';
    row = col = 0;
    move_cursor();
}

void vga_putc(char c)
{
    if (!screen)
        return;
    if (c == '\n') {
        col = 0;
        row++;
    } else if (c == '\b') {
        if (col > 0)
            screen[row * COLS + --col] = ATTR | ' ';
    } else if (c == '\r') {
        col = 0;
    } else {
        screen[row * COLS + col] = ATTR | (uint8_t)c;
        if (++col == COLS) {
            col = 0;
            row++;
        }
    }
    if (row == ROWS) {
        for (int i = 0; i < COLS * (ROWS - 1); i++)
            screen[i] = screen[i + COLS];
        for (int i = COLS * (ROWS - 1); i < COLS * ROWS; i++)
            screen[i] = ATTR | ' ';
        row = ROWS - 1;
    }
    move_cursor();
}
