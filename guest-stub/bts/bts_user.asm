; SPDX-License-Identifier: MIT
; bts_user: CPL qualification across privilege levels.  With BTS_OFF_OS set
; only branches taken at CPL3 are stored: the kernel enters user mode with
; iretq (taken at CPL0: not stored), user code jumps and enters the kernel
; with `int 0x80` (both taken at CPL3: stored), and the kernel checks.
; The IDT has a #DB handler that a correct run never enters: on kvm_pvm,
; vbts steps user mode through the guest's #DB handler (docs/engine.md).
; Built with -DNO_DB_GATE it has none: vbts then stops there at the iretq
; and says so (exit status 125; tests/e2e/guest_bts.t).
; Exit status 1 (debug-exit 0) on success; failing checks: 0x13 index,
; 0x20+n record n.
%define IDT64_VECTORS 0x81
%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"
%include "bts.inc"
%include "usermode.inc"

section .text
bits 64
main64:
        xor r14d, r14d
        USERMODE_GDT_TSS
        ; Let CPL3 reach the first 2 MiB: U bit on every level of the map.
        or qword [pml4], PTE_U
        or qword [pdpt], PTE_U
        or qword [pd], PTE_U
        xor ecx, ecx
.user:  or qword [pt0 + rcx * 8], PTE_U
        inc ecx
        cmp ecx, 512
        jne .user
        mov rax, cr3
        mov cr3, rax
%ifndef NO_DB_GATE
        IDT64_SET 1, db_handler
%endif
        IDT64_SET 0x80, kernel_entry
        mov word [idt64 + 0x80 * 16 + 4], 0xee00        ; DPL 3: int 0x80 from user
        IDT64_LOAD
        WRMSR64 MSR_DS_AREA, ds_area
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_OFF_OS
        push SEL_UDATA
        push user_stack_top
        push 0x2                        ; RFLAGS: IF clear
        push SEL_UCODE64
        push user_entry
iret_to_user:
        iretq                           ; taken at CPL0: not stored

user_entry:
u1:     jmp u2                          ; record 1: u1 -> u2 (CPL3)
        ud2
u2:     int 0x80                        ; record 2: u2 -> kernel_entry (CPL3)

kernel_entry:
        WRMSR64 MSR_DEBUGCTL, 0
        mov rax, [ds_area + DS_INDEX]
        CHECK_EQ rax, bts_buf + 2 * BTS_REC, 0x13
        CHECKS_PASSED
        CHECK_RECORDS bts_buf, expect, 2, 0x20
        DEBUG_EXIT 0                    ; @exit 0

db_handler:
        DEBUG_EXIT 0x7e                 ; vbts's steps must not reach the guest

section .data
        USERMODE_DATA
        align 64, db 0
ds_area:
        dq bts_buf, bts_buf, bts_buf + 4 * BTS_REC, bts_buf + 5 * BTS_REC
        times 32 dq 0
bts_buf:
        times 4 * BTS_REC db 0
expect:
        dq u1, u2
        dq u2, kernel_entry
