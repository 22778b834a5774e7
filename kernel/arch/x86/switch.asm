; Kernel thread switch (sched.c).
;
; switch_context(uint64_t *save_rsp, uint64_t load_rsp): push the callee-saved
; registers on the current stack, save RSP, load the other thread's RSP, pop its
; registers and return into it. A new thread's stack is prepared by
; thread_create_user to "return" into thread_start.

section .text
global switch_context:function, thread_start:function
extern thread_first_run, trap_return

switch_context:
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    mov [rdi], rsp
    mov rsp, rsi
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret

; First code of a new thread: RSP points at its trap frame.
thread_start:
    mov rdi, rsp
    call thread_first_run               ; release the run-queue lock, as after any switch
    jmp trap_return                     ; into ring 3 through the trap frame
