#pragma once
// Route IRQ 1 and hand every key to input as the bytes a terminal would send
// (arrows as ESC [ A..D), in the interrupt.
void keyboard_init(void (*input)(char c));
