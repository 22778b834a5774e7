; The reference for boot-time measurements: the smallest multiboot2 kernel,
; which prints one line on COM1 and exits QEMU. bench.py times a boot of this
; against a boot of build/os.iso under the same conditions.
bits 32
section .text
align 8
header:
    dd 0xE85250D6, 0, header_end - header, -(0xE85250D6 + (header_end - header))
    dw 0, 0
    dd 8
header_end:
global _start
_start:
    mov esi, msg
    mov dx, 0x3F8
.next:
    lodsb
    test al, al
    jz .done
    out dx, al
    jmp .next
.done:
    mov dx, 0xF4
    mov al, 0x10
    out dx, al
.stop:
    hlt
    jmp .stop
msg: db "hello", 13, 10, 0
