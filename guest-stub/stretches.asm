; SPDX-License-Identifier: MIT
; stretches.asm: code the branch engine runs without exits
; (docs/engine.md: "Targets known before they run", "Forks", "Loops run
; whole"), each shape beside one it must not predict: returns to what the
; call pushed and through a slot rewritten; indirect jumps through a
; register written on the way; forks whose ways merge; a counted loop run
; whole, a `loop` loop, and loops whose rounds differ (a round that
; rewrites its own code, a counter written twice).  Records: the `@bts`
; comments (guest-stub/README.md).

%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"

section .text
bits 64
default rel

main64:
; --- returns: to what the call pushed, and through a slot rewritten -------
.c1:    call f_plain                    ; @bts -> f_plain
        ; @bts f_plain.ret -> .c1_r
.c1_r:
.c2:    call f_swap                     ; @bts -> f_swap
        ; @bts f_swap.ret -> .c2_back   (the slot rewritten: not the call's return)
        ud2
.c2_back:
; --- indirect jumps through registers written on the way ------------------
        lea rax, [.j1_t]
.j1:    jmp rax                         ; @bts -> .j1_t
        ud2
.j1_t:
        lea rbx, [.j2_t]
        nop
        nop
.j2:    jmp rbx                         ; @bts -> .j2_t
        ud2
.j2_t:
; --- forks: ways that merge, taken and not ---------------------------------
        xor eax, eax
.f1:    jnz .f1_t                       ; not taken
        nop
.f1_t:
        inc eax
.f2:    jnz .f2_t                       ; @bts -> .f2_t
        nop
.f2_t:
        xor edx, edx
        test eax, eax
.f3:    jz .f3_t                        ; not taken
        mov edx, 1
.f3_t:
        cmp edx, 1
.f4:    je .f4_t                        ; @bts -> .f4_t
        ud2
.f4_t:
; --- a counted loop run whole: 40 rounds of call, ret, dec, jnz -----------
        mov ecx, 40
.l1:    call f_plain
.l1_r:  dec ecx
.l1_j:  jnz .l1
        ; @repeat 39
        ; @bts .l1 -> f_plain
        ; @bts f_plain.ret -> .l1_r
        ; @bts .l1_j -> .l1
        ; @end
        ; @bts .l1 -> f_plain
        ; @bts f_plain.ret -> .l1_r
; --- `loop`, 30 rounds -----------------------------------------------------
        mov ecx, 30
.l2:    nop
.l2_j:  loop .l2                        ; @bts -> .l2 x29
; --- rounds that differ: each rewrites the next one's code ---------------
        mov ecx, 4
.l3:    mov [.l3_imm], cl
        mov al, 0
.l3_imm equ $ - 1
        dec ecx
.l3_j:  jnz .l3                         ; @bts -> .l3 x3
; --- ...and a counter written twice a round ----------------------------------
        mov ecx, 6
.l4:    add ecx, 0
        dec ecx
.l4_j:  jnz .l4                         ; @bts -> .l4 x5
        DEBUG_EXIT 0                    ; @exit 0

f_plain:
.ret:   ret

; Returns to main64.c2_back: its own slot rewritten.
f_swap: lea rax, [main64.c2_back]
        mov [rsp], rax
.ret:   ret
