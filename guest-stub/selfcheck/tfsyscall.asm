; SPDX-License-Identifier: MIT
; tfsyscall.asm: the guest's own single-step across SYSCALL, which vbts
; does not model: the trace stops before it, status 125, with one line
; (tests/e2e/selfdebug.t).  The annotations list the records before the
; stop; on a CPU the SYSCALL would clear TF (FMASK) and the guest exit
; with status 1.

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

MSR_EFER        equ 0xc0000080
MSR_STAR        equ 0xc0000081
MSR_LSTAR       equ 0xc0000082
MSR_FMASK       equ 0xc0000084

section .text
bits 64
default rel

main64:
        IDT64_SET 1, db_h
        IDT64_LOAD
        mov ecx, MSR_EFER
        rdmsr
        or eax, 1                       ; SCE
        wrmsr
        mov ecx, MSR_LSTAR
        lea eax, [entry]
        xor edx, edx
        wrmsr
        mov ecx, MSR_STAR
        xor eax, eax
        mov edx, 0x00100008             ; kernel CS 0x08 (SS 0x10)
        wrmsr
        mov ecx, MSR_FMASK
        mov eax, 0x100                  ; SYSCALL clears TF
        xor edx, edx
        wrmsr
        pushfq
        or qword [rsp], 0x100
        popfq                           ; TF on
sc:     syscall                         ; the trace stops before it
; @exit 0
entry:  DEBUG_EXIT 0
db_h:   DEBUG_EXIT 0x7f                 ; a trap after the POPF: not on a CPU
