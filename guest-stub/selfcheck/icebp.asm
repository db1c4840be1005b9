; SPDX-License-Identifier: MIT
; icebp.asm: INT1 (ICEBP, 0xf1) raises #DB as a trap through vector 1, with
; no DPL check.  QEMU's TCG raises #UD for it instead, so QEMU cannot judge
; this one: the guest counts its own #DBs (tests/e2e/selfdebug.t compares
; vbts's records with these annotations, and the status with 1).
; kvm_pvm's emulator fails ICEBP: vbts completes it there (x86/hostcompat.c).

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

section .text
bits 64
default rel

main64:
        IDT64_SET 1, db_h
        IDT64_SET VEC_UD, ud_h
        IDT64_LOAD
ice:    int1                            ; @bts -> db_h
after:  cmp dword [count], 1
        jne fail
; @exit 0
        DEBUG_EXIT 0
fail:   DEBUG_EXIT 0x7f

db_h:   inc dword [count]
.iret:  iretq                           ; @bts -> after
ud_h:   DEBUG_EXIT 0x7e                 ; QEMU's TCG

section .data
count:  dd 0
