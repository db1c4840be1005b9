; SPDX-License-Identifier: MIT
; tfhlt.asm: the guest's own single-step across HLT, which vbts does not
; model: the trace stops before it, status 125, with one line
; (tests/e2e/selfdebug.t).  The annotations list the records before it.

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

section .text
bits 64
default rel

main64:
        IDT64_SET 1, db_h
        IDT64_LOAD
        pushfq
        or qword [rsp], 0x100
        popfq                           ; TF on
stop:   hlt                             ; the trace stops before it
; @exit 0
        DEBUG_EXIT 0
db_h:   DEBUG_EXIT 0
