; SPDX-License-Identifier: MIT
; loops.asm: loops over data whose rounds the branch engine computes
; before they run (docs/engine.md: "Loops over data"), each beside one it
; must leave to the CPU: strlen and strcmp run to their exit; a table
; walk that tests and sets bits of a bitmap on the stack (a bit far from
; its operand, a bit the walk itself set); a round that stores what the
; next one loads; a register a pop restores from the slot the stretch
; pushed it to; a loop longer than a stretch.  Records: the `@bts` comments
; (guest-stub/README.md).

%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"

LONG_RUN equ 3000

section .text
bits 64
default rel

main64:
; --- strlen over "hello, world": 12 rounds, then out -----------------------
        lea rsi, [hello]
        xor ecx, ecx
.s1:    cmp byte [rsi+rcx], 0
.s1_j:  je .s1_x
        inc ecx
.s1_b:  jmp .s1
        ; @repeat 12
        ; @bts .s1_b -> .s1
        ; @end
        ; @bts .s1_j -> .s1_x
.s1_x:
; --- strcmp: equal for 9 bytes, then apart ---------------------------------
        lea rsi, [str_a]
        lea rdi, [str_b]
.s2:    movzx eax, byte [rsi]
        movzx edx, byte [rdi]
        cmp eax, edx
.s2_ne: jne .s2_x
        test eax, eax
        jz .s2_x
        inc rsi
        inc rdi
.s2_b:  jmp .s2
        ; @repeat 9
        ; @bts .s2_b -> .s2
        ; @end
        ; @bts .s2_ne -> .s2_x
.s2_x:
; --- a table walk: (feature, depends) pairs, a bitmap of disabled ones ------
        sub rsp, 16
        mov qword [rsp], 0
        mov qword [rsp + 8], 0
        bts qword [rsp], 3
        lea rbx, [deps]
.t1:    mov eax, [rbx + 4]
        bt qword [rsp], rax             ; the walk's own bts may have set it: the CPU decides
.t1_c:  jae .t1_n
        mov eax, [rbx]
        bts qword [rsp], rax            ; 70: in the bitmap's second qword
.t1_n:  add rbx, 8
        mov eax, [rbx]
        test eax, eax
.t1_j:  jnz .t1
        ; @bts .t1_c -> .t1_n
        ; @bts .t1_j -> .t1
        ; @bts .t1_j -> .t1
        ; @bts .t1_j -> .t1
        ; @bts .t1_c -> .t1_n
        ; @bts .t1_j -> .t1
        bt qword [rsp + 8], 6           ; 70 = 64 + 6
.t2:    jc .t2_t                        ; @bts -> .t2_t
        ud2
.t2_t:  add rsp, 16
; --- each round stores what the next one loads ------------------------------
        lea rbx, [buf]
        mov byte [rbx], 0
.w1:    mov al, [rbx]
        inc al
        mov [rbx + 1], al
        inc rbx
        cmp al, 5
.w1_j:  jne .w1                         ; @bts -> .w1 x4
; --- a pop restores a register from the slot the stretch pushed -------------
        mov ebx, 3
        push rbx
        mov ebx, 9
        pop rbx
        cmp ebx, 3
.p1:    je .p1_t                        ; @bts -> .p1_t
        ud2
.p1_t:
; --- strlen over LONG_RUN bytes: longer than one stretch --------------------
        lea rsi, [long_run]
        xor ecx, ecx
.s3:    cmp byte [rsi+rcx], 0
.s3_j:  je .s3_x
        inc ecx
.s3_b:  jmp .s3
        ; @repeat 3000
        ; @bts .s3_b -> .s3
        ; @end
        ; @bts .s3_j -> .s3_x
.s3_x:  cmp ecx, LONG_RUN
.s3_ok: je .s3_t                        ; @bts -> .s3_t
        ud2
.s3_t:
        DEBUG_EXIT 0                    ; @exit 0

section .data
hello:  db "hello, world", 0
str_a:  db "vbts-trace", 0
str_b:  db "vbts-track", 0
align 4
deps:   dd 5, 1, 7, 3, 9, 7, 12, 2, 70, 9, 0, 0
buf:    times 8 db 0
long_run:
        times LONG_RUN db 'a'
        db 0
