; SPDX-License-Identifier: MIT
; bts_pmi: BTS with DEBUGCTL.BTINT set: a linear buffer of six records with
; the interrupt threshold at three.  The third record raises the PMI through
; the local APIC's LVT performance-monitoring entry (vector 0x40); its
; delivery and the handler's iretq are branches too, so they are records 4
; and 5.  Record 6 fills the buffer; later branches are lost, not wrapped.
; Exit status 1 (debug-exit 0) on success; failing checks: 0x13 index,
; 0x14 PMI count, 0x15 LVT mask set by the PMI, 0x20+n record n.
%include "multiboot.inc"
%include "longmode.inc"
%define IDT64_VECTORS 0x41
%include "idt64.inc"
%include "exit.inc"
%include "bts.inc"

PMI_VECTOR      equ 0x40
APIC_LVT_PMI    equ 0xfee00340

section .text
bits 64
main64:
        xor r14d, r14d
        ; The local APIC page (0xfee00000) lies above the 1 GiB identity map:
        ; map its 2 MiB region through a page directory of its own.
        mov rax, pd_apic + PTE_P + PTE_W
        mov [pdpt + 3 * 8], rax
        mov rax, 0xfee00000 + PTE_PS + PTE_P + PTE_W + (1 << 4)   ; PCD
        mov [pd_apic + 0x1f7 * 8], rax
        mov rax, cr3
        mov cr3, rax
        IDT64_SET PMI_VECTOR, pmi_handler
        IDT64_LOAD
        mov rax, APIC_LVT_PMI
        mov dword [rax], PMI_VECTOR     ; fixed delivery, unmasked
        sti
        WRMSR64 MSR_DS_AREA, ds_area
        WRMSR64 MSR_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTINT
b1:     jmp l1                          ; record 1: b1 -> l1
        ud2
l1:     jmp l2                          ; record 2: l1 -> l2
        ud2
l2:     jmp l3                          ; record 3: l2 -> l3; index reaches the threshold
        ud2
l3:     nop                             ; record 4: l3 -> pmi_handler (the PMI, before l3 runs)
                                        ; record 5: pmi_iret -> l3
b6:     jmp l4                          ; record 6: b6 -> l4; the buffer is full
        ud2
l4:     jmp l5                          ; lost
        ud2
l5:     WRMSR64 MSR_DEBUGCTL, 0
        cli
        mov rax, [ds_area + DS_INDEX]
        CHECK_EQ rax, bts_buf + 6 * BTS_REC, 0x13
        mov eax, [pmi_count]
        CHECK_EQ rax, 1, 0x14
        mov rax, APIC_LVT_PMI
        mov eax, [rax]
        CHECK_EQ rax, PMI_VECTOR | (1 << 16), 0x15
        CHECKS_PASSED
        CHECK_RECORDS bts_buf, expect, 6, 0x20
        DEBUG_EXIT 0                    ; @exit 0

pmi_handler:
        inc dword [pmi_count]
pmi_iret:
        iretq

section .data
        align 4096, db 0
pd_apic:
        times 512 dq 0
pmi_count:
        dd 0
        align 64, db 0
ds_area:
        dq bts_buf                      ; base
        dq bts_buf                      ; index
        dq bts_buf + 6 * BTS_REC        ; absolute maximum: six records
        dq bts_buf + 3 * BTS_REC        ; interrupt threshold: after three
        times 32 dq 0
bts_buf:
        times 6 * BTS_REC db 0xee
        times BTS_REC db 0x55           ; must survive: past the maximum
expect:
        dq b1, l1
        dq l1, l2
        dq l2, l3
        dq l3, pmi_handler
        dq pmi_iret, l3
        dq b6, l4
