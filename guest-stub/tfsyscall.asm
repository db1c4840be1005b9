; SPDX-License-Identifier: MIT
; tfsyscall.asm: the guest's own single-step across SYSCALL, in long mode at
; CPL0.  SYSCALL saves RFLAGS, TF included, in R11, masks RFLAGS with FMASK,
; and traps after itself by the TF it leaves (docs/engine.md, "The guest's
; own debugging"):
;   - FMASK clears TF: no trap, R11 shows TF;
;   - FMASK keeps it: a #DB trap at the entry's first instruction; the
;     handler clears TF in its frame.
; Then debug-exit 0.

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

MSR_EFER        equ 0xc0000080
MSR_STAR        equ 0xc0000081
MSR_LSTAR       equ 0xc0000082
MSR_FMASK       equ 0xc0000084
TF              equ 0x100

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
        mov ecx, MSR_STAR
        xor eax, eax
        mov edx, 0x00100008             ; CS 0x08, SS 0x10
        wrmsr
        mov ecx, MSR_LSTAR
        lea eax, [entry1]
        xor edx, edx
        wrmsr
        mov ecx, MSR_FMASK
        mov eax, TF                     ; SYSCALL clears TF
        wrmsr
        pushfq
        or qword [rsp], TF
        popfq                           ; TF on
sc1:    syscall                         ; @bts -> entry1 (no trap: FMASK cleared TF)
entry1: test r11d, TF                   ; R11 holds the guest's TF
        jz fail
        mov ecx, MSR_LSTAR
        lea eax, [entry2]
        xor edx, edx
        wrmsr
        mov ecx, MSR_FMASK
        xor eax, eax                    ; SYSCALL keeps TF
        wrmsr
        pushfq
        or qword [rsp], TF
        popfq
sc2:    syscall                         ; @bts -> entry2
                                        ; @bts entry2 -> db_h (the trap after it)
                                        ; @bts db_h.iret -> entry2
entry2: cmp dword [count], 1
        jne fail
; @exit 0
        DEBUG_EXIT 0
fail:   DEBUG_EXIT 0x7f

; SYSCALL loaded CS 0x08 and SS 0x10 with fixed attributes, but in the GDT
; 0x08 is 32-bit code: the frame returns to the 64-bit one.
db_h:   inc dword [count]
        and qword [rsp + 16], ~TF       ; the frame's RFLAGS: no more traps
        mov qword [rsp + 8], SEL_CODE64
.iret:  iretq

section .data
count:  dd 0
