; SPDX-License-Identifier: MIT
; selfdebug.asm: a guest that debugs itself, in long mode.  vbts steps the
; guest with TF and DR0-3 of its own; the guest's TF, DR0-7 and DR6 must
; still do what the CPU does with them (docs/engine.md, "The guest's own
; debugging"):
;   - TF set by popfq: no trap after that popfq, a #DB trap after each
;     instruction from the next on (from = the next instruction), after a
;     jmp, a call and a ret at their targets; pushfq shows TF; no trap
;     after mov ss (the next instruction's trap covers both); popfq that
;     clears TF traps after itself;
;   - DR0 on an instruction: a #DB fault before it (DR6.B0), the handler
;     sets RF in the frame, the instruction then runs once;
;   - DR1 on a qword for writes: a read does not trap, a write does, after
;     it (DR6.B1);
;   - DR2 on a dword for reads and writes: a read traps (DR6.B2);
;   - DR3 on the stack slot a call pushes into: a trap at the callee's
;     first instruction (DR6.B3);
;   - the guest reads its DR0, DR3 and DR7 back.
; The #DB handler (an interrupt gate: TF clear inside) logs DR6's B0-3 and
; BS, writes DR6 back to its reset value, sets RF in the frame and returns
; with iretq.  The stub checks the count and the log, then debug-exit 0.

%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
%include "exit.inc"

VEC_DB          equ 1
TF              equ 0x100
RF              equ 0x10000
DR6_RESET       equ 0xffff0ff0
DR6_SEEN        equ 0x400f              ; BS, B3..B0

section .text
bits 64
default rel

main64:
        IDT64_SET VEC_DB, db_handler
        IDT64_LOAD

; --- TF ------------------------------------------------------------------------
        pushfq
        or qword [rsp], TF
        popfq                           ; no trap: TF was clear before it
tf1:    mov eax, 1
tf2:    jmp tf3                         ; @bts tf2 -> db_handler
                                        ; @bts db_handler.iret -> tf2
                                        ; @bts tf2 -> tf3
        ud2
tf3:    call tf_fn                      ; @bts tf3 -> db_handler
                                        ; @bts db_handler.iret -> tf3
                                        ; @bts tf3 -> tf_fn
                                        ; @bts tf_fn -> db_handler
                                        ; @bts db_handler.iret -> tf_fn
                                        ; @bts tf_fn -> tf4
tf4:    pushfq                          ; @bts tf4 -> db_handler
                                        ; @bts db_handler.iret -> tf4
tf5:    pop rax                         ; @bts tf5 -> db_handler
                                        ; @bts db_handler.iret -> tf5
tf6:    mov [pushed_flags], rax         ; @bts tf6 -> db_handler
                                        ; @bts db_handler.iret -> tf6
tf7:    mov ax, ss                      ; @bts tf7 -> db_handler
                                        ; @bts db_handler.iret -> tf7
tf8:    mov ss, ax                      ; @bts tf8 -> db_handler
                                        ; @bts db_handler.iret -> tf8
tf9:    nop                             ; (no trap after mov ss)
tf10:   pushfq                          ; @bts tf10 -> db_handler (after the nop)
                                        ; @bts db_handler.iret -> tf10
tf11:   and qword [rsp], ~TF            ; @bts tf11 -> db_handler
                                        ; @bts db_handler.iret -> tf11
tf12:   popfq                           ; @bts tf12 -> db_handler
                                        ; @bts db_handler.iret -> tf12
tf13:   nop                             ; @bts tf13 -> db_handler (after the popfq)
                                        ; @bts db_handler.iret -> tf13
        nop                             ; TF clear: no more traps

; --- DR0: an instruction breakpoint ----------------------------------------------
        lea rax, [bp0]
        mov dr0, rax
        mov eax, 1 << 0                 ; L0, execution, length 1
        mov dr7, rax
        nop
bp0:    nop                             ; @bts -> db_handler (a fault: before it runs)
                                        ; @bts db_handler.iret -> bp0
        nop                             ; bp0 ran once, under RF

; --- DR1: a write watchpoint on a qword ----------------------------------------
        lea rax, [wvar]
        mov dr1, rax
        mov eax, (1 << 2) | (01b << 20) | (10b << 22)  ; L1, writes, 8 bytes
        mov dr7, rax
        mov rax, [wvar]                 ; a read: no trap
        mov qword [wvar], 5
w1:     nop                             ; @bts -> db_handler (a trap: after the write)
                                        ; @bts db_handler.iret -> w1

; --- DR2: a read/write watchpoint on a dword --------------------------------------
        lea rax, [rvar]
        mov dr2, rax
        mov eax, (1 << 4) | (11b << 24) | (11b << 26)  ; L2, reads and writes, 4 bytes
        mov dr7, rax
        mov eax, [rvar + 4]             ; beside it: no trap
        mov eax, [rvar]
r1:     nop                             ; @bts -> db_handler
                                        ; @bts db_handler.iret -> r1

; --- DR3: the slot a call pushes the return address into --------------------------
        lea rax, [rsp - 8]
        mov dr3, rax
        mov eax, (1 << 6) | (01b << 28) | (10b << 30)  ; L3, writes, 8 bytes
        mov dr7, rax
s_call: call s_fn                       ; @bts -> s_fn
                                        ; @bts s_fn -> db_handler
                                        ; @bts db_handler.iret -> s_fn
                                        ; @bts s_fn -> s_back
s_back:
        mov rax, dr3                    ; read back before disarming
        lea rcx, [rsp - 8]
        cmp rax, rcx
        jne fail
        mov rax, dr7
        cmp eax, (1 << 6) | (01b << 28) | (10b << 30) | 0x400  ; bit 10 reads as 1
        jne fail
        mov rax, dr0
        lea rcx, [bp0]
        cmp rax, rcx
        jne fail
        xor eax, eax
        mov dr7, rax
        mov qword [wvar], 6             ; disarmed: no trap

; --- the checks -------------------------------------------------------------------
        test qword [pushed_flags], TF   ; pushfq showed the guest's TF
        jz fail
        cmp dword [db_count], 16
        jne fail
        lea rsi, [db_log]
        lea rdi, [want_log]
        mov ecx, 16
        repe cmpsd
        jne fail
; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

tf_fn:  ret                             ; (records above, at the call)
s_fn:   ret

; The #DB handler: no branch but its iretq, whose records the code above lists.
db_handler:
        push rax
        push rcx
        mov rax, dr6
        and eax, DR6_SEEN
        mov ecx, [db_count]
        lea rcx, [db_log + rcx * 4]
        mov [rcx], eax
        inc dword [db_count]
        mov eax, DR6_RESET
        mov dr6, rax
        or qword [rsp + 16 + 16], RF    ; the frame's RFLAGS: bp0 runs once
        pop rcx
        pop rax
.iret:  iretq

section .data
        align 8, db 0
pushed_flags:   dq 0
wvar:   dq 0
rvar:   dd 7, 8
db_count:       dd 0
db_log: times 32 dd 0
want_log:
        dd 0x4000, 0x4000, 0x4000, 0x4000, 0x4000, 0x4000, 0x4000, 0x4000
        dd 0x4000, 0x4000, 0x4000, 0x4000
        dd 0x0001, 0x0002, 0x0004, 0x0008
        dd 0
