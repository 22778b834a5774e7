// Kernel entry: the boot order, one step per line.
//
// entry.asm arrives here on the boot CPU in 64-bit mode on the boot page tables
// (identity + direct map of the first 4 GiB + the kernel image), interrupts off.
#include "lib/acpi.h"
#include "lib/bootinfo.h"
#include "lib/cmdline.h"
#include "lib/kprintf.h"
#include "lib/ksym.h"
#include "lib/memlayout.h"
#include "lib/panic.h"
#include "lib/string.h"

#include "arch/x86/clock.h"
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"
#include "arch/x86/gdt.h"
#include "arch/x86/idt.h"
#include "arch/x86/ioapic.h"
#include "arch/x86/irq.h"
#include "arch/x86/keyboard.h"
#include "arch/x86/lapic.h"
#include "arch/x86/percpu.h"
#include "arch/x86/pic.h"
#include "arch/x86/qemu.h"
#include "arch/x86/serial.h"
#include "arch/x86/timer.h"
#include "arch/x86/vectors.h"

#include "core/console.h"
#include "core/heap.h"
#include "core/pmm.h"
#include "core/process.h"
#include "core/ramdisk.h"
#include "core/sched.h"
#include "core/smp.h"
#include "core/sysmap.h"
#include "core/uaccess.h"
#include "core/vm.h"

#include "pmc/hal/pmi.h"
#include "pmc/hal/pmu.h"

#include "pmc/hwpmc/hwpmc_init.h"
#include "pmc/ke/profile_init.h"
#include "dev/virtio_console.h"

#include "sys/syscall.h"

#include "test/selftest.h"

#define MULTIBOOT2_BOOTLOADER_MAGIC 0x36D76289

extern char boot_stack_top[];
static void start_init(void);
static void init_exited(struct process *p, enum process_event event);
void NORETURN ap_main(struct cpu *c);

// The NMI, double-fault and machine-check stacks of one CPU (gdt.h).
static uint8_t *ist_stacks(void)
{
    uint8_t *s = kmalloc(3 * IST_STACK_SIZE);
    if (!s)
        panic("boot: no memory for the IST stacks");
    return s;
}

static void cpu_online(struct cpu *c)
{
    c->online = true;
    __atomic_fetch_add(&ncpus_online, 1, __ATOMIC_SEQ_CST);
}

static void print_init_time(void)
{
    uint64_t ns = clock_ns();
    kprintf("boot: kernel init took %lu.%03lu ms (TSC)\n", ns / 1000000, ns / 1000 % 1000);
}

