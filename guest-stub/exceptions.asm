; SPDX-License-Identifier: MIT
; exceptions.asm: faults and their handlers in long mode.
;
; After the setup into long mode, a 64-bit IDT with handlers for #DE, #UD,
; #GP and #PF, then:
;   - #UD from ud2: the handler calls a helper, skips the instruction;
;   - #PF from a load at an unmapped address (>= 1 GiB): skipped;
;   - #PF from a load from a page made not present: the handler maps it
;     again and returns to the faulting instruction, which then succeeds;
;   - #GP from a load at a non-canonical address: skipped;
;   - #DE from div by zero: skipped.
; Each handler returns with iretq; "skipped" means the handler sets the
; saved RIP to the address in `resume`, which the main code stores before
; the faulting instruction.  Then debug-exit 0.
;
; Records (guest-stub/README.md): an exception is a record from the faulting
; instruction to the handler's first instruction; iretq is a record from the
; iretq to the address it returns to.

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

UNMAPPED_ADDR   equ MAPPED_LIMIT + 0x1000
NONCANONICAL    equ 0x8000000000000000

section .text
bits 64
default rel

main64:
        IDT64_SET VEC_DE, de_handler
        IDT64_SET VEC_UD, ud_handler
        IDT64_SET VEC_GP, gp_handler
        IDT64_SET VEC_PF, pf_handler
        IDT64_LOAD

; --- #UD -------------------------------------------------------------------
        mov qword [resume], .ud_r
.ud:    ud2                             ; @bts -> ud_handler
        ; @bts ud_handler.call -> count_fault
        ; @bts count_fault.ret -> ud_handler.call_r
        ; @bts ud_handler.iret -> .ud_r
.ud_r:

; --- #PF, unmapped address: skipped ----------------------------------------
        mov qword [resume], .pf1_r
        mov rbx, UNMAPPED_ADDR
.pf1:   mov rax, [rbx]                  ; @bts -> pf_handler
        ; @bts pf_handler.jae -> pf_handler.skip
        ; @bts pf_handler.iret_skip -> .pf1_r
.pf1_r:

; --- #PF, page not present: mapped again, instruction restarted ------------
        mov dword [fault_page], 0x1234
        lea rax, [fault_page]
        shr rax, 12                     ; its PTE index in pt0 (first 2 MiB)
        lea rdx, [pt0]
        and qword [rdx + rax * 8], ~PTE_P
        invlpg [fault_page]
.pf2:   mov eax, [fault_page]           ; @bts -> pf_handler
        ; @bts pf_handler.iret_retry -> .pf2
        ; (the second execution of .pf2 succeeds: no record)
        cmp eax, 0x1234
.chk1:  jne fail                        ; not taken

; --- #GP, non-canonical address ------------------------------------------
        mov qword [resume], .gp_r
        mov rcx, NONCANONICAL
.gp:    mov rax, [rcx]                  ; @bts -> gp_handler
        ; @bts gp_handler.iret -> .gp_r
.gp_r:

; --- #DE, divide by zero --------------------------------------------------
        mov qword [resume], .de_r
        xor ecx, ecx
        mov eax, 1
        xor edx, edx
.de:    div ecx                         ; @bts -> de_handler
        ; @bts de_handler.iret -> .de_r
.de_r:

; --- every handler ran as often as it should --------------------------------
        cmp dword [faults], 5           ; ud, pf, pf, gp, de
.chk2:  jne fail                        ; not taken
        lea rsi, [stack_top]
        cmp rsp, rsi
.chk3:  jne fail                        ; not taken

; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

; --- handlers ----------------------------------------------------------------
; [rsp]: (error code,) RIP, CS, RFLAGS, RSP, SS

ud_handler:
        push rax
.call:  call count_fault
.call_r:
        mov rax, [resume]
        mov [rsp + 8], rax              ; saved RIP, above the saved rax
        pop rax
.iret:  iretq

pf_handler:
        inc dword [faults]
        push rax
        mov rax, cr2
        cmp rax, MAPPED_LIMIT
.jae:   jae .skip                       ; an address above the identity map
        ; a page we made not present: map it again, restart the instruction
        shr rax, 12
        lea rdx, [pt0]
        or qword [rdx + rax * 8], PTE_P
        mov rax, cr2
        invlpg [rax]
        pop rax
        add rsp, 8                      ; error code
.iret_retry:
        iretq
.skip:  mov rax, [resume]
        mov [rsp + 16], rax             ; saved RIP, above rax and the error code
        pop rax
        add rsp, 8                      ; error code
.iret_skip:
        iretq

gp_handler:
        inc dword [faults]
        add rsp, 8                      ; error code
        push rax
        mov rax, [resume]
        mov [rsp + 8], rax
        pop rax
.iret:  iretq

de_handler:
        inc dword [faults]
        push rax
        mov rax, [resume]
        mov [rsp + 8], rax
        pop rax
.iret:  iretq

count_fault:
        inc dword [faults]
.ret:   ret

section .data
        align 8, db 0
resume: dq 0
faults: dd 0
        align 4096, db 0
fault_page:
        times 4096 db 0
