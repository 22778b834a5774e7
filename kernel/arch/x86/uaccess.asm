; Copying between the kernel and user memory, surviving faults.
;
; uaccess_copy(dst, src, n) copies with one `rep movsb`. If that faults (an
; unmapped user page), trap.c's fault_fixup finds the instruction in
; .fixup_table and resumes at .fault, which returns 1; success returns 0. With
; SMAP on, user pages are reachable only between stac and clac.
;
; smap_enabled (a C bool, one byte) lives here, with the code that reads it:
; core/uaccess.c sets it once SMAP is on (uaccess_init_cpu), and
; core/user_peek.h reads it too. Defined in this layer, it is a reference
; down from core, not one up from arch.

section .bss
global smap_enabled:data 1
smap_enabled: resb 1

section .text
global uaccess_copy:function

uaccess_copy:
    mov rcx, rdx
    cmp byte [rel smap_enabled], 0
    je .copy
    stac
.copy:
.insn:
    rep movsb
    call .clac
    xor eax, eax
    ret
.fault:
    call .clac
    mov eax, 1
    ret
.clac:
    cmp byte [rel smap_enabled], 0
    je .done
    clac
.done:
    ret

section .fixup_table align=8
    dq .insn, .fault
