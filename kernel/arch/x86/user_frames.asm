; Copying a process's frame-pointer chain from an interrupt, surviving faults.
;
; user_frames_walk: fp in rdi, out in rsi, end in rdx (core/user_peek.h calls it)
;
; Each frame of the chain is two words at fp: the caller's frame pointer
; (next) and the return address, which is stored at *out++. The walk goes on
; while next > fp as signed numbers: frames only go up the stack, and a
; kernel-half address is negative, so it is never followed; the walk stops at
; main's frame (next = 0), at a loop or garbage, and when out reaches end.
; fp itself must already be a user-half address (hwpmc/callchain.h checks the first
; one). A read that faults (an unmapped page, or a non-canonical address: #PF
; or #GP) resumes through .fixup_table at .fault (trap.c's fault_fixup).
; With SMAP on the caller brackets the call with stac/clac.
;
; Returns in rax out past the last frame stored, and in rdx how the walk
; ended: 0 at main's frame (whose return address, into crt0, is taken back),
; 1 cut (depth, loop, garbage), 3 cut because a read faulted (user_peek.h:
; USER_FRAMES_CUT, USER_FRAMES_UNREADABLE). rcx and rsi are clobbered; no other
; register is touched. Seven instructions a frame: out is kept as its distance
; to end, counting up to 0, so one add both moves it and finds the end.

section .text
global user_frames_walk:function (user_frames_walk.end - user_frames_walk)

user_frames_walk:
    sub rsi, rdx                        ; rsi counts up to 0: out - end, negative while room
    jz .cut
.frame:                                 ; two frames a turn: fp in rdi, then in rax
.read_next:
    mov rax, [rdi]                      ; next
.read_ret:
    mov rcx, [rdi + 8]                  ; return address
    mov [rdx + rsi], rcx
    cmp rax, rdi
    jle .stop                           ; signed: not further up the user stack
    add rsi, 8
    jz .cut                             ; out reached end
.read_next2:
    mov rdi, [rax]
.read_ret2:
    mov rcx, [rax + 8]
    mov [rdx + rsi], rcx
    cmp rdi, rax
    jle .stop2
    add rsi, 8
    jnz .frame
.cut:
    lea rax, [rdx + rsi]
    mov edx, 1
    ret
.stop2:
    mov rax, rdi
.stop:                                  ; the frame just stored is the last one
    test rax, rax
    jnz .cut_stored
    lea rax, [rdx + rsi]                ; main's frame: drop its return into crt0
    xor edx, edx
    ret
.cut_stored:
    lea rax, [rdx + rsi + 8]
    mov edx, 1
    ret
.fault:                                 ; nothing stored for the frame being read
    lea rax, [rdx + rsi]
    mov edx, 3
    ret
.end:

section .fixup_table align=8
    dq .read_next, .fault
    dq .read_ret, .fault
    dq .read_next2, .fault
    dq .read_ret2, .fault
