; SPDX-License-Identifier: MIT
; bts_cpl: CPL qualification at CPL0.  With BTS_OFF_OS set, branches taken
; at CPL0 are not stored; with BTS_OFF_USR set they are.  (The CPL3 half is
; bts_user.asm, for hosts that can single-step user mode.)
; Exit status 1 (debug-exit 0) on success; failing checks: 0x13 index after
; OFF_OS, 0x14 index after OFF_USR, 0x20+n record n.
%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"
%include "bts.inc"

section .text
bits 64
main64:
        xor r14d, r14d
        WRMSR64 MSR_DS_AREA, ds_area
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_OFF_OS
o1:     jmp o2                          ; not stored: CPL0 with OFF_OS
        ud2
o2:     call ofn                        ; not stored
        WRMSR64 MSR_DEBUGCTL, 0
        mov rax, [ds_area + DS_INDEX]
        CHECK_EQ rax, bts_buf, 0x13
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_OFF_USR
u1:     jmp u2                          ; record 1: u1 -> u2
        ud2
u2:     call ufn                        ; record 2: u2 -> ufn
uret_to:                                ; record 3: ufn -> uret_to
        WRMSR64 MSR_DEBUGCTL, 0
        mov rax, [ds_area + DS_INDEX]
        CHECK_EQ rax, bts_buf + 3 * BTS_REC, 0x14
        CHECKS_PASSED
        CHECK_RECORDS bts_buf, expect, 3, 0x20
        DEBUG_EXIT 0                    ; @exit 0

ofn:    ret                             ; not stored
ufn:    ret

section .data
        align 64, db 0
ds_area:
        dq bts_buf, bts_buf, bts_buf + 8 * BTS_REC, bts_buf + 9 * BTS_REC
        times 32 dq 0
bts_buf:
        times 8 * BTS_REC db 0
expect:
        dq u1, u2
        dq u2, ufn
        dq ufn, uret_to
