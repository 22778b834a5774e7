; The 256 interrupt entry stubs and the common path to trap() (trap.c).
;
; Each stub makes the frame uniform (a zero error code where the CPU pushes
; none), pushes its vector number and jumps to isr_common, which saves the
; general registers in struct trapframe order (trapframe.h), switches GS to
; the kernel's per-CPU base when the interrupt came from ring 3, and calls
; trap(frame). Offsets into struct trapframe (TF_*), struct intr_frame (IF_*)
; and struct cpu (CPU_*) come from asm-offsets.inc, generated from C
; (asm_offsets.c).

%include "asm-offsets.inc"
%include "frame.inc"

section .text
extern trap

%macro STUB 1
align 16
isr_stub_%1:
%if %1 = 8 || (%1 >= 10 && %1 <= 14) || %1 = 17 || %1 = 21 || %1 = 29 || %1 = 30
%else
    push 0                              ; no error code from the CPU
%endif
    push %1
    jmp isr_common
%endmacro

%assign v 0
%rep 256
    STUB v
%assign v v + 1
%endrep

isr_common:                             ; rsp points at the frame's vector
    test qword [rsp + TF_CS - TF_VECTOR], 3
    jz .from_kernel_in
    swapgs
.from_kernel_in:
    PUSH_GPRS
    mov rdi, rsp
    cld
    call trap
global trap_return
trap_return:
    POP_GPRS
    test qword [rsp + TF_CS - TF_VECTOR], 3
    jnz .to_user
    cmp dword [gs:CPU_NMI_DEPTH], 0     ; the kernel's GS: read before any swapgs
    jne .in_nmi
    add rsp, TF_RIP - TF_VECTOR         ; vector and error code
    iretq
.to_user:
    swapgs
    add rsp, TF_RIP - TF_VECTOR
    iretq

; An exception taken inside an NMI handler (a fault a fixup covers): back to
; the handler without IRET, which would unblock NMIs while the NMI's frame is
; still in use on its IST stack (nmi.h; Intel SDM vol. 3A §6.7.1). Same ring,
; same stack, interrupts off: the interrupted rip goes just below the
; interrupted rsp, rax below it; then rflags, that rsp, and ret. Those two
; words may only overlap the frame's ss and rsp, read before they are written.
.in_nmi:
    mov [rsp], rax                      ; scratch: the vector's word
    mov [rsp + TF_ERROR - TF_VECTOR], rcx
    mov rax, [rsp + TF_RSP - TF_VECTOR]
    mov rcx, [rsp + TF_RIP - TF_VECTOR]
    mov [rax - 8], rcx                  ; the return address
    mov rcx, [rsp]
    mov [rax - 16], rcx                 ; the interrupted rax
    push qword [rsp + TF_RFLAGS - TF_VECTOR]
    popfq
    mov rcx, [rsp + TF_ERROR - TF_VECTOR]
    lea rsp, [rax - 16]
    pop rax
    ret

; The lean entries: timer_entry, the LAPIC timer's vector (VEC_TIMER), the
; one interrupt every CPU takes thousands of times a second, ProfileTime's
; included; and pmi_entry, the performance-monitoring interrupt's (VEC_PMI),
; the other way a sample arrives (idt.c installs both). Their handlers,
; timer_interrupt (timer.c) and pmi_interrupt (trap.c), need only the CPU's
; interrupt frame and the interrupted rbp (struct intr_frame, trapframe.h:
; rbp pushed just below the CPU's words, where a call-chain walk starts), so
; only the registers the System V AMD64 ABI lets a called function clobber are
; saved (rax, rcx, rdx, rsi, rdi, r8-r11; ABI section 3.2.1): the handler
; preserves the rest itself, and so does a context switch it may lead to on
; the way back to ring 3. The kernel is compiled for an 8-byte aligned stack
; (Makefile: -mpreferred-stack-boundary=3, as Linux does), so the call needs
; no padding after the CPU's 5-word frame, rbp and the nine registers. The
; NMI's entry below builds the same frame.
;
; The way back to ring 3 is trap_return_to_user's (trap.h), written here: the
; CPU's need_resched flag and the running thread's kill flag are read while GS
; is still the kernel's, and only when one is set is the scheduler's hook
; called (it may switch threads; it returns here when this one runs again).
%define CPU_FRAME_CS (IF_CS - IF_RIP)   ; the CPU's frame: rip, cs, rflags, rsp, ss
%define LEAN_SAVED   LEAN_SAVED_BYTES   ; nine registers below struct intr_frame (trapframe.h)

%macro LEAN_SAVE 0                      ; rbp (struct intr_frame begins here), then the nine
    push rbp
    push rax
    push rcx
    push rdx
    push rsi
    push rdi
    push r8
    push r9
    push r10
    push r11
%endmacro

%macro LEAN_INVOKE 1                    ; call %1(struct intr_frame *) over a LEAN_SAVE
    lea rdi, [rsp + LEAN_SAVED]
    cld
    call %1
%endmacro

%macro LEAN_CALL 1                      ; save, call %1(struct intr_frame *); LEAN_RESTORE after
    LEAN_SAVE
    LEAN_INVOKE %1
%endmacro

%macro LEAN_RESTORE 0
    pop r11
    pop r10
    pop r9
    pop r8
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rax
    pop rbp
%endmacro

; A lean entry %1 calling %2(const struct intr_frame *).
%macro LEAN_ENTRY 2
global %1
extern %2
align 16
%1:
    test byte [rsp + CPU_FRAME_CS], 3
    jnz .from_user
    LEAN_CALL %2
    LEAN_RESTORE
    iretq
.from_user:
    swapgs
    LEAN_CALL %2
    cmp byte [gs:CPU_NEED_RESCHED], 0
    jne lean_user_work
    mov rax, [gs:CPU_KILL_PENDING]
    cmp byte [rax], 0
    jne lean_user_work
    LEAN_RESTORE
    swapgs
    iretq
%endmacro

LEAN_ENTRY timer_entry, timer_interrupt
LEAN_ENTRY pmi_entry, pmi_interrupt

; While the hook runs, this thread's user registers are in the lean frame,
; not in a struct trapframe: a sample taken meanwhile finds them by the hook's
; return address just below it (pmc/hwpmc/callchain.c).
extern lean_user_work_hook
lean_user_work:
    call lean_user_work_hook            ; trap.c: the hook, with ring-3 time stopped
global lean_user_work_return
lean_user_work_return:
    LEAN_RESTORE
    swapgs
    iretq

; nmi_entry: the NMI's gate (IST_NMI), never through trap(): see nmi.h. As
; timer_entry, it saves rbp and the nine registers a called function may
; clobber (the handlers preserve the rest themselves) and hands nmi_dispatch
; the struct intr_frame built in place. GS is the kernel's when MSR_GS_BASE
; holds a kernel (upper-half) address; otherwise swapgs now and again before
; the iretq: the two cases are two copies of the call, so nothing needs to
; remember which one it was.
global nmi_entry
extern nmi_dispatch
align 16
nmi_entry:
    LEAN_SAVE
    mov ecx, MSR_GS_BASE
    rdmsr
    test edx, edx
    js .kernel_gs
    swapgs
    LEAN_INVOKE nmi_dispatch
    swapgs
    LEAN_RESTORE
    iretq
.kernel_gs:
    LEAN_INVOKE nmi_dispatch
    LEAN_RESTORE
    iretq

section .rodata
global isr_stubs
align 8
isr_stubs:
%assign v 0
%rep 256
    dq isr_stub_ %+ v
%assign v v + 1
%endrep
