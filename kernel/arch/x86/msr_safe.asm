; rdmsr and wrmsr that survive a #GP, for probing MSRs that may not exist.
;
; A hypervisor can advertise a PMU in CPUID and still fault its MSRs. If the
; rdmsr/wrmsr below raises #GP, trap.c's fault_fixup finds the instruction in
; .fixup_table and resumes at the matching .fault label, which returns false
; (0); success returns true (1). Same mechanism as uaccess.asm.
;
; bool rdmsr_safe(uint32_t msr, uint64_t *value)   edi = msr, rsi = value
; bool wrmsr_safe(uint32_t msr, uint64_t value)    edi = msr, rsi = value

section .text
global rdmsr_safe:function
global wrmsr_safe:function

rdmsr_safe:
    mov ecx, edi
.insn:
    rdmsr
    shl rdx, 32
    mov eax, eax                ; zero-extend the low half
    or rax, rdx
    mov [rsi], rax
    mov eax, 1
    ret
.fault:
    mov qword [rsi], 0
    xor eax, eax
    ret

wrmsr_safe:
    mov ecx, edi
    mov eax, esi
    mov rdx, rsi
    shr rdx, 32
.insn:
    wrmsr
    mov eax, 1
    ret
.fault:
    xor eax, eax
    ret

section .fixup_table align=8
    dq rdmsr_safe.insn, rdmsr_safe.fault
    dq wrmsr_safe.insn, wrmsr_safe.fault
