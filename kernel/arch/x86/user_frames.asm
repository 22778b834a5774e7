; Copying a process's frame-pointer chain from an interrupt, surviving faults.
;
; user_frames_walk: fp in rdi, out in rsi, end in rdx (core/user_peek.h calls it)
;
; Each frame of the chain is two words at fp: the caller's frame pointer
; (next) and the return address, which is stored at *out++. The walk goes on
; while next > fp as signed numbers: frames only go up the stack, and a
; kernel-half address is negative, so it is never followed; the walk stops at
; main's frame (next = 0), at a loop or garbage, and when out reaches end.
; fp itself must already be a user-half address (pmc/hwpmc/callchain.c checks
; the first one). A read that faults (an unmapped page, or a non-canonical
; address: #PF or #GP) resumes through .fixup_table at that read's fault label
; (trap.c's fault_fixup). With SMAP on the caller brackets the call with
; stac/clac.
;
; Returns in rax out past the last frame stored, and in rdx how the walk
; ended: 0 at main's frame (whose return address, into crt0, is taken back),
; 1 cut (depth, loop, garbage), 3 cut because a read faulted (user_peek.h:
; USER_FRAMES_CUT, USER_FRAMES_UNREADABLE). rcx and rsi are clobbered; no other
; register is touched.
;
; Five instructions a frame, and three more every eight: out is kept as its
; distance to end (rsi, negative while there is room), and while eight slots
; or more are left, eight frames are stored at fixed offsets from it with no
; room check between them. The last few slots take one frame a turn.

%define UNROLL 8

section .text
global user_frames_walk:function (user_frames_walk.end - user_frames_walk)

; One frame: %1 its slot (0..UNROLL-1, an offset from out), %2 the register
; holding fp, %3 the one that receives next.
%macro FRAME 3
.read_next%1:
    mov %3, [%2]                        ; next
.read_ret%1:
    mov rcx, [%2 + 8]                   ; the return address
    mov [rdx + rsi + 8 * %1], rcx
    cmp %3, %2
    jle .stop%1                         ; signed: not further up the user stack
%endmacro

user_frames_walk:
    sub rsi, rdx                        ; rsi counts up to 0: out - end
    cmp rsi, -8 * UNROLL
    jg .few
.many:                                  ; UNROLL slots or more: fp in rdi
%assign k 0
%rep UNROLL / 2
    FRAME k, rdi, rax
%assign k k + 1
    FRAME k, rax, rdi
%assign k k + 1
%endrep
    add rsi, 8 * UNROLL
    cmp rsi, -8 * UNROLL
    jle .many
.few:                                   ; fewer than UNROLL slots: one frame a turn
    test rsi, rsi
    jz .cut
.one:
.read_next_one:
    mov rax, [rdi]
.read_ret_one:
    mov rcx, [rdi + 8]
    mov [rdx + rsi], rcx
    cmp rax, rdi
    jle .stop_one
    mov rdi, rax
    add rsi, 8
    jnz .one
.cut:                                   ; out reached end
    lea rax, [rdx + rsi]
    mov edx, 1
    ret

; A stop after storing the frame of slot k: rcx its address, rax next.
%assign k 0
%rep UNROLL
.stop %+ k:
%if k % 2 = 1
    mov rax, rdi
%endif
    lea rcx, [rdx + rsi + 8 * k]
    jmp .stopped
%assign k k + 1
%endrep
.stop_one:
    lea rcx, [rdx + rsi]
.stopped:
    test rax, rax
    jnz .cut_stored
    mov rax, rcx                        ; main's frame: drop its return into crt0
    xor edx, edx
    ret
.cut_stored:
    lea rax, [rcx + 8]
    mov edx, 1
    ret

; A read of slot k's frame faulted: nothing stored for it.
%assign k 0
%rep UNROLL
.fault %+ k:
    lea rax, [rdx + rsi + 8 * k]
    mov edx, 3
    ret
%assign k k + 1
%endrep
.fault_one:
    lea rax, [rdx + rsi]
    mov edx, 3
    ret
.end:

section .fixup_table align=8
%assign k 0
%rep UNROLL
    dq .read_next %+ k, .fault %+ k
    dq .read_ret %+ k, .fault %+ k
%assign k k + 1
%endrep
    dq .read_next_one, .fault_one
    dq .read_ret_one, .fault_one
