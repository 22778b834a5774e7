#pragma once
void ioapic_init(void); // mask every IOAPIC input; irq_route_isa (irq.h) unmasks one
