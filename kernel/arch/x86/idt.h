// The interrupt descriptor table, shared by every CPU.
#pragma once

void idt_init(void); // build the table (boot CPU, once)
void idt_load(void); // lidt on the calling CPU
