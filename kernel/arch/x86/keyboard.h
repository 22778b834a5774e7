#pragma once
void keyboard_init(void); // route IRQ 1 and start feeding console_input
