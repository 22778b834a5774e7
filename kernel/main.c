// Kernel entry: the boot order, one step per line.
//
// entry.asm arrives here on the boot CPU in 64-bit mode on the boot page tables
// (identity + direct map of the first 4 GiB + the kernel image), interrupts off.
#include "acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/gdt.h"
#include "arch/x86/idt.h"
#include "arch/x86/ioapic.h"
#include "arch/x86/keyboard.h"
#include "arch/x86/lapic.h"
#include "arch/x86/pic.h"
#include "arch/x86/serial.h"
#include "bootinfo.h"
#include "clock.h"
#include "cmdline.h"
#include "console.h"
#include "kprintf.h"
#include "ksym.h"
#include "memlayout.h"
#include "panic.h"
#include "percpu.h"
#include "pmm.h"
#include "selftest.h"
#include "smp.h"
#include "timer.h"
#include "vm.h"

#define MULTIBOOT2_BOOTLOADER_MAGIC 0x36D76289

extern char boot_stack_top[];
void smp_init_ipis(void);

static void cpu_online(struct cpu *c)
{
    c->online = true;
    __atomic_fetch_add(&ncpus_online, 1, __ATOMIC_SEQ_CST);
}

void NORETURN kmain(uint32_t magic, uint64_t mbi_phys)
{
    boot_tsc = rdtsc();
    cpus[0].stack_top = (uint8_t *)boot_stack_top;
    percpu_init(&cpus[0]);                          // GS -> CPU 0's data (locks need cpu_id)
    bool mb_ok = magic == MULTIBOOT2_BOOTLOADER_MAGIC &&
                 multiboot2_parse(phys_to_virt(mbi_phys), mbi_phys, &boot_info);
    cmdline_init(boot_info.cmdline);                // options (test mode, nosmp, ...)
    console_init();                                 // COM1 and VGA text
    kprintf("kernel: booting, command line \"%s\"\n", boot_info.cmdline);
    idt_init();                                     // exception and interrupt gates
    idt_load();
    if (!mb_ok)
        panic("boot: bad multiboot2 information (magic %#x)", magic);
    pmm_init(&boot_info);                           // physical pages from the memory map
    vm_init();                                      // kernel page tables, direct map
    ksym_init(boot_info.elf.num, boot_info.elf.entsize, boot_info.elf.shndx,
              phys_to_virt(boot_info.elf.sections));// symbols for backtraces
    gdt_init_cpu(&cpus[0]);                         // GDT, TSS and IST stacks
    kprintf("mem: %lu MiB usable, %lu pages free\n", pmm_usable_count() * PAGE_SIZE >> 20,
            pmm_free_count());
    acpi_init(boot_info.rsdp, cmdline_has("noacpi") ? 0 : boot_info.rsdp_version); // MADT
    pic_disable();                                  // 8259s remapped and masked
    lapic_init_bsp();                               // xAPIC or x2APIC
    lapic_init_cpu();
    cpus[0].apic_id = lapic_id();
    kprintf("lapic: %s mode, boot CPU APIC id %u\n", lapic_x2apic() ? "x2APIC" : "xAPIC",
            cpus[0].apic_id);
    ioapic_init();                                  // every IOAPIC input masked
    clock_calibrate();                              // TSC and LAPIC timer frequencies
    smp_init_ipis();                                // cross-CPU call vector
    timer_init_cpu();                               // per-CPU timer, scheduler tick
    cpu_online(&cpus[0]);
    sti();
    serial_enable_irq();                            // console input
    keyboard_init();
    smp_boot_aps();                                 // every other CPU: "smp: N CPUs online"
    uint64_t init_ns = clock_ns();
    kprintf("boot: kernel init took %lu.%03lu ms (TSC)\n", init_ns / 1000000,
            init_ns / 1000 % 1000);

    char test[32];
    if (cmdline_get("test", test, sizeof test))
        selftest_run(test);                         // test mode: never returns
    kprintf("kernel: ready; typing echoes (interrupt-driven input)\n");
    for (;;) { // until processes arrive, the boot CPU just echoes the console
        int c;
        while ((c = console_getc()) >= 0) {
            char ch = (char)c;
            console_write(&ch, 1);
        }
        hlt();
    }
}

// Each AP arrives here from smp.c's ap_entry, on the kernel page tables.
void NORETURN ap_main(struct cpu *c)
{
    gdt_init_cpu(c);
    idt_load();
    lapic_init_cpu();
    timer_init_cpu();
    cpu_online(c);
    sti();
    for (;;)
        hlt();
}
