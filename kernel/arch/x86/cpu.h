// Small CPU instructions: port I/O, control registers, the interrupt flag, TSC.
#pragma once
#include "lib/types.h"

#define RFLAGS_IF (1ull << 9)
#define CR4_PCE   (1ull << 8) // rdpmc allowed at any CPL (Intel SDM vol. 3A, 2.5)

#ifdef KERNEL_HOSTED
uint64_t irq_save(void);
void irq_restore(uint64_t flags);
uint64_t rdtsc(void);
uint64_t read_cr3(void);
uint64_t read_cr4(void);
void write_cr4(uint64_t v);
static inline void cpu_relax(void) {}
#else
static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}
static inline void outw(uint16_t port, uint16_t v)
{
    __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port));
}
static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}
static inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint16_t inw(uint16_t port)
{
    uint16_t v;
    __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline uint32_t inl(uint16_t port)
{
    uint32_t v;
    __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline uint64_t read_rflags(void)
{
    uint64_t f;
    __asm__ volatile("pushfq; popq %0" : "=r"(f));
    return f;
}
static inline void cli(void)
{
    __asm__ volatile("cli" ::: "memory");
}
static inline void sti(void)
{
    __asm__ volatile("sti" ::: "memory");
}
static inline void hlt(void)
{
    __asm__ volatile("hlt" ::: "memory");
}
static inline void cpu_relax(void)
{
    __asm__ volatile("pause" ::: "memory");
}

// Disable interrupts and return the previous flags, for irq_restore.
static inline uint64_t irq_save(void)
{
    uint64_t f = read_rflags();
    cli();
    return f;
}
static inline void irq_restore(uint64_t flags)
{
    if (flags & RFLAGS_IF)
        sti();
}
static inline bool irq_enabled(void)
{
    return read_rflags() & RFLAGS_IF;
}

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

// read_cr0, read_cr2, read_cr3, read_cr4: a control register's value.
#define READ_CR(n) \
    static inline uint64_t read_cr##n(void) \
    { \
        uint64_t v; \
        __asm__ volatile("mov %%cr" #n ", %0" : "=r"(v)); \
        return v; \
    }
READ_CR(0)
READ_CR(2)
READ_CR(3)
READ_CR(4)
static inline void write_cr2(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr2" ::"r"(v) : "memory");
}
static inline void write_cr3(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr3" ::"r"(v) : "memory");
}
static inline void write_cr4(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr4" ::"r"(v) : "memory");
}
static inline void invlpg(uintptr_t va)
{
    __asm__ volatile("invlpg (%0)" ::"r"(va) : "memory");
}

static inline void NORETURN halt_forever(void)
{
    for (;;)
        __asm__ volatile("cli; hlt");
}
#endif
