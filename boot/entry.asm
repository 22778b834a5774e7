; Multiboot2 header and 32-bit entry: build boot page tables, enter long mode,
; jump to the higher-half kernel (kmain).
;
; GRUB leaves us in 32-bit protected mode, paging off, EAX = multiboot2 magic,
; EBX = physical address of the boot information. The kernel is linked at
; KERNEL_VMA + physical, so until paging is on we subtract KERNEL_VMA by hand
; (KERNEL_VMA: lib/param.h, by way of asm-offsets.inc).
;
; Boot page tables (replaced by vm_init's tables once kmain runs; the AP
; trampoline keeps using them to reach 64-bit mode):
;   PML4[0]   -> identity map of the first 4 GiB   (2 MiB pages)
;   PML4[256] -> the same 4 GiB at DIRECT_MAP_BASE
;   PML4[511] -> PDPT[510] -> the first 1 GiB at KERNEL_VMA

%include "asm-offsets.inc"
%define MB2_MAGIC  0xE85250D6
%define MB2_ARCH   0                    ; i386 protected mode
%define PTE_P      1
%define PTE_W      2
%define PTE_PS     0x80

section .multiboot2 progbits alloc noexec nowrite align=8
mb2_header:
    dd MB2_MAGIC, MB2_ARCH, mb2_header_end - mb2_header
    dd -(MB2_MAGIC + MB2_ARCH + (mb2_header_end - mb2_header))
    align 8                             ; entry address tag: jump here (physical)
    dw 3, 0
    dd 12
    dd _start - KERNEL_VMA
    align 8                             ; end tag
    dw 0, 0
    dd 8
mb2_header_end:

section .boot.bss nobits alloc write align=4096
global boot_pml4, boot_stack_top
boot_pml4:      resb 4096
boot_pdpt_low:  resb 4096
boot_pdpt_high: resb 4096
boot_pd:        resb 4096 * 4       ; 4 page directories = 4 GiB of 2 MiB pages
boot_stack:     resb 16384
boot_stack_top:

section .boot.text progbits alloc exec nowrite align=16
bits 32
global _start
_start:
    cli
    mov esp, boot_stack_top - KERNEL_VMA
    mov edi, eax                        ; multiboot2 magic (first argument of kmain)
    mov esi, ebx                        ; boot information, physical (second argument)

    cmp eax, 0x36D76289                 ; the bootloader's magic
    jne .no_multiboot

    ; Long mode needs CPUID leaf 0x80000001 EDX bit 29.
    mov eax, 0x80000000
    cpuid
    cmp eax, 0x80000001
    jb .no_long_mode
    mov eax, 0x80000001
    cpuid
    test edx, 1 << 29
    jz .no_long_mode

    ; Fill the four page directories with 2 MiB identity pages.
    push edi                            ; cpuid and the loops below clobber it
    mov edi, boot_pd - KERNEL_VMA
    mov eax, PTE_P | PTE_W | PTE_PS
    mov ecx, 2048
.fill_pd:
    mov [edi], eax
    mov dword [edi + 4], 0
    add eax, 0x200000
    add edi, 8
    loop .fill_pd

    ; PDPT_low[0..3] -> the four directories.
    mov edi, boot_pdpt_low - KERNEL_VMA
    mov eax, (boot_pd - KERNEL_VMA) + (PTE_P | PTE_W)
    mov ecx, 4
.fill_pdpt:
    mov [edi], eax
    add eax, 4096
    add edi, 8
    loop .fill_pdpt

    ; PDPT_high[510] -> the first directory (KERNEL_VMA maps physical 0).
    mov eax, (boot_pd - KERNEL_VMA) + (PTE_P | PTE_W)
    mov [boot_pdpt_high - KERNEL_VMA + 510 * 8], eax

    mov edi, boot_pml4 - KERNEL_VMA
    mov eax, (boot_pdpt_low - KERNEL_VMA) + (PTE_P | PTE_W)
    mov [edi], eax                      ; identity
    mov [edi + 256 * 8], eax            ; direct map
    mov eax, (boot_pdpt_high - KERNEL_VMA) + (PTE_P | PTE_W)
    mov [edi + 511 * 8], eax            ; kernel image
    pop edi

    ; PAE on, CR3, EFER.LME (and NXE when the CPU has NX), paging on.
    mov eax, cr4
    or eax, 1 << 5
    mov cr4, eax
    mov eax, boot_pml4 - KERNEL_VMA
    mov cr3, eax
    mov eax, 0x80000001
    cpuid
    mov ebx, 1 << 8                     ; LME
    test edx, 1 << 20
    jz .no_nx
    or ebx, 1 << 11                     ; NXE
.no_nx:
    mov ecx, 0xC0000080
    rdmsr
    or eax, ebx
    wrmsr
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16) | 1   ; PG, WP, PE
    mov cr0, eax

    lgdt [boot_gdt_ptr - KERNEL_VMA]
    jmp 0x08:(long_mode_low - KERNEL_VMA)

.no_multiboot:
    mov esi, msg_no_multiboot - KERNEL_VMA
    jmp early_die
.no_long_mode:
    mov esi, msg_no_long_mode - KERNEL_VMA
    jmp early_die

; Print the NUL-terminated string at ESI on COM1 and stop.
early_die:
    mov dx, 0x3F8
.next:
    lodsb
    test al, al
    jz .stop
    out dx, al
    jmp .next
.stop:
    cli
    hlt
    jmp .stop

bits 64
long_mode_low:
    mov rax, long_mode_high             ; leave the identity map for the higher half
    jmp rax

section .text
extern kmain
global long_mode_high:function
long_mode_high:
    xor eax, eax
    mov ss, ax
    mov ds, ax
    mov es, ax
    mov fs, ax
    mov gs, ax
    mov rsp, boot_stack_top
    xor ebp, ebp                        ; backtraces stop at a zero frame pointer
    mov edi, edi                        ; magic (zero-extend)
    mov esi, esi                        ; boot information, physical
    call kmain
.hang:
    cli
    hlt
    jmp .hang

section .boot.data progbits alloc write align=16
align 16
; A minimal GDT for the jump to 64-bit mode; gdt.c installs the real per-CPU ones.
global boot_gdt_ptr
boot_gdt:
    dq 0
    dq 0x00AF9A000000FFFF                ; 0x08: 64-bit code, ring 0
    dq 0x00CF92000000FFFF                ; 0x10: data, ring 0
boot_gdt_end:
boot_gdt_ptr:
    dw boot_gdt_end - boot_gdt - 1
    dq boot_gdt - KERNEL_VMA
msg_no_multiboot: db "boot: not started by a multiboot2 loader", 13, 10, 0
msg_no_long_mode: db "boot: this CPU has no long mode (x86-64)", 13, 10, 0
