; SPDX-License-Identifier: MIT
; far.asm: far transfers and mode switches in long mode.
;
; After the setup (32-bit protected mode -> 64-bit long mode by far jmp):
;   - far call (m16:32) from 64-bit code into a 32-bit compatibility-mode
;     segment, near call/ret and a jcc there, retf back to 64-bit code;
;   - far call (m16:32) to a 64-bit segment and a 32-bit-operand retf;
;   - retfq from 64-bit code into compatibility mode, and a direct far jmp
;     (ptr16:32, legal outside 64-bit mode) back;
;   - far jmp (m16:32) from 64-bit code into compatibility mode, and a far
;     jmp through memory back;
;   - iretq (same privilege) into compatibility mode, far jmp back;
;   - iretq to the same privilege level, 64-bit to 64-bit.
; Then debug-exit 0.  Records: the `@bts` comments (guest-stub/README.md).

%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"

section .text
bits 64
default rel

main64:
; --- far call into compatibility mode, retf back ------------------------
        xor eax, eax
.fc1:   call far dword [ptr_compat_fn]  ; @bts -> compat_fn  (CS = SEL_CODE32)
        ; @bts compat_fn.call -> compat_leaf
        ; @bts compat_leaf.ret -> compat_fn.call_r
        ; @bts compat_fn.jnz -> compat_fn.jnz_t
        ; @bts compat_fn.ret -> .fc1_r   (retf to SEL_CODE64)
.fc1_r:
        cmp eax, 2
.chk1:  jne fail                        ; not taken

; --- far call to a 64-bit segment ---------------------------------------
.fc2:   call far dword [ptr_f64]        ; @bts -> f64
        ; @bts f64.ret -> .fc2_r
.fc2_r:
        lea rsi, [stack_top]
        cmp rsp, rsi
.chk2:  jne fail                        ; not taken

; --- retfq into compatibility mode, direct far jmp back -----------------
        push SEL_CODE32
        lea rax, [compat_jmp]
        push rax
.rf:    retfq                           ; @bts -> compat_jmp
        ; @bts compat_jmp.jmp -> .rf_back
.rf_back:

; --- far jmp through memory into compatibility mode and back ------------
.fj:    jmp far dword [ptr_compat_fjmp] ; @bts -> compat_fjmp
        ; @bts compat_fjmp.jmp -> .fj_back
.fj_back:
        lea rsi, [stack_top]
        cmp rsp, rsi
.chk3:  jne fail                        ; not taken

; --- iretq into compatibility mode, far jmp back ----------------------------
        mov rax, rsp
        push SEL_DATA                   ; SS
        push rax                        ; RSP
        pushfq
        push SEL_CODE32                 ; CS: compatibility mode
        lea rax, [compat_iret]
        push rax                        ; RIP
.iretc: iretq                           ; @bts -> compat_iret
        ; @bts compat_iret.jmp -> .iretc_back
.iretc_back:

; --- iretq, same privilege ------------------------------------------------
        mov rax, rsp
        push SEL_DATA                   ; SS
        push rax                        ; RSP
        pushfq
        push SEL_CODE64                 ; CS
        lea rax, [.iret_t]
        push rax                        ; RIP
.iret:  iretq                           ; @bts -> .iret_t
        ud2
.iret_t:
        lea rsi, [stack_top]
        cmp rsp, rsi
.chk4:  jne fail                        ; not taken

; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

; --- 64-bit function reached by a far call --------------------------------
f64:    inc eax
.ret:   retf                            ; o32: pops EIP and CS (4 bytes each)

; --- compatibility-mode code (SEL_CODE32 in long mode) -------------------
bits 32
compat_fn:
        mov eax, 1
.call:  call compat_leaf
.call_r:
        test eax, eax
.jnz:   jnz .jnz_t
        ud2
.jnz_t:
.ret:   retf                            ; o32, as pushed by the m16:32 far call

compat_leaf:
        inc eax
.ret:   ret

compat_jmp:
        nop
.jmp:   jmp SEL_CODE64:main64.rf_back

compat_iret:
        nop
.jmp:   jmp SEL_CODE64:main64.iretc_back

compat_fjmp:
        nop
.jmp:   jmp far [ptr_back_fjmp]

section .data
        align 8, db 0
ptr_compat_fn:      dd compat_fn
                    dw SEL_CODE32
                    align 8, db 0
ptr_f64:            dd f64
                    dw SEL_CODE64
                    align 8, db 0
ptr_compat_fjmp:    dd compat_fjmp
                    dw SEL_CODE32
                    align 8, db 0
ptr_back_fjmp:      dd main64.fj_back
                    dw SEL_CODE64