void NORETURN kmain(uint32_t magic, uint64_t mbi_phys)
{
    boot_tsc = rdtsc();
    cpus[0].stack_top = (uint8_t *)boot_stack_top;
    percpu_init(&cpus[0]); // GS -> CPU 0's data (locks need cpu_id)
    bool mb_ok = magic == MULTIBOOT2_BOOTLOADER_MAGIC &&
                 multiboot2_parse(phys_to_virt(mbi_phys), mbi_phys, &boot_info);
    cmdline_init(boot_info.cmdline); // options (test mode, nosmp, ...)
    console_init();                  // COM1 and VGA text
    kprintf("kernel: booting, command line \"%s\"\n", boot_info.cmdline);
    idt_init(); // exception and interrupt gates
    idt_load();
    if (!mb_ok)
        panic("boot: bad multiboot2 information (magic %#x)", magic);
    pmm_init(&boot_info); // physical pages from the memory map
    vm_init();            // kernel page tables, direct map
    sysmap_init();        // the window for system-space mappings (profile buffers)
    ksym_init(boot_info.elf.num, boot_info.elf.entsize, boot_info.elf.shndx,
              phys_to_virt(boot_info.elf.sections)); // symbols for backtraces
    gdt_init_cpu(&cpus[0], ist_stacks());            // GDT, TSS and IST stacks
    kprintf("mem: %lu MiB usable, %lu pages free\n", pmm_usable_count() * PAGE_SIZE >> 20,
            pmm_free_count());
    acpi_init(boot_info.rsdp, cmdline_has("noacpi") ? 0 : boot_info.rsdp_version,
              lapic_boot_id()); // MADT
    pic_disable();              // 8259s remapped and masked
    lapic_init_bsp();           // xAPIC or x2APIC
    lapic_init_cpu();
    cpus[0].apic_id = lapic_id();
    kprintf("lapic: %s mode, boot CPU APIC id %u\n", lapic_x2apic() ? "x2APIC" : "xAPIC",
            cpus[0].apic_id);
    ioapic_init();      // every IOAPIC input masked
    clock_calibrate();  // TSC and LAPIC timer frequencies
    smp_init_ipis();    // cross-CPU call vector
    timer_init_cpu();   // per-CPU periodic timers on the LAPIC timer
    sched_init_cpu();   // this code becomes CPU 0's idle thread; the scheduler tick
    syscall_init_cpu(); // syscall/sysret MSRs
    uaccess_init_cpu(); // SMEP, SMAP
    fpu_init_cpu();     // SSE for ring 3
    cpu_online(&cpus[0]);
    sti();
    serial_enable_irq(console_input); // console input from COM1
    keyboard_init(console_input);     // and from the PS/2 keyboard
    smp_boot_aps(ap_main);            // every other CPU: "smp: N CPUs online"
    pmi_register(pmc_pmi_handler);    // the performance-monitoring interrupt (pmi_entry)
    pmc_pmi_choose();                 // pmi=nmi: the LVTPC delivers NMIs
    pmc_init();                       // "pmc: interface <emon|amd64|none>: ..."
    profile_init();                   // profile objects and the sample fan-out over the HAL
    hwpmc_init();                     // PMC objects, their log and loggers over the fan-out
    ramdisk_init();                   // GRUB modules are the files
    virtio_console_init();            // the host's recording file, when QEMU offers one
    process_init();                   // ring-3 faults kill processes
    print_init_time();                // "boot: kernel init took ..."

    char test[32];
    if (cmdline_get("test", test, sizeof test) && strcmp(test, "init") != 0)
        selftest_run(test);     // kernel self-test: never returns
    process_watch(init_exited); // init's end stops the machine or restarts it
    start_init();               // the first process (the shell)
    sched_idle();
}

// The first process: init=PROG (default sh), privileged. With test=init the
// machine stops when it exits, with its exit status as the verdict.
static char init_line[128] = "sh";
static uint32_t init_pid;

static void start_init(void)
{
    cmdline_get("init", init_line, sizeof init_line);
    char line[sizeof init_line];
    memcpy(line, init_line, sizeof line);
    const char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (char *p = line; *p && argc < MAX_ARGS;) { // init=a,b,c gives argv a b c
        argv[argc++] = p;
        while (*p && *p != ',')
            p++;
        if (*p)
            *p++ = '\0';
    }
    struct process *p;
    NTSTATUS s = process_spawn(argv[0], argv, argc, 0, 0, true, &p);
    if (!NT_SUCCESS(s)) {
        kprintf("init: cannot start %s: status %#x\n", argv[0], (uint32_t)s);
        if (cmdline_test_mode())
            qemu_exit(QEMU_EXIT_FAILURE);
        return;
    }
    init_pid = p->pid;
    object_unref(&p->obj); // nobody waits on init through a handle
}

// A process watcher (process.h): when init has exited, stop the machine in
// test mode or start it again.
static void init_exited(struct process *p, enum process_event event)
{
    if (event != PROCESS_EXITED || p->pid != init_pid)
        return;
    kprintf("init: %s exited with status %d\n", init_line, p->exit_status);
    if (cmdline_test_mode())
        qemu_exit(p->exit_status == 0 ? QEMU_EXIT_SUCCESS : QEMU_EXIT_FAILURE);
    start_init(); // a shell that exits comes back
}

// Each AP arrives here from smp.c's ap_entry, on the kernel page tables.
void NORETURN ap_main(struct cpu *c)
{
    gdt_init_cpu(c, ist_stacks());
    idt_load();
    lapic_init_cpu();
    timer_init_cpu();
    sched_init_cpu();
    syscall_init_cpu();
    uaccess_init_cpu();
    fpu_init_cpu();
    cpu_online(c);
    sched_idle();
}
