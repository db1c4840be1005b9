; SPDX-License-Identifier: MIT
; adjacent.asm: exceptions whose handlers start right after the faulting
; instruction, in long mode.  Straight-line code would reach the same RIP,
; so only what contradicts that reading tells the exception apart: ud2
; never completes, a div by 0 always faults, and the exception frame moves
; RSP where the instructions cannot (the handlers start by pushing, or by
; dropping the error code, to make that check work for it).
;
; After the setup into long mode, a 64-bit IDT, then:
;   - #UD: ud2, its handler the very next instruction;
;   - #DE: div ecx with ECX = 0, the handler two nops later;
;   - #GP: a load from a non-canonical address, the handler three nops
;     later, starting with `add rsp, 8` (the error code);
;   - #DE again, from div by a memory operand holding 0 (foreseen from the
;     operand; the same handler, by then not adjacent);
;   - a port write, then iretq to a jmp.
; Each handler sets its saved RIP past itself and returns with iretq.  Then
; debug-exit 0.  (Issue: the step engine took each of these for
; straight-line code and lost the exception's record, and gave the iretq
; the jmp's target, losing the jmp's record.)

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

NONCANONICAL    equ 0x8000000000000000

section .text
bits 64
default rel

main64:
        IDT64_SET VEC_UD, ud_adj
        IDT64_SET VEC_DE, de_adj
        IDT64_SET VEC_GP, gp_adj
        IDT64_LOAD

; --- #UD: the handler is the next instruction --------------------------------
ud_op:  ud2                             ; @bts -> ud_adj
ud_adj: push rax
        lea rax, [ud_back]
        mov [rsp + 8], rax              ; saved RIP, above the saved rax
        pop rax
        inc dword [faults]
.iret:  iretq                           ; @bts -> ud_back
ud_back:

; --- #DE: the handler two nops after the div ---------------------------------
        xor ecx, ecx
        mov eax, 1
        xor edx, edx
de_op:  div ecx                         ; @bts -> de_adj
        nop
        nop
de_adj: push rax
        mov rax, [de_resume]
        mov [rsp + 8], rax
        pop rax
        inc dword [faults]
.iret:  iretq                           ; @bts -> de_back
de_back:

; --- #GP: the handler three nops after the load ------------------------------
        mov rcx, NONCANONICAL
gp_op:  mov rax, [rcx]                  ; @bts -> gp_adj
        nop
        nop
        nop
gp_adj: add rsp, 8                      ; the error code
        push rax
        lea rax, [gp_back]
        mov [rsp + 8], rax
        pop rax
        inc dword [faults]
.iret:  iretq                           ; @bts -> gp_back
gp_back:

; --- #DE from a memory divisor -----------------------------------------------
        mov qword [de_resume], de2_back
        mov eax, 7
        xor edx, edx
de2_op: div dword [zero]                ; @bts -> de_adj
        ; @bts de_adj.iret -> de2_back
de2_back:

; --- out, then iretq to a jmp ---------------------------------------------------
; On kvm_pvm the port write completes in the monitor, and the iretq and the
; jmp it returns to run with it in one step: the iretq's target is read from
; its frame, not taken from where the step ended (io_u).
        mov rax, rsp
        push qword SEL_DATA             ; SS
        push rax                        ; RSP
        pushfq
        push qword SEL_CODE64           ; CS
        lea rax, [io_t]
        push rax                        ; RIP
        mov al, 0
io_out: out 0x80, al
io_iret:
        iretq                           ; @bts -> io_t
io_t:   jmp io_u                        ; @bts -> io_u
        ud2
io_u:

; --- every handler ran, and the stack is where it started ---------------------
        cmp dword [faults], 4
.chk1:  jne fail                        ; not taken
        lea rsi, [stack_top]
        cmp rsp, rsi
.chk2:  jne fail                        ; not taken

; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

section .data
        align 8, db 0
de_resume:
        dq de_back
faults: dd 0
zero:   dd 0
