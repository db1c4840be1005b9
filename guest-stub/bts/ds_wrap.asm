; SPDX-License-Identifier: MIT
; ds_wrap: the guest programs BTS itself, with a circular buffer of four
; records (DEBUGCTL.BTINT clear), runs six known branches, switches BTS off
; and checks, in its own memory, every record, the index and the wrap.
; Exit status 1 (debug-exit 0) on success; a failing check exits with its
; code: 0x10 MISC_ENABLE, 0x11/0x12 MSR read-back, 0x13 index,
; 0x20+n record n.
%include "multiboot.inc"
%include "longmode.inc"
%include "exit.inc"
%include "bts.inc"

section .text
bits 64
main64:
        xor r14d, r14d
        RDMSR64 MSR_MISC_ENABLE
        and rax, 1 << 11                ; "BTS unavailable" must be clear
        CHECK_EQ rax, 0, 0x10
        WRMSR64 MSR_DS_AREA, ds_area
        RDMSR64 MSR_DS_AREA
        CHECK_EQ rax, ds_area, 0x11
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS
        RDMSR64 MSR_DEBUGCTL
        CHECK_EQ rax, DEBUGCTL_TR | DEBUGCTL_BTS, 0x12
        ; Guest records from here on (BTS is on, CPL0, no OFF_OS).
b1:     jmp l1                          ; record 1: b1 -> l1
        ud2
l1:     call fn                         ; record 2: l1 -> fn
after:  jmp short l2                    ; record 4: after -> l2
        ud2
l2:     mov ecx, 2
l3:     loop l3                         ; record 5: l3 -> l3 (once; then not taken)
b6:     jmp l4                          ; record 6: b6 -> l4
        ud2
fn:     ret                             ; record 3: fn -> after
l4:     WRMSR64 MSR_DEBUGCTL, 0         ; no more guest records
        ; Six records in four slots: slots hold 5, 6, 3, 4; the index is slot 2.
        mov rax, [ds_area + DS_INDEX]
        CHECK_EQ rax, bts_buf + 2 * BTS_REC, 0x13
        CHECKS_PASSED
        CHECK_RECORDS bts_buf, expect, 4, 0x20
        DEBUG_EXIT 0                    ; @exit 0

section .data
        align 64, db 0
ds_area:
        dq bts_buf                      ; BTS buffer base
        dq bts_buf                      ; BTS index
        dq bts_buf + 4 * BTS_REC        ; absolute maximum: four records
        dq bts_buf + 5 * BTS_REC        ; threshold (unused: BTINT clear)
        times 32 dq 0                   ; PEBS part, unused
bts_buf:
        times 4 * BTS_REC db 0xee
expect:                                 ; slot order after the wrap
        dq l3, l3                       ; record 5
        dq b6, l4                       ; record 6
        dq fn, after                    ; record 3
        dq after, l2                    ; record 4
