; The assembled AP trampoline (boot/trampoline.asm), embedded in the kernel
; image between __ap_trampoline_start and __ap_trampoline_end (linker.ld).
section .ap_trampoline progbits alloc noexec nowrite align=16
incbin "trampoline.bin"
