/* SPDX-License-Identifier: MIT */
#include "trace/rounds.h"
#include "trace/known.h"

#include <string.h>

#include "vbts/format.h"

/* Instructions a loop run whole may take: interrupts wait for its end (BLOCKIRQ), where IF would let them in. */
#define ROUNDS_INSNS_IF 4096
#define ROUNDS_INSNS (1u << 22)

/* Does the instruction at lin write (any part of) the general register r? */
static bool writes(const struct cpu_view *v, uint64_t lin, ZydisRegister r)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    return cpu_decode(v, lin, &in, ops, &why) < 0 || (eval_gprs_written(&in, ops) & eval_gpr_bit(r));
}

/*
 * The register that counts a loop's rounds down to 0, at the conditional
 * branch j back to its head (`loop`: RCX or ECX) or at the instruction
 * before it (`dec r` or `sub r, 1`, then `jnz`); false for other loops.
 */
static bool counter_of(const struct cpu_view *v, const struct stretch *s, uint64_t j, ZydisRegister *r,
                       unsigned *bits, unsigned *at)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_decode(v, j, &in, ops, &why) < 0)
        return false;
    if (in.mnemonic == ZYDIS_MNEMONIC_LOOP) {
        *r = ZYDIS_REGISTER_RCX;
        *bits = in.address_width;
        *at = s->nins;
        return *bits == 32 || *bits == 64;
    }
    if (in.mnemonic != ZYDIS_MNEMONIC_JNZ || s->nins == 0 ||
        cpu_decode(v, s->ins[s->nins - 1], &in, ops, &why) < 0 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
        (in.mnemonic != ZYDIS_MNEMONIC_DEC && !(in.mnemonic == ZYDIS_MNEMONIC_SUB &&
                                                ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[1].imm.value.u == 1)))
        return false;
    *r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, ops[0].reg.value);
    *bits = ops[0].size;
    *at = s->nins - 1;
    return (*bits == 32 || *bits == 64) && *r != ZYDIS_REGISTER_RSP;
}

bool rounds_counted(const struct cpu_view *v, const struct stretch *s, uint64_t j)
{
    ZydisRegister r;
    unsigned bits, at;
    return counter_of(v, s, j, &r, &bits, &at);
}

/*
 * The stretch ends at a conditional branch back to its own start, through
 * code known at plan time, and a register counts the rounds down: it is
 * one round of a loop, which runs whole under one breakpoint at its exit.
 * Sound where every round is the first: no handler to watch, RSP back
 * where it was, no target read from memory after the first round, the counter written by no
 * other instruction (nothing else of the round depends on it, or on any
 * register the round writes: the planner cuts there).  The planner then
 * sees a second round, its first one's stores noted, exactly as the first
 * and each round after it as the second.
 */
bool rounds_plan(const struct cpu_view *v, int max, const uint64_t *stop, struct stretch *out)
{
    static __thread struct stretch a, r2;
    static __thread uint64_t mem[2][STRETCH_MEM(STRETCH_MAX_INSNS) / 8 + 1];
    uint64_t j = out->end, c;
    ZydisRegister r;
    unsigned bits, at;
    if (!out->alone || out->nh || !out->sp_exact || out->loops || out->nins >= STRETCH_MAX_INSNS ||
        !counter_of(v, out, j, &r, &bits, &at))
        return false;
    if (!a.cap) {
        stretch_attach(&a, mem[0], STRETCH_MAX_INSNS);
        stretch_attach(&r2, mem[1], STRETCH_MAX_INSNS);
    }
    for (unsigned i = 0; i < out->nins; i++)
        if (i != at && writes(v, out->ins[i], r))
            return false;
    if (cpu_register(v->regs, r, &c) < 0)
        return false;
    c = bits == 32 ? (uint32_t)c : c;
    stretch_copy(&a, out);
    a.fork_at = j;
    a.fork_taken = true;
    stretch_run(v, max, stop, STRETCH_MAX_INSNS, j, &a);
    unsigned np = out->nins;
    uint64_t cap = (v->regs->rflags & RFLAGS_IF) ? ROUNDS_INSNS_IF : ROUNDS_INSNS;
    if (a.end != out->ins[0] || a.why != STRETCH_END_LOOP || a.nh || !a.sp_exact || a.sp_delta ||
        a.nins <= np || c < 2 || c > cap / a.nins)
        return false;
    for (unsigned i = np + 1; i < a.nins; i++)
        if (writes(v, a.ins[i], r))
            return false;
    struct branch_pred p;
    const char *why;
    if (a.ins[np] != j || branch_predict_at(v, j, &p, &why) < 0)
        return false;
    uint64_t exit = j + p.len;
    /* The second round, as the planner sees it after the first. */
    stretch_copy(&r2, &a);
    r2.nins = r2.nrec = 0;
    r2.mem_targets = false;     /* the first round's may have (a slot pushed before it), not the second's */
    stretch_run(v, max, stop, a.nins, out->ins[0], &r2);
    if (r2.nins != a.nins || r2.end != out->ins[0] || r2.nrec != a.nrec || r2.nh || !r2.sp_exact || r2.sp_delta ||
        r2.mem_targets || memcmp(r2.ins, a.ins, a.nins * sizeof(a.ins[0])) ||
        memcmp(r2.recs_before, a.recs_before, a.nins * sizeof(a.recs_before[0])) || stretch_index(&a, exit) >= 0)
        return false;
    for (unsigned k = 0; k < a.nrec; k++)
        if (r2.rec[k].from != a.rec[k].from || r2.rec[k].to != a.rec[k].to || r2.rec[k].kind != a.rec[k].kind)
            return false;
    int64_t sp = out->sp_delta;
    stretch_copy(out, &a);
    out->rounds = c;
    out->counter = (uint16_t)r;
    out->counter_bits = (uint8_t)bits;
    out->counted = at;
    out->nprefix = np;
    out->nprefix_rec = a.recs_before[np];
    out->end = exit;
    out->sp_delta = sp;
    out->why = STRETCH_END_ROUNDS;
    out->fork_at = 0;
    out->fork_taken = false;
    out->nleaf = 1;
    out->leaf[0] = (struct stretch_leaf){ .end = exit, .sp_exact = true, .sp_delta = sp, .why = STRETCH_END_ROUNDS };
    return true;
}
