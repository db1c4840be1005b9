; SPDX-License-Identifier: MIT
; branches32.asm: near and far branches in 32-bit protected mode.
;
; No paging, no long mode, no IDT: multiboot's entry, then the near and far
; branches of the 32-bit instruction set (sysenter at CPL0 among them), then
; debug-exit 0.  Left out: int n / int3, and iretd in (legacy) protected
; mode: the KVM of the development host (kvm_pvm, which emulates CPL0 code)
; fails on them with an emulation error (see guest-stub/README.md).  The
; expected BTS records are stated by the `@bts` comments (syntax:
; guest-stub/README.md), in execution order; a not-taken conditional branch
; has none.  Code skipped by a taken branch is `ud2`, which ends the guest
; (no IDT) should a branch misbehave; the self-checks jump to `fail`
; (debug-exit 0x7f).

%include "multiboot.inc"
%include "exit.inc"

section .text
bits 32

main32:
; --- direct near jumps --------------------------------------------------
.jmp8:  jmp short .jmp8_t               ; @bts -> .jmp8_t
        ud2
.jmp8_t:
.jmp32: jmp near .jmp32_t               ; @bts -> .jmp32_t
        ud2
.jmp32_t:
.back:  jmp .fwd                        ; @bts -> .fwd
.back_t:
        jmp .after_back                 ; (annotated below, in execution order)
.fwd:   nop
.jback: jmp .back_t                     ; @bts -> .back_t
        ; @bts .back_t -> .after_back
.after_back:

; --- a jump and a call to the very next instruction ----------------------
.next:  jmp short $+2                   ; @bts -> .next_t
.next_t:
.call5: call $+5                        ; @bts -> .call5_t
.call5_t:
        pop eax
        cmp eax, .call5_t
.chk1:  jne fail                        ; not taken

; --- direct call and ret, ret imm16, nested calls ------------------------
.call1: call f_add1                     ; @bts -> f_add1
        ; @bts f_add1.ret -> .call1_r
.call1_r:
        push dword 0x11
        push dword 0x22
.call2: call f_sum2                     ; @bts -> f_sum2
        ; @bts f_sum2.ret -> .call2_r    (ret 8)
.call2_r:
        cmp eax, 0x33
.chk2:  jne fail                        ; not taken
        cmp esp, stack_top
.chk3:  jne fail                        ; not taken: ret 8 popped the args
.call3: call f_outer                    ; @bts -> f_outer
        ; @bts f_outer.call -> f_add1
        ; @bts f_add1.ret -> f_outer.call_r
        ; @bts f_outer.ret -> .call3_r
.call3_r:

; --- indirect jumps: register, memory, table -----------------------------
        mov eax, .jreg_t
.jreg:  jmp eax                         ; @bts -> .jreg_t
        ud2
.jreg_t:
.jmem:  jmp [ptr_jmem]                  ; @bts -> .jmem_t
        ud2
.jmem_t:
        mov ecx, 2
.jtab:  jmp [jump_table + ecx * 4]      ; @bts -> .case2
.case0: ud2
.case1: ud2
.case2: mov esi, ptr_jmem2 - 4
.jmem2: jmp [esi + 4]                   ; @bts -> .jmem2_t
        ud2
.jmem2_t:

; --- indirect calls: register, memory, and ret to a pushed address -------
        mov edx, f_add1
        xor eax, eax
.creg:  call edx                        ; @bts -> f_add1
        ; @bts f_add1.ret -> .creg_r
.creg_r:
.cmem:  call [ptr_f_add1]               ; @bts -> f_add1
        ; @bts f_add1.ret -> .cmem_r
.cmem_r:
        cmp eax, 2
.chk4:  jne fail                        ; not taken
        push dword .pret_t
.pret:  ret                             ; @bts -> .pret_t
        ud2
.pret_t:

; --- conditional jumps, taken and not taken ------------------------------
        xor eax, eax                    ; ZF = 1
.jz:    jz .jz_t                        ; @bts -> .jz_t
        ud2
.jz_t:
.jnz:   jnz fail                        ; not taken
        mov eax, 5
        cmp eax, 7                      ; CF = 1, SF != OF
.jb:    jb .jb_t                        ; @bts -> .jb_t
        ud2
