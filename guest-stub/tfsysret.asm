; SPDX-License-Identifier: MIT
; tfsysret.asm: SYSRET loads RFLAGS from R11, TF included, and traps after
; itself by the TF it leaves, though the kernel ran with TF clear.  The
; #DB comes at user mode's first instruction, with the user's CS in its
; frame (kvm-unit-tests' `syscall`, "syscall TF handling", in 64-bit mode);
; the handler clears TF in its frame.  Then a system call exits.
; On kvm_pvm, which vbts steps in user mode through the guest's TF itself,
; the trace stops clearly at the SYSRET (stubs.t).

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"
%include "usermode.inc"

MSR_STAR        equ 0xc0000081
MSR_LSTAR       equ 0xc0000082
MSR_FMASK       equ 0xc0000084
TF              equ 0x100

%macro WRMSR64 2
        mov rax, %2
        mov rdx, rax
        shr rdx, 32
        mov ecx, %1
        wrmsr
%endmacro

section .text
bits 64
main64:
        USERMODE_GDT_TSS
        or qword [pml4], PTE_U
        or qword [pdpt], PTE_U
        mov qword [pd], PTE_P | PTE_W | PTE_U | PTE_PS
        mov rax, cr3
        mov cr3, rax
        IDT64_SET 1, db_h
        IDT64_LOAD
        mov ecx, EFER_MSR
        rdmsr
        or eax, 1                       ; SCE
        wrmsr
        WRMSR64 MSR_STAR, (SEL_KCODE64 << 32) | (0x18 << 48)
        WRMSR64 MSR_LSTAR, sys_entry
        WRMSR64 MSR_FMASK, 0x300        ; IF, TF
        mov rsp, user_stack_top         ; SYSRET leaves RSP as it is
        mov ecx, user_entry
        mov r11d, TF | 2                ; the user's RFLAGS: TF on, IF off
.sr:    o64 sysret                      ; @bts -> user_entry
                                        ; @bts user_entry -> db_h (the trap after it)
                                        ; @bts db_h.iret -> user_entry
user_entry:
        mov eax, 60
.exit:  syscall                         ; @bts -> sys_entry

; --- the kernel --------------------------------------------------------------
sys_entry:
        cmp dword [count], 1
        jne kfail
        cmp word [db_cs], SEL_UCODE64 | 3
        jne kfail
        test r11, TF                    ; the handler cleared it
        jnz kfail
; @exit 0
        DEBUG_EXIT 0
kfail:  DEBUG_EXIT 0x7f

db_h:   inc dword [count]
        mov rax, [rsp + 8]
        mov [db_cs], ax
        and qword [rsp + 16], ~TF       ; the frame's RFLAGS: no more traps
.iret:  iretq

section .data
count:  dd 0
db_cs:  dw 0
        USERMODE_DATA
