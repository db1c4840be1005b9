; SPDX-License-Identifier: MIT
; contexts: two guest contexts (address spaces) on one vCPU.  The stub
; builds a second PML4 sharing the identity map and switches CR3 to it and
; back, branching in each context.  vbts must separate them: a departure
; and an arrival marker at each switch, and with --cr3 only the branches
; taken while that CR3 is loaded.  Debug-exit 0 (status 1).
%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"

section .text
bits 64
main64:
        mov rax, [pml4]                 ; the second context maps the same 1 GiB
        mov [pml4_b], rax
        mov rax, pml4_b
        mov cr3, rax                    ; context B: depart pml4, arrive pml4_b
.b1:    jmp .b2                         ; @bts -> .b2
        ud2
.b2:    call helper                     ; @bts -> helper
        ; @bts helper.ret -> .b3
.b3:    mov rax, pml4
        mov cr3, rax                    ; context A again
.a1:    jmp .a2                         ; @bts -> .a2
        ud2
.a2:    DEBUG_EXIT 0                    ; @exit 0

helper:
        nop
.ret:   ret

section .data
        align 4096, db 0
pml4_b:
        times 512 dq 0
