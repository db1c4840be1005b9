; SPDX-License-Identifier: MIT
; QEMU's TCG (10.0 and upstream, target/i386/tcg/system/bpt_helper.c)
; takes an execution breakpoint (DR0-3) in a code segment whose base is
; not 0 for one of its gdbstub's, and dies of SIGSEGV in gdb_set_stop_cpu:
; it inserts the breakpoint at the linear address DRn holds, as a CPU
; compares it, but breakpoint_handler() and check_hw_breakpoints() look
; for it at EIP, the offset into CS.  docs/host-compat.md has the
; backtrace.  In the lab (stock kvm_amd under QEMU TCG):
;
;   nasm -f bin -o /tmp/cs.bin tests/qemu-bugs/cs-base-breakpoint.asm
;   scripts/lab.sh run build/vbts --engine branch --trace /tmp/t /tmp/cs.bin
;
; QEMU (the lab's L1) dies of SIGSEGV at once; `--engine step` (no
; breakpoint), the same code called through a flat selector (0x08), and
; kvm_pvm run it to its end, status 1 (debug-exit 0), 487 records.
bits 32
org 0x100000
hdr: dd 0x1badb002, 0x10000, -(0x1badb002 + 0x10000)
     dd hdr, hdr, 0, 0, start
start:
    lgdt [gdtr]
    jmp 0x08:.flat
.flat:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov esp, 0x90000
    ; An IDT (every exception to `fault`), so that stretches can run
    ; under breakpoints on the handlers of what they may raise.
    mov edi, idt
    mov ecx, 32
.fill:
    mov eax, fault
    mov [edi], ax
    mov word [edi+2], 0x08
    mov word [edi+4], 0x8e00
    shr eax, 16
    mov [edi+6], ax
    add edi, 8
    dec ecx
    jnz .fill
    lidt [idtr]
    mov ecx, 3
.loop:
    call 0x18:(based - 0x1000)      ; into the segment based at 0x1000
    dec ecx
    jnz .loop
    mov al, 0
    out 0xf4, al
fault:
    mov al, 9
    out 0xf4, al
; Code run through selector 0x18: linear = 0x1000 + EIP.
based:
    mov edx, 40
.l: add eax, [counter]
    inc ebx
    imul eax, ebx
    call .sub
    test eax, 1
    jz .even
    inc esi
.even:
    dec edx
    jnz .l
    retf
.sub:
    add [counter], ebx
    ret
counter: dd 1
align 8
gdt: dq 0
     dq 0x00cf9a000000ffff          ; 0x08 flat code
     dq 0x00cf92000000ffff          ; 0x10 flat data
     dq 0x00cf9a001000ffff          ; 0x18 code, base 0x1000
gdtr: dw gdtr - gdt - 1
      dd gdt
align 8
idt: times 32 dq 0
idtr: dw 32*8 - 1
      dd idt
