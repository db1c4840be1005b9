; SPDX-License-Identifier: MIT
; user.asm: user mode (CPL3) and the ways into it and out of it, long mode.
;
; The kernel enters user mode with iretq.  User code calls, loops and
; jumps, faults (#PF at an unmapped address: the kernel skips the load and
; returns with iretq), makes a system call (syscall; the kernel returns
; with sysretq), pushes its flags (the trap flag is clear in them), and
; ends with a second system call, which exits.  The IDT has a #DB handler
; that a correct run never enters: on kvm_pvm, vbts steps user mode
; through the guest's #DB handler, and puts the vCPU back before it runs
; (docs/engine.md).
%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"
%include "usermode.inc"

MSR_STAR        equ 0xc0000081
MSR_LSTAR       equ 0xc0000082
MSR_FMASK       equ 0xc0000084
UNMAPPED_ADDR   equ MAPPED_LIMIT + 0x1000

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
        ; CPL3 may use the first 2 MiB: the U bit on every level of the map,
        ; the last a 2 MiB page in place of pt0's 4 KiB ones.
        or qword [pml4], PTE_U
        or qword [pdpt], PTE_U
        mov qword [pd], PTE_P | PTE_W | PTE_U | PTE_PS
        mov rax, cr3
        mov cr3, rax
        IDT64_SET 1, db_handler
        IDT64_SET VEC_PF, pf_handler
        IDT64_LOAD
        ; SYSCALL: EFER.SCE; kernel CS 0x18; SYSRETQ to CS 0x28|3, SS 0x20|3; FMASK IF, TF
        mov ecx, EFER_MSR
        rdmsr
        or eax, 1
        wrmsr
        WRMSR64 MSR_STAR, (SEL_KCODE64 << 32) | (0x18 << 48)
        WRMSR64 MSR_LSTAR, sys_entry
        WRMSR64 MSR_FMASK, 0x300
        push SEL_UDATA
        push user_stack_top
        push 0x2                        ; RFLAGS: IF clear
        push SEL_UCODE64
        push user_entry
.iret:  iretq                           ; @bts -> user_entry

user_entry:
.c1:    call ufunc                      ; @bts -> ufunc
        ; @bts ufunc.ret -> .c1_r
.c1_r:  mov ecx, 3
.dec:   dec ecx
.jnz:   jnz .dec                        ; @bts -> .dec x2
.jmp:   jmp .j1                         ; @bts -> .j1
        ud2
.j1:    mov rbx, UNMAPPED_ADDR
.pf:    mov rax, [rbx]                  ; @bts -> pf_handler
        ; @bts pf_handler.iret -> .pf_r
.pf_r:  mov eax, 7
.sys:   syscall                         ; @bts -> sys_entry
        ; @bts sys_entry.ret -> .sys_r
.sys_r: cmp eax, 8                      ; the kernel added 1
.chk1:  jne ufail                       ; not taken
        pushfq
        pop rax
        test eax, 0x100                 ; TF is not the guest's to see
.chk2:  jnz ufail                       ; not taken
        mov eax, 60
.exit:  syscall                         ; @bts -> sys_entry
        ; @bts sys_entry.je -> sys_entry.exit

ufunc:  add rax, 1
.ret:   ret

ufail:  ud2                             ; user mode cannot exit: a crash says it

; --- the kernel --------------------------------------------------------------
pf_handler:                             ; skip the 3-byte load; drop the error code
        add qword [rsp + 8], 3
        add rsp, 8
.iret:  iretq

sys_entry:                              ; RCX: the user's RIP, R11: its RFLAGS
        cmp eax, 60
.je:    je .exit
        add eax, 1
.ret:   o64 sysret
.exit:  test r11, 0x100                  ; the user's RFLAGS: TF is not the guest's to see
.chk:   jne kfail                       ; not taken
        ; @exit 0
        DEBUG_EXIT 0

db_handler:
        DEBUG_EXIT 0x7e                 ; vbts's steps must not reach the guest
kfail:  DEBUG_EXIT 0x7f

section .data
        USERMODE_DATA
