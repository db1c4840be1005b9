; SPDX-License-Identifier: MIT
; loop: the tracer benchmark's guest.  LOOPS iterations of a body with a
; call, a return and a taken backward jump (3 records), and PAD
; straight-line instructions, so that steps per branch can be chosen.
%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"

%ifndef LOOPS
%define LOOPS 10000
%endif
%ifndef PAD
%define PAD 2
%endif

section .text
bits 64
main64:
        mov ecx, LOOPS
.l:     call body
        dec ecx
        jnz .l
        DEBUG_EXIT 0

body:
%rep PAD
        add rax, 1
%endrep
        ret
