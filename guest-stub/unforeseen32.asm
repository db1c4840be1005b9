; SPDX-License-Identifier: MIT
; unforeseen32.asm: exceptions that an instruction's bytes and operands do
; not foretell, in 32-bit protected mode, with handlers that drop their
; frame and jump on (no iretd: kvm_pvm cannot run it there).
;
; Its own GDT (0x20: a data segment marked not present), a 32-bit IDT, then:
;   - #GP(0x80) from `mov ds, ax`: the selector is beyond the GDT's limit;
;   - #NP(0x20) from `mov es, ax`: the segment is not present;
;   - #SS(0x20) from `mov ss, ax`: the same, loaded into SS;
;   - #GP(0x80) from a far jmp to that selector;
;   - #UD from a lock prefix on an instruction that cannot take one;
;   - #UD from `mov cs, ax`;
;   - #DE from `aam 0`;
;   - #DE from `div` by 0, whose handler drops its frame and then faults
;     itself: #GP(0x80) from `mov fs, ax`.
; Then the handlers' count and the stack are checked, and debug-exit 0.
; (Issue: on stock KVM a segment load's #GP lost its record, and with a
; handler that does not iret the rest of the trace went too, the guest's
; status unchanged.)

%include "multiboot.inc"
%include "idt32.inc"
%include "exit.inc"

BAD_SEL         equ 0x80                ; beyond the GDT's limit
NP_SEL          equ 0x20                ; a data segment that is not present
VEC_DE          equ 0
VEC_UD          equ 6
VEC_NP          equ 11
VEC_SS          equ 12
VEC_GP          equ 13

section .text
bits 32

main32:
        lgdt [gdt_np_desc]
        IDT32_SET VEC_DE, de_refault
        IDT32_SET VEC_UD, ud_drop
        IDT32_SET VEC_NP, np_drop
        IDT32_SET VEC_SS, ss_drop
        IDT32_SET VEC_GP, gp_drop
        IDT32_LOAD

; --- segment loads ------------------------------------------------------------
        mov dword [resume], .seg_r
        mov ax, BAD_SEL
.seg:   mov ds, ax                      ; @bts -> gp_drop
        ; @bts gp_drop.jmp -> .seg_r
.seg_r:
        mov dword [resume], .np_r
        mov ax, NP_SEL
.np:    mov es, ax                      ; @bts -> np_drop
        ; @bts np_drop.jmp -> .np_r
.np_r:
        mov dword [resume], .ss_r
.ss:    mov ss, ax                      ; @bts -> ss_drop
        ; @bts ss_drop.jmp -> .ss_r
.ss_r:
        mov dword [resume], .far_r
.far:   jmp BAD_SEL:0                   ; @bts -> gp_drop
        ; @bts gp_drop.jmp -> .far_r
.far_r:

; --- invalid opcodes -----------------------------------------------------------
        mov dword [resume], .lock_r
.lock:  db 0xf0, 0x01, 0xd8             ; @bts -> ud_drop (lock add eax, ebx)
        ; @bts ud_drop.jmp -> .lock_r
.lock_r:
        mov dword [resume], .cs_r
.cs:    db 0x8e, 0xc8                   ; @bts -> ud_drop (mov cs, ax)
        ; @bts ud_drop.jmp -> .cs_r
.cs_r:

; --- #DE, and a handler that faults itself --------------------------------------
        mov dword [resume], .aam_r
        mov ax, 0x1234
.aam:   db 0xd4, 0x00                   ; @bts -> de_refault (aam 0)
        ; @bts de_refault.fault -> gp_drop
        ; @bts gp_drop.jmp -> .aam_r
.aam_r:
        mov dword [resume], .div_r
        xor ecx, ecx
        xor edx, edx
        mov eax, 1
.div:   div ecx                         ; @bts -> de_refault
        ; @bts de_refault.fault -> gp_drop
        ; @bts gp_drop.jmp -> .div_r
.div_r:

; --- every handler ran, and the stack is where it started -------------------------
        cmp dword [faults], 10          ; gp, np, ss, gp, ud, ud, de+gp, de+gp
.chk1:  jne fail                        ; not taken
        cmp esp, stack_top
.chk2:  jne fail                        ; not taken

; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

; --- handlers: [esp] = (error code,) EIP, CS, EFLAGS ------------------------------
gp_drop:
        inc dword [faults]
        add esp, 16
.jmp:   jmp [resume]

np_drop:
        inc dword [faults]
        add esp, 16
.jmp:   jmp [resume]

ss_drop:
        inc dword [faults]
        add esp, 16
.jmp:   jmp [resume]

ud_drop:
        inc dword [faults]
        add esp, 12
.jmp:   jmp [resume]

de_refault:
        inc dword [faults]
        add esp, 12
        mov ax, BAD_SEL
.fault: mov fs, ax                      ; #GP(0x80): gp_drop goes on

section .data
        align 16, db 0
gdt_np:
        dq 0                            ; 0x00 null
        dq 0x00cf9a000000ffff           ; 0x08 code, 32-bit
        dq 0x00cf92000000ffff           ; 0x10 data
        dq 0x00af9a000000ffff           ; 0x18 code, 64-bit
        dq 0x00cf12000000ffff           ; 0x20 data, not present
        dq 0x00cf92000000ffff           ; 0x28 data
gdt_np_end:
        align 4, db 0
        dw 0
gdt_np_desc:
        dw gdt_np_end - gdt_np - 1
        dd gdt_np
resume: dd 0
faults: dd 0
