; SPDX-License-Identifier: MIT
; branches64.asm: near branches in 64-bit long mode.
;
; multiboot.inc and longmode.inc take the guest from the 32-bit multiboot
; entry into long mode (3 records), then: direct and indirect jumps and calls
; (register, memory, RIP-relative, tables, REX registers), ret and ret imm16,
; conditional jumps taken and not taken, loop/loope/loopne/jrcxz/jecxz,
; jumps and calls to the next instruction, a tail call and a small
; recursion, then debug-exit 0.  Records: the `@bts` comments
; (guest-stub/README.md).

%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"

section .text
bits 64
default rel

main64:
; --- direct jumps, and to the next instruction ---------------------------
.jmp8:  jmp short .jmp8_t               ; @bts -> .jmp8_t
        ud2
.jmp8_t:
.jmp32: jmp near .jmp32_t               ; @bts -> .jmp32_t
        ud2
.jmp32_t:
.next:  jmp short $+2                   ; @bts -> .next_t
.next_t:
.call5: call $+5                        ; @bts -> .call5_t
.call5_t:
        pop rax
        lea rbx, [.call5_t]
        cmp rax, rbx
.chk1:  jne fail                        ; not taken

; --- calls and returns ----------------------------------------------------
        xor eax, eax
.call1: call f_add1                     ; @bts -> f_add1
        ; @bts f_add1.ret -> .call1_r
.call1_r:
        push 0x11
        push 0x22
.call2: call f_sum2                     ; @bts -> f_sum2
        ; @bts f_sum2.ret -> .call2_r    (ret 16)
.call2_r:
        cmp rax, 0x33
.chk2:  jne fail                        ; not taken
        mov ecx, 3
.call3: call f_rec                      ; @bts -> f_rec  (f_rec(3) calls f_rec(2) .. f_rec(0))
        ; @bts f_rec.call -> f_rec x3
        ; @bts f_rec.jz -> f_rec.ret     (f_rec(0))
        ; @bts f_rec.ret -> f_rec.call_r x3
        ; @bts f_rec.ret -> .call3_r
.call3_r:
.call4: call f_tail                     ; @bts -> f_tail
        ; @bts f_tail.jmp -> f_add1      (tail call: f_add1 returns to .call4_r)
        ; @bts f_add1.ret -> .call4_r
.call4_r:
        mov rsi, rsp
        lea rdx, [stack_top]
        cmp rsi, rdx
.chk3:  jne fail                        ; not taken: the stack is balanced

; --- indirect jumps -----------------------------------------------------
        lea rax, [.jreg_t]
.jreg:  jmp rax                         ; @bts -> .jreg_t
        ud2
.jreg_t:
        lea r11, [.jr11_t]
.jr11:  jmp r11                         ; @bts -> .jr11_t
        ud2
.jr11_t:
.jrip:  jmp [ptr_jrip]                  ; @bts -> .jrip_t  (RIP-relative)
        ud2
.jrip_t:
        lea rbx, [jump_table]
        mov ecx, 1
.jtab:  jmp [rbx + rcx * 8]             ; @bts -> .case1
.case0: ud2
.case1: mov r9, jump_table
.jtab2: jmp [r9 + 16]                   ; @bts -> .case2
        ud2
.case2:

; --- indirect calls, and ret to a pushed address --------------------------
        xor eax, eax
        lea r10, [f_add1]
.cr10:  call r10                        ; @bts -> f_add1
        ; @bts f_add1.ret -> .cr10_r
.cr10_r:
.crip:  call [ptr_f_add1]               ; @bts -> f_add1
        ; @bts f_add1.ret -> .crip_r
.crip_r:
        push qword [ptr_f_add1]
.cstk:  call [rsp]                      ; @bts -> f_add1
        ; @bts f_add1.ret -> .cstk_r
.cstk_r:
        pop rdx
        cmp eax, 3
.chk4:  jne fail                        ; not taken
        lea rax, [.pret_t]
        push rax
.pret:  ret                             ; @bts -> .pret_t
        ud2
.pret_t:

; --- conditional jumps ------------------------------------------------------
        mov rax, -1
        test rax, rax                   ; SF = 1, ZF = 0
.js:    js .js_t                        ; @bts -> .js_t
        ud2
.js_t:
.jz:    jz fail                         ; not taken
.jns:   jns near fail                   ; not taken (rel32 form)
        mov r8, 1
        shl r8, 63                      ; r8 = 0x8000000000000000
        cmp r8, 0                       ; as signed: less
.jle:   jle near .jle_t                 ; @bts -> .jle_t  (rel32 form)
        ud2
.jle_t:
        mov ecx, 4
.dec:   dec ecx
.jnzb:  jnz .dec                        ; @bts -> .dec x3  (backward)

; --- loop, loope, loopne, jrcxz, jecxz ------------------------------------
        mov ecx, 4
.loop:  inc eax
.loop1: loop .loop                      ; @bts -> .loop x3
        mov ecx, 3
        xor edx, edx
.loopne:
        inc edx
        cmp edx, 2
.loopne1:
        loopne .loopne                  ; @bts -> .loopne  (ZF = 1 on the second round)
        mov ecx, 2
.loope: test eax, 0                     ; ZF = 1
.loope1:
        loope .loope                    ; @bts -> .loope  (RCX = 0 after two rounds)
.jrcxz: jrcxz .jrcxz_t                  ; @bts -> .jrcxz_t
        ud2
.jrcxz_t:
        mov rcx, 1
        shl rcx, 32                     ; RCX != 0, ECX = 0
.jrcxz2:
        jrcxz fail                      ; not taken
.jecxz: jecxz .jecxz_t                  ; @bts -> .jecxz_t  (0x67 prefix: tests ECX)
        ud2
.jecxz_t:

; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

; --- functions ----------------------------------------------------------
f_add1: inc eax
.ret:   ret

f_sum2: mov rax, [rsp + 8]
        add rax, [rsp + 16]
.ret:   ret 16

; f_rec(rcx): recurse until rcx = 0
f_rec:  test ecx, ecx
.jz:    jz .ret                         ; taken only at the bottom (annotated at the call site)
        dec ecx
.call:  call f_rec
.call_r:
.ret:   ret

f_tail: nop
.jmp:   jmp f_add1

section .data
        align 8, db 0
ptr_jrip:       dq main64.jrip_t
ptr_f_add1:     dq f_add1
jump_table:     dq main64.case0, main64.case1, main64.case2
