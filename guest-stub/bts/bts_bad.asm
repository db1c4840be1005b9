; SPDX-License-Identifier: MIT
; bts_bad: hostile MSR values get what hardware gives them.
;   1. DEBUGCTL with a reserved bit (bit 2): #GP, DEBUGCTL unchanged.
;   2. DS_AREA non-canonical: #GP, DS_AREA unchanged.
;   3. DS_AREA in unmapped linear memory: the first record store faults,
;      #PF with CR2 = the DS area, and the monitor turns guest BTS off.
;   4. DS area (mapped) past the end of guest RAM: stores vanish like
;      writes to nothing; the guest goes on, the monitor logs it once.
; Exit status 1 (debug-exit 0) on success; failing checks: 0x11 #GP count
; after 1, 0x12 DEBUGCTL, 0x13 #GP count after 2, 0x14 DS_AREA, 0x15 #PF
; count, 0x16 CR2, 0x17 DEBUGCTL after the #PF, 0x18 the run after 4.
%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"
%include "bts.inc"

UNMAPPED        equ MAPPED_LIMIT + 0x1000       ; longmode.inc maps only 1 GiB
BEYOND_RAM      equ 0x3ff00000                  ; mapped, but past 256 MiB of RAM

section .text
bits 64
main64:
        xor r14d, r14d
        IDT64_SET VEC_GP, gp_handler
        IDT64_SET VEC_PF, pf_handler
        IDT64_LOAD
        ; 1. reserved DEBUGCTL bit
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | (1 << 2)
        mov eax, [gp_count]
        CHECK_EQ rax, 1, 0x11
        RDMSR64 MSR_DEBUGCTL
        CHECK_EQ rax, 0, 0x12
        ; 2. non-canonical DS_AREA
        WRMSR64 MSR_DS_AREA, ds_area
        WRMSR64 MSR_DS_AREA, 0x0000800000000000
        mov eax, [gp_count]
        CHECK_EQ rax, 2, 0x13
        RDMSR64 MSR_DS_AREA
        CHECK_EQ rax, ds_area, 0x14
        ; 3. DS area not mapped: the first branch's record store faults.
        WRMSR64 MSR_DS_AREA, UNMAPPED
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS
        jmp p1
p1:     mov eax, [pf_count]
        CHECK_EQ rax, 1, 0x15
        mov rax, [pf_cr2]
        CHECK_EQ rax, UNMAPPED, 0x16
        RDMSR64 MSR_DEBUGCTL
        CHECK_EQ rax, 0, 0x17
        ; 4. DS area past guest RAM: nothing is stored, nothing faults.
        WRMSR64 MSR_DS_AREA, BEYOND_RAM
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS
        jmp r1
r1:     call rfn
        WRMSR64 MSR_DEBUGCTL, 0
        mov eax, [pf_count]
        add eax, [gp_count]
        CHECK_EQ rax, 3, 0x18
        CHECKS_PASSED
        DEBUG_EXIT 0                    ; @exit 0

rfn:    ret

gp_handler:                             ; skip the 2-byte wrmsr
        inc dword [gp_count]
        add rsp, 8                      ; error code
        add qword [rsp], 2
        iretq

pf_handler:                             ; the fault hits between instructions
        inc dword [pf_count]
        mov rax, cr2
        mov [pf_cr2], rax
        add rsp, 8
        iretq

section .data
        align 8, db 0
gp_count: dd 0
pf_count: dd 0
pf_cr2:   dq 0
ds_area:  dq 0, 0, 0, 0
