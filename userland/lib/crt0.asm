; Process entry. The kernel starts every program here with rsp pointing at
; argc (8 bytes), then argv[0..argc-1], a NULL, then the strings themselves.
; We call main(argc, argv) and hand its return value to SysExit, so returning
; from main ends the process like exit() does (exit also flushes stdout).

bits 64
section .text.start progbits alloc exec nowrite align=16

global _start:function
extern main
extern exit

_start:
    xor ebp, ebp            ; the outermost frame: backtraces stop at rbp = 0
    mov rdi, [rsp]          ; argc
    lea rsi, [rsp + 8]      ; argv
    and rsp, -16            ; the ABI wants rsp 16-byte aligned before a call
    call main
    mov edi, eax
    call exit               ; flushes stdout, then SysExit; never returns
    ud2
