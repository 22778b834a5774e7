// The constants the assembly takes from C: struct offsets and sizes, and values
// a header already defines, so that no .asm file spells one by hand.
//
// Never linked: the Makefile compiles this file with -S, and each ASM_CONST
// leaves one line `.ascii "=asm-const NAME VALUE"` in the compiler's output
// (the "i" constraint makes VALUE a compile-time constant and the c operand
// modifier prints it bare, without the immediate's `$`); a sed rule turns
// those lines into `%define NAME (VALUE)` in $(BUILD)/asm-offsets.inc, which
// the .asm files %include. Linux derives its assembly offsets the same way
// (Kbuild's asm-offsets: include/linux/kbuild.h, arch/x86/kernel/asm-offsets.c).
#include "lib/param.h"
#include "lib/types.h"

#include "arch/x86/gdt.h"
#include "arch/x86/msr.h"
#include "arch/x86/percpu.h"
#include "arch/x86/trampoline.h"
#include "arch/x86/trapframe.h"

#define ASM_CONST(name, value) \
    __asm__ volatile("\n.ascii \"=asm-const " #name " %c0\"" : : "i"((long long)(value)))
#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)

// The widths the assembly's operands assume.
_Static_assert(FIELD_SIZE(struct cpu, need_resched) == 1, "vectors.asm: cmp byte");
_Static_assert(FIELD_SIZE(struct cpu, kill_pending) == 8, "vectors.asm: a pointer to a byte");
_Static_assert(FIELD_SIZE(struct cpu, nmi_depth) == 4, "vectors.asm: cmp dword");
_Static_assert(FIELD_SIZE(struct cpu, kernel_rsp) == 8, "syscall_entry.asm: mov rsp");
_Static_assert(FIELD_SIZE(struct cpu, user_rsp_scratch) == 8, "syscall_entry.asm: mov rsp");
_Static_assert(FIELD_SIZE(struct trampoline_params, cr3) == 8, "trampoline.asm");
_Static_assert(FIELD_SIZE(struct trampoline_params, efer) == 4, "trampoline.asm: or eax");

void asm_offsets(void);
void asm_offsets(void)
{
    // struct trapframe (trapframe.h): built and unwound by vectors.asm and
    // syscall_entry.asm, general registers first (frame.inc).
    ASM_CONST(TF_VECTOR, offsetof(struct trapframe, vector));
    ASM_CONST(TF_ERROR, offsetof(struct trapframe, error));
    ASM_CONST(TF_RIP, offsetof(struct trapframe, rip));
    ASM_CONST(TF_CS, offsetof(struct trapframe, cs));
    ASM_CONST(TF_RFLAGS, offsetof(struct trapframe, rflags));
    ASM_CONST(TF_RSP, offsetof(struct trapframe, rsp));
    ASM_CONST(TF_SIZE, sizeof(struct trapframe));

    // struct intr_frame (trapframe.h): built in place by timer_entry.
    ASM_CONST(IF_RIP, offsetof(struct intr_frame, rip));
    ASM_CONST(IF_CS, offsetof(struct intr_frame, cs));
    ASM_CONST(LEAN_SAVED_BYTES, LEAN_SAVED_BYTES);

    // struct cpu (percpu.h), read through GS.
    ASM_CONST(CPU_KERNEL_RSP, offsetof(struct cpu, kernel_rsp));
    ASM_CONST(CPU_USER_RSP_SCRATCH, offsetof(struct cpu, user_rsp_scratch));
    ASM_CONST(CPU_NEED_RESCHED, offsetof(struct cpu, need_resched));
    ASM_CONST(CPU_KILL_PENDING, offsetof(struct cpu, kill_pending));
    ASM_CONST(CPU_NMI_DEPTH, offsetof(struct cpu, nmi_depth));

    // The MSR the NMI entry reads to know whose GS is loaded (nmi.h).
    ASM_CONST(MSR_GS_BASE, (int32_t)MSR_GS_BASE); // as a signed 32-bit immediate for mov ecx

    // The user selectors (gdt.h) of a syscall's trap frame.
    ASM_CONST(SEL_UCODE, SEL_UCODE);
    ASM_CONST(SEL_UDATA, SEL_UDATA);

    // The AP trampoline (trampoline.h): its address and parameter block.
    ASM_CONST(TRAMPOLINE_ADDR, TRAMPOLINE_ADDR);
    ASM_CONST(TRAMPOLINE_PARAMS_OFFSET, TRAMPOLINE_PARAMS_OFFSET);
    ASM_CONST(TP_CR3, offsetof(struct trampoline_params, cr3));
    ASM_CONST(TP_STACK, offsetof(struct trampoline_params, stack));
    ASM_CONST(TP_ENTRY, offsetof(struct trampoline_params, entry));
    ASM_CONST(TP_CPU, offsetof(struct trampoline_params, cpu));
    ASM_CONST(TP_EFER, offsetof(struct trampoline_params, efer));
    ASM_CONST(TP_SIZE, sizeof(struct trampoline_params));

    // Where the kernel image is linked (param.h; linker.ld): boot/entry.asm.
    ASM_CONST(KERNEL_VMA, KERNEL_VMA);
}
