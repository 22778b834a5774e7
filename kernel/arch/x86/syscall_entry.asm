; The `syscall` entry: from ring 3 to syscall_dispatch (syscall.c) and back.
;
; On entry RCX = user RIP, R11 = user RFLAGS, RSP = the user stack, GS = the
; user's; IF is clear (FMASK). We switch to the thread's kernel stack (per-CPU
; kernel_rsp) and build a struct trapframe exactly like an interrupt would, so
; the rest of the kernel sees one frame layout. The return uses sysret: the
; frame's RIP is always a user address here. The struct cpu offsets (CPU_*),
; the trap frame's (TF_*) and the user selectors (SEL_*, gdt.h) come from
; asm-offsets.inc, generated from C (asm_offsets.c).

%define SYSCALL_FRAME_VECTOR 0x100      ; not a real vector: marks a syscall frame

%include "asm-offsets.inc"
%include "frame.inc"

section .text
global syscall_entry:function
extern syscall_dispatch

syscall_entry:
    swapgs
    mov [gs:CPU_USER_RSP_SCRATCH], rsp
    mov rsp, [gs:CPU_KERNEL_RSP]
    push SEL_UDATA                      ; ss
    push qword [gs:CPU_USER_RSP_SCRATCH] ; rsp
    push r11                            ; rflags
    push SEL_UCODE                      ; cs
    push rcx                            ; rip
    push 0                              ; error code
    push SYSCALL_FRAME_VECTOR
    PUSH_GPRS
    mov rdi, rsp
    xor ebp, ebp                        ; the user's frames are not the kernel's
    call syscall_dispatch               ; returns with interrupts off
    POP_GPRS
    add rsp, TF_RIP - TF_VECTOR         ; vector, error code
    pop rcx                             ; user rip
    add rsp, TF_RFLAGS - TF_CS          ; cs
    pop r11                             ; user rflags
    mov rsp, [rsp]                      ; user rsp (the frame's rsp, on top now)
    swapgs
    o64 sysret
