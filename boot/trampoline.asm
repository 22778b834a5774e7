; AP trampoline: a started processor begins here in 16-bit real mode and leaves
; in 64-bit mode on its own stack in ap_entry (smp.c).
;
; smp.c copies this blob to physical TRAMPOLINE_ADDR (a page below 1 MiB: the
; SIPI vector is the page number) and fills the parameter block before each
; SIPI (struct trampoline_params, arch/x86/trampoline.h). Steps:
;   16-bit: load a temporary GDT, set CR0.PE, far jump to 32-bit code
;   32-bit: PAE, CR3 = the boot page tables (they identity-map this page),
;           EFER.LME (and NXE), CR0.PG, far jump to 64-bit code
;   64-bit: jump to the higher-half ap_entry with RSP = the CPU's stack
;
; The address, the parameter block's place (TRAMPOLINE_PARAMS_OFFSET), its
; size (TP_SIZE) and its fields (TP_*: cr3, stack, entry, cpu, efer) come from
; asm-offsets.inc, generated from trampoline.h (asm_offsets.c).

%include "asm-offsets.inc"

bits 16
org TRAMPOLINE_ADDR

start:
    jmp short real_mode
    times TRAMPOLINE_PARAMS_OFFSET - ($ - start) db 0   ; negative (an error) if the jmp outgrew it
params:
    times TP_SIZE db 0

real_mode:
    cli
    cld
    xor ax, ax
    mov ds, ax
    lgdt [gdt_ptr]
    mov eax, cr0
    or eax, 1                           ; PE
    mov cr0, eax
    jmp 0x08:protected_mode

bits 32
protected_mode:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov eax, cr4
    or eax, 1 << 5                      ; PAE
    mov cr4, eax
    mov eax, [params + TP_CR3]          ; below 4 GiB: the low half is all of it
    mov cr3, eax
    mov ecx, 0xC0000080                 ; EFER
    rdmsr
    or eax, [params + TP_EFER]
    wrmsr
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16)       ; PG, WP
    mov cr0, eax
    jmp 0x18:long_mode

bits 64
long_mode:
    xor eax, eax
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov rsp, [params + TP_STACK]
    mov rdi, [params + TP_CPU]
    xor ebp, ebp
    push 0                              ; a zero return address ends backtraces
    jmp [params + TP_ENTRY]

align 8
gdt:
    dq 0
    dq 0x00CF9A000000FFFF                ; 0x08: 32-bit code
    dq 0x00CF92000000FFFF                ; 0x10: data
    dq 0x00AF9A000000FFFF                ; 0x18: 64-bit code
gdt_end:
gdt_ptr:
    dw gdt_end - gdt - 1
    dd gdt