.jb_t:
.jge:   jge fail                        ; not taken
.jl:    jl near .jl_t                   ; @bts -> .jl_t   (rel32 form)
        ud2
.jl_t:
.ja:    ja near fail                    ; not taken (rel32 form)
        mov ecx, 3
.dec:   dec ecx
.jnzb:  jnz .dec                        ; @bts -> .dec x2  (backward, taken twice)

; --- loop, loope, loopne, jecxz, jcxz -------------------------------------
        mov ecx, 3
.loop:  inc eax
.loop1: loop .loop                      ; @bts -> .loop x2
        mov ecx, 2
.loope: cmp eax, eax                    ; ZF = 1
.loope1:
        loope .loope                    ; @bts -> .loope  (then ECX = 0)
        mov ecx, 4
        xor edx, edx
.loopne:
        inc edx
        cmp edx, 2                      ; ZF = 1 on the second round
.loopne1:
        loopne .loopne                  ; @bts -> .loopne  (then ZF = 1)
        xor ecx, ecx
.jecxz: jecxz .jecxz_t                  ; @bts -> .jecxz_t
        ud2
.jecxz_t:
        mov ecx, 0x10000                ; CX = 0, ECX != 0
.jecxz2:
        jecxz fail                      ; not taken
.jcxz:  jcxz .jcxz_t                    ; @bts -> .jcxz_t  (0x67 prefix: tests CX)
        ud2
.jcxz_t:

; --- far transfers within protected mode --------------------------------
.fcall: call SEL_CODE32:f_far           ; @bts -> f_far
        ; @bts f_far.ret -> .fcall_r
.fcall_r:
.fcallm:
        call far [ptr_f_far]            ; @bts -> f_far
        ; @bts f_far.ret -> .fcallm_r
.fcallm_r:
        ; The argument has an RFLAGS image's shape, TF in it (VIP, IF, TF):
        ; after retf 4, below ESP, with the return address and CS, it looks
        ; like the frame of an exception at .fcall4_r.  A host that runs a
        ; handler unstepped (kvm_amd) leaves only such a frame: vbts tells
        ; these old bytes from one by the flags, which are not the CPU's.
        push dword 0x100302
.fcall4:
        call SEL_CODE32:f_far4          ; @bts -> f_far4
        ; @bts f_far4.ret -> .fcall4_r   (retf 4)
.fcall4_r:
        cmp esp, stack_top
.chk5:  jne fail                        ; not taken
.fjmpm: jmp far [ptr_fjmp]              ; @bts -> .fjmpm_t
        ud2
.fjmpm_t:
.fjmp:  jmp SEL_CODE32:.fjmp_t          ; @bts -> .fjmp_t
        ud2
.fjmp_t:

; --- sysenter at CPL0: CS (SS = CS + 8), ESP, EIP from the SYSENTER MSRs --
        xor edx, edx
        mov ecx, 0x174                  ; IA32_SYSENTER_CS
        mov eax, SEL_CODE32
        wrmsr
        mov ecx, 0x175                  ; IA32_SYSENTER_ESP: this stack
        mov eax, esp
        wrmsr
        mov ecx, 0x176                  ; IA32_SYSENTER_EIP
        mov eax, .sysenter_t
        wrmsr
.sysenter:
        sysenter                        ; @bts -> .sysenter_t
        ud2
.sysenter_t:

; @exit 0
        DEBUG_EXIT 0

fail:   DEBUG_EXIT 0x7f

; --- functions ----------------------------------------------------------
f_add1: inc eax
.ret:   ret

f_sum2: mov eax, [esp + 4]
        add eax, [esp + 8]
.ret:   ret 8

f_outer:
        xor eax, eax
.call:  call f_add1
.call_r:
.ret:   ret

f_far:  nop
.ret:   retf

f_far4: mov ebx, [esp + 8]              ; the argument, above EIP and CS
.ret:   retf 4

section .data
        align 4, db 0
ptr_jmem:       dd main32.jmem_t
ptr_jmem2:      dd main32.jmem2_t
jump_table:     dd main32.case0, main32.case1, main32.case2
ptr_f_add1:     dd f_add1
ptr_f_far:      dd f_far
                dw SEL_CODE32
                align 4, db 0
ptr_fjmp:       dd main32.fjmpm_t
                dw SEL_CODE32
