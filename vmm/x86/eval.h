/* SPDX-License-Identifier: MIT */
/*
 * The general registers and arithmetic flags after an x86 instruction,
 * from those before it and the memory it reads: how the branch engine's
 * planner (trace/known.c) decides conditional branches over data before
 * they run.  A small set, computed exactly (moves, LEA, additions, logic,
 * shifts, multiplications, bit tests, condition codes, POP); whatever
 * else an instruction writes becomes unknown.  tests/unit/x86/test_eval.c
 * checks each against the host CPU.
 * prefix: eval
 */
#ifndef VBTS_X86_EVAL_H
#define VBTS_X86_EVAL_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

#define RFLAGS_AF (1u << 4)
/* The flags evaluated: the ones conditions test. */
#define EVAL_FLAGS (RFLAGS_CF | RFLAGS_PF | RFLAGS_AF | RFLAGS_ZF | RFLAGS_SF | RFLAGS_OF)

struct eval_regs {
    uint64_t gpr[16];           /* Zydis's order: RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8..R15 */
    uint64_t rflags;
    uint32_t unknown;           /* general registers (bit per id, eval_gpr_bit) not known */
    uint32_t flags_unknown;     /* bits of EVAL_FLAGS not known */
};

/*
 * A memory operand's value, `bytes` wide at its address plus `offset` (a
 * bit test's), as it will be when the instruction runs; false if that is
 * not known.
 */
typedef bool (*eval_load_fn)(void *ctx, const ZydisDecodedOperand *op, int64_t offset, unsigned bytes,
                             uint64_t *val);

/* Everything known: r's registers and flags. */
void eval_init(struct eval_regs *e, const struct kvm_regs *r);

/* The general register r is part of, as a bit of eval_regs.unknown: 0 if it is none. */
uint32_t eval_gpr_bit(ZydisRegister r);
/* The general registers (any part of them) an instruction writes, as such bits. */
uint32_t eval_gprs_written(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops);

/* A general register's value (any width, AH..BH too): false if not known. */
bool eval_get(const struct eval_regs *e, ZydisRegister r, uint64_t *val);

/*
 * The instruction at `ip` (its RIP, for RIP-relative operands) runs on e.
 * What it writes and this computes is known after; the rest it writes
 * (RSP aside: the planner follows that itself) is unknown.  True if
 * nothing it writes became unknown, but the flags it leaves undefined.
 */
bool eval_insn(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, uint64_t ip,
               struct eval_regs *e, eval_load_fn load, void *ctx);

/* What the instruction writes (RSP aside) becomes unknown: it is not computed. */
void eval_forget(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, struct eval_regs *e);

/*
 * A conditional jump's (JCC, JRCXZ and its kin) condition on e: 1 taken,
 * 0 not, -1 not known.  LOOP is not one here: it writes RCX.
 */
int eval_cond(const ZydisDecodedInstruction *in, const struct eval_regs *e);

/*
 * BT, BTS, BTR, BTC on memory with a register bit offset address the
 * operand's unit that holds the bit: *offset bytes from the operand's
 * address.  False if that register is not known.  0 for any other
 * instruction.
 */
bool eval_bit_offset(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, const struct eval_regs *e,
                     int64_t *offset);

#endif
