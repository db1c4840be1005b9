; SPDX-License-Identifier: MIT
; rewrite.asm: code that the guest rewrites between two runs of it.
;
; 32-bit protected mode, no paging.  The same code runs twice; between the
; runs the guest stores into it: a jmp to the next instruction becomes a
; 2-byte nop, a 2-byte nop becomes such a jmp, a jz becomes a jnz, and a
; call's displacement leads to another function.  QEMU translates each
; address again after the store, and tests/oracle/qemu-branches must read
; each run as the bytes it ran (it once read both as the last ones).  The
; stores lie in other straight-line code than the code they change, so a
; stretch of the branch engine never runs code it has changed
; (tests/gen's class smc has the cases where it does).  Records are in
; execution order (syntax: guest-stub/README.md); code a correct run skips
; is `ud2`.

%include "multiboot.inc"
%include "exit.inc"

section .text
bits 32

main32:
        xor ecx, ecx
        xor edx, edx
run:
p1:     jmp short p1_n          ; run 1: a jmp to the next instruction; run 2: 66 90
p1_n:
p2:     db 0x66, 0x90           ; run 1: a 2-byte nop; run 2: eb 00 (jmp short p2_n)
p2_n:
call1:  call f_one              ; its jz is a jnz in run 2
call1_r:
call2:  call f_a                ; run 2: call f_b
call2_r:
        mov word [p1], 0x9066
        mov word [p2], 0x00eb
        mov byte [f_j], 0x75            ; f_one's jz -> jnz
        mov dword [call2 + 1], f_b - call2_r
        inc ecx
        cmp ecx, 2
back:   jb run
        ; run 1:
        ; @bts p1 -> p1_n
        ; @bts call1 -> f_one
        ; @bts f_j -> f_t               (jz: ZF is 1)
        ; @bts f_t_ret -> call1_r
        ; @bts call2 -> f_a
        ; @bts f_a_ret -> call2_r
        ; @bts back -> run
        ; run 2:
        ; @bts p2 -> p2_n
        ; @bts call1 -> f_one
        ;                               (jnz: not taken)
        ; @bts f_nt_ret -> call1_r
        ; @bts call2 -> f_b
        ; @bts f_b_ret -> call2_r
        cmp edx, 0x1111                 ; each path once
chk:    jne fail                        ; not taken
        DEBUG_EXIT 0                    ; @exit 0
fail:   DEBUG_EXIT 0x7f

f_one:  xor eax, eax                    ; ZF = 1
f_j:    jz short f_t
        add edx, 0x100
f_nt_ret:
        ret
f_t:    inc edx
f_t_ret:
        ret

f_a:    add edx, 0x1000
f_a_ret:
        ret

f_b:    add edx, 0x10
f_b_ret:
        ret
