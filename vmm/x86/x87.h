/* SPDX-License-Identifier: MIT */
/*
 * x87 instructions at CPL0 that the host's emulator fails (kvm_pvm
 * emulates CPL0 code, and its emulator knows only fninit, fnstcw and
 * fnstsw).  The monitor completes them on this machine's own x87 unit, on
 * the guest's x87 state: the guest runs on this same CPU, so every bit of
 * a result (rounding, precision control, flags, tags) is what its CPU
 * gives.  Only instructions that touch no general register or flag, take
 * at most one memory operand of a fixed size and have their documented
 * encoding are completed; anything else is left to fail.  The caller
 * reads and writes the guest's state with x86/fpu.h: the fninit the host's
 * emulator runs itself puts the x87 state in its initial configuration,
 * which KVM_GET_FPU does not show (seed 18732 in tests/gen/corpus).
 */
#ifndef VBTS_X86_X87_H
#define VBTS_X86_X87_H

#include <stdint.h>
#include <linux/kvm.h>

#include "x86/cpu.h"
#include "x86/deliver.h"

enum x87_verdict {
    X87_NOT,        /* not one it completes: the failure stands */
    X87_DONE,       /* *fpu, memory and *rax (FNSTSW AX) updated; skip *len bytes */
    X87_RAISE,      /* it raises *d (#NM, #MF, #PF on its operand) before it does anything */
};

/*
 * The x87 instruction at the vCPU's RIP, on the state `fpu` (KVM_GET_FPU).
 * Memory operands go through the guest's page tables, with the CPU's
 * checks (a #PF to raise); where those are not known, X87_NOT.
 */
enum x87_verdict x87_emulate(const struct cpu_view *v, struct kvm_fpu *fpu, __u64 *rax, unsigned *len,
                             struct delivery *d);

/*
 * Runs opcode (D8-DF) and modrm: a memory form addresses
 * [rdi] = `mem`) on this CPU's x87 unit with `fpu`'s x87 state, and stores
 * the state after it in `fpu`; the host's own state is kept.  The caller
 * has checked the encoding (x87_runnable) and that no unmasked exception
 * is pending, so the host raises nothing.  FOP, FIP and FDP come back as
 * the stub left them (its opcode, its addresses) where the instruction set
 * them, else 0.
 */
void x87_run(struct kvm_fpu *fpu, uint8_t opcode, uint8_t modrm, void *mem);

/* Is opcode/modrm one x87_run takes?  *size: bytes of its memory operand (0: none), *store. */
bool x87_runnable(uint8_t opcode, uint8_t modrm, unsigned *size, bool *store);

#endif
