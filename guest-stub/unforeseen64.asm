; SPDX-License-Identifier: MIT
; unforeseen64.asm: exceptions that an instruction's bytes and operands do
; not foretell, in long mode: segment loads, a lock prefix, mov cs, far
; transfers through bad selectors, a gate that is not present, handlers
; that drop their frame and jump on, one that faults itself, and iretqs
; in a row after a port write.
;
; Its own GDT (0x20: a data segment marked not present), a 64-bit IDT, then:
;   - #GP(0x80) from `mov ds, ax` (beyond the GDT's limit), dropped;
;   - #SS(0x20) from `mov ss, ax` (not present), dropped;
;   - #UD from a lock prefix on an instruction that cannot take one, and
;     from `mov cs, ax`, each returned past by iretq;
;   - #GP(0x80) from a far jmp through memory to that selector, dropped;
;   - #DE from `div` whose gate is not present: #NP on the way in, and two
;     contributory exceptions make a double fault (#DF);
;   - #DE whose handler drops its frame and faults itself (#GP(0x80));
;   - a port write, then iretq to an iretq to a jmp.
; Then the handlers' count and the stack are checked, and debug-exit 0.

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

BAD_SEL         equ 0x80                ; beyond the GDT's limit
NP_SEL          equ 0x20                ; a data segment that is not present
VEC_DF          equ 8
VEC_SS          equ 12

section .text
bits 64
default rel

main64:
        lgdt [gdt_np_desc]
        IDT64_SET VEC_UD, ud_skip
        IDT64_SET VEC_GP, gp_drop
        IDT64_SET VEC_SS, ss_drop
        IDT64_SET VEC_DF, df_drop
        IDT64_LOAD

; --- segment loads: the handlers drop the frame and jump on -------------------
        lea rax, [.seg_r]
        mov [resume], rax
        mov ax, BAD_SEL
.seg:   mov ds, ax                      ; @bts -> gp_drop
        ; @bts gp_drop.jmp -> .seg_r
.seg_r:
        lea rax, [.ss_r]
        mov [resume], rax
        mov ax, NP_SEL
.ss:    mov ss, ax                      ; @bts -> ss_drop
        ; @bts ss_drop.jmp -> .ss_r
.ss_r:

; --- invalid opcodes: the handler returns past them -----------------------------
        lea rax, [.lock_r]
        mov [resume], rax
.lock:  db 0xf0, 0x01, 0xd8             ; @bts -> ud_skip (lock add eax, ebx)
        ; @bts ud_skip.iret -> .lock_r
.lock_r:
        lea rax, [.cs_r]
        mov [resume], rax
.cs:    db 0x8e, 0xc8                   ; @bts -> ud_skip (mov cs, ax)
        ; @bts ud_skip.iret -> .cs_r
.cs_r:

; --- far and near jumps that fault ----------------------------------------------
        lea rax, [.far_r]
        mov [resume], rax
.far:   jmp far dword [bad_ptr]         ; @bts -> gp_drop
        ; @bts gp_drop.jmp -> .far_r
.far_r:

; --- a gate that is not present: #NP on the way in makes a double fault ---------
; (A benign #UD through a gate that is not present is #NP alone; kvm_pvm
; delivers #DF there, docs/host-compat.md, so it is not in this stub.)
        IDT64_SET VEC_DE, de_refault
        and byte [idt64 + VEC_DE * 16 + 5], 0x7f
        lea rax, [.df_r]
        mov [resume], rax
        xor ecx, ecx
        xor edx, edx
        mov eax, 1
.df:    div ecx                         ; @bts -> df_drop
        ; @bts df_drop.jmp -> .df_r
.df_r:

; --- #DE whose handler faults itself ----------------------------------------------
        or byte [idt64 + VEC_DE * 16 + 5], 0x80
        lea rax, [.de_r]
        mov [resume], rax
        xor ecx, ecx
        xor edx, edx
        mov eax, 1
.de:    div ecx                         ; @bts -> de_refault
        ; @bts de_refault.fault -> gp_drop
        ; @bts gp_drop.jmp -> .de_r
.de_r:

; --- out, then iretq to an iretq to a jmp ------------------------------------------
        mov rax, rsp
        push qword SEL_DATA             ; the second iretq's frame: SS
        push rax                        ; RSP
        pushfq
        push qword SEL_CODE64           ; CS
        lea rax, [io_jmp]
        push rax                        ; RIP
        mov rax, rsp
        push qword SEL_DATA             ; the first iretq's frame
        push rax
        pushfq
        push qword SEL_CODE64
        lea rax, [io_iret2]
        push rax
        mov al, 0
        out 0x80, al
io_iret1:
        iretq                           ; @bts -> io_iret2
io_iret2:
        iretq                           ; @bts -> io_jmp
io_jmp: jmp .done                       ; @bts -> .done
        ud2
.done:

; --- every handler ran, and the stack is where it started -------------------------
        cmp dword [faults], 8           ; gp, ss, ud, ud, gp, df, de+gp
.chk1:  jne fail                        ; not taken
        lea rsi, [stack_top]
        cmp rsp, rsi
.chk2:  jne fail                        ; not taken

; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

; --- handlers: [rsp] = (error code,) RIP, CS, RFLAGS, RSP, SS ----------------------
gp_drop:
        inc dword [faults]
        add rsp, 48
.jmp:   jmp [resume]

ss_drop:
        inc dword [faults]
        add rsp, 48
.jmp:   jmp [resume]

df_drop:
        inc dword [faults]
        add rsp, 48
.jmp:   jmp [resume]

ud_skip:
        inc dword [faults]
        push rax
        mov rax, [resume]
        mov [rsp + 8], rax              ; the saved RIP, above the saved rax
        pop rax
.iret:  iretq

de_refault:
        inc dword [faults]
        add rsp, 40
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
        dq gdt_np
        align 8, db 0
bad_ptr:
        dd 0                            ; offset
        dw BAD_SEL                      ; selector
        align 8, db 0
resume: dq 0
faults: dd 0
