/* SPDX-License-Identifier: MIT */
#include "trace/attrib.h"

#include "vbts/format.h"
#include "x86/fault.h"

bool attrib_skip(const struct cpu_view *v, uint64_t lin, uint64_t rip, int max,
                 bool allow_indirect, struct branch_pred *rec, bool *has_rec)
{
    struct branch_pred p;
    const char *why;
    *has_rec = false;
    for (int n = 0; n < max; n++) {
        if (branch_predict_at(v, lin, &p, &why))
            return false;
        if (p.kind == VBTS_KIND_UNKNOWN) {
            if (p.vector_hint >= 0)
                return false;   /* it raises for sure (ud2): no straight line goes past it */
            lin += p.len;
            if (rip == lin)
                return true;
            continue;
        }
        if (p.kind == VBTS_KIND_JCC && rip == lin + p.len)
            return true;        /* a conditional branch not taken */
        if (p.target_known ? rip != p.target : !(allow_indirect && n == 0))
            return false;
        *rec = p;
        rec->target = rip;
        *has_rec = true;
        return true;
    }
    return false;
}

static bool writes_sp(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    for (unsigned i = 0; i < in->operand_count; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
            (ops[i].reg.value == ZYDIS_REGISTER_RSP || ops[i].reg.value == ZYDIS_REGISTER_ESP ||
             ops[i].reg.value == ZYDIS_REGISTER_SP || ops[i].reg.value == ZYDIS_REGISTER_SPL))
            return true;
    return false;
}

/* The stack pointer's change by a push, pop, near call or return, add, sub or
 * lea of a constant; false for other writes (their effect is unknown). */
static bool sp_change(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, int64_t *d)
{
    int64_t size = in->operand_width / 8;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_PUSH:
    case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFD:
    case ZYDIS_MNEMONIC_PUSHFQ:
        *d = -size;
        return size > 0;
    case ZYDIS_MNEMONIC_POP:
        /* pop rsp loads the stack pointer from the stack (Linux's irq stack switch) */
        if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
            (ops[0].reg.value == ZYDIS_REGISTER_RSP || ops[0].reg.value == ZYDIS_REGISTER_ESP ||
             ops[0].reg.value == ZYDIS_REGISTER_SP))
            return false;
        *d = size;
        return size > 0;
    case ZYDIS_MNEMONIC_POPF:
    case ZYDIS_MNEMONIC_POPFD:
    case ZYDIS_MNEMONIC_POPFQ:
        *d = size;
        return size > 0;
    case ZYDIS_MNEMONIC_CALL:
        *d = -size;
        return size > 0 && in->meta.branch_type == ZYDIS_BRANCH_TYPE_NEAR;
    case ZYDIS_MNEMONIC_RET:
        *d = size;
        return size > 0 && in->meta.branch_type == ZYDIS_BRANCH_TYPE_NEAR && in->operand_count_visible == 0;
    case ZYDIS_MNEMONIC_ADD:
    case ZYDIS_MNEMONIC_SUB:
        /* add/sub rsp, imm: a handler dropping an error code, a frame made */
        if (ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
            return false;
        *d = in->mnemonic == ZYDIS_MNEMONIC_ADD ? ops[1].imm.value.s : -ops[1].imm.value.s;
        return true;
    case ZYDIS_MNEMONIC_LEA:
        /* lea rsp, [rsp + disp] */
        if (ops[1].mem.base != ops[0].reg.value || ops[1].mem.index != ZYDIS_REGISTER_NONE)
            return false;
        *d = ops[1].mem.disp.value;
        return true;
    default:
        return false;
    }
}

bool attrib_run_sp(const struct cpu_view *v, uint64_t lin, uint64_t rip, int max, int64_t *delta)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    *delta = 0;
    for (int n = 0; n < max; n++) {
        if (cpu_decode(v, lin, &in, ops, &why))
            return false;
        if (writes_sp(&in, ops)) {
            int64_t d;
            if (!sp_change(&in, ops, &d))
                return false;
            *delta += d;
        }
        lin += in.length;
        if (lin == rip || in.meta.category == ZYDIS_CATEGORY_COND_BR ||
            in.meta.category == ZYDIS_CATEGORY_UNCOND_BR || in.meta.category == ZYDIS_CATEGORY_CALL ||
            in.meta.category == ZYDIS_CATEGORY_RET)
            return true;
    }
    return false;
}

/*
 * Two vectors whose records would be the same (one handler, and both
 * exceptions or both interrupts, so the same kind and no error code to
 * tell them apart in the frame: vectors from 32 up push none) are one
 * explanation.  Linux points several system vectors at one handler.
 */
static bool same_record(int a, uint64_t ha, int b, uint64_t hb)
{
    return ha == hb && (a >= 32) == (b >= 32) && (a >= 32 || a == b);
}

/*
 * Exception vectors the CPU never delivers by itself to the guests vbts
 * runs (no SEV or TDX): reserved ones, coprocessor segment overrun, #MC
 * (only a monitor injects it), #VE, #HV, #VC, #SX.  Linux leaves its
 * early handlers in such gates after freeing them, and whatever memory
 * replaced them must not explain an event.  Injected, they are hinted.
 * #CP likewise, without CET.
 */
#define NEVER_RAISED ((1u << 9) | (1u << 15) | (1u << 18) | (1u << 20) | 0xffc00000u)

void attrib_event(const struct cpu_view *v, uint64_t rip, int hint, bool only, int max,
                  struct attrib_event *out)
{
    int found = -1, exact = -1, hinted = -1, other = -1;
    uint64_t h, found_h = 0;
    struct branch_pred skip;
    bool hs;

    for (unsigned vec = only ? (unsigned)hint : 0; vec < (only ? (unsigned)hint + 1 : 256u); vec++) {
        if ((int)vec != hint && vec < 32 &&
            ((NEVER_RAISED >> vec & 1) || (vec == 21 && !(v->sregs->cr4 & CR4_CET))))
            continue;
        if (cpu_idt_handler(v, vec, &h))
            continue;
        if (h == rip) {
            if (exact < 0 || (int)vec == hint)
                exact = (int)vec;
            continue;
        }
        if (!attrib_skip(v, h, rip, max, true, &skip, &hs))
            continue;
        if ((int)vec == hint)
            hinted = (int)vec;
        if (found < 0) {
            found = (int)vec;
            found_h = h;
        } else if (!same_record(found, found_h, (int)vec, h) && other < 0) {
            other = (int)vec;
        }
    }
    out->has_skip = false;
    out->vector = -1;
    out->other = -1;
    if (exact >= 0) {
        out->status = ATTRIB_OK;
        out->vector = exact;
        cpu_idt_handler(v, (unsigned)exact, &out->handler);
        return;
    }
    if (hinted >= 0)
        found = hinted;
    if (found < 0 || (other >= 0 && hinted < 0)) {
        out->status = found < 0 ? ATTRIB_NONE : ATTRIB_SEVERAL;
        out->vector = found;
        out->other = other;
        return;
    }
    out->status = ATTRIB_OK;
    out->vector = found;
    cpu_idt_handler(v, (unsigned)found, &out->handler);
    attrib_skip(v, out->handler, rip, max, true, &out->skip, &out->has_skip);
}

unsigned attrib_kind(unsigned kind, int vector)
{
    /* Vector 2 is the NMI's, which no instruction raises (INT 2 is a software interrupt). */
    return kind == VBTS_KIND_EXCEPTION && (vector >= 32 || vector == 2) ? VBTS_KIND_INTERRUPT : kind;
}

bool attrib_may_raise(const struct cpu_view *at, uint64_t from, int vector)
{
    const uint32_t judged = 1u << 0 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6 | 1u << 7 | 1u << 10 |
                            1u << 11 | 1u << 12 | 1u << 13 | 1u << 14 | 1u << 16 | 1u << 17 | 1u << 19;
    if (vector < 0 || vector >= 32 || !(judged & (1u << vector)))
        return true;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    bool ok = cpu_decode(at, from, &in, ops, &why) == 0;
    return fault_may_raise(at, from, ok ? &in : NULL, ops) & (1u << vector);
}

bool attrib_swallows_step(const struct branch_pred *p)
{
    return p->shadow || p->mnemonic == ZYDIS_MNEMONIC_STI || p->mnemonic == ZYDIS_MNEMONIC_PAUSE;
}

bool attrib_shadowed(const struct cpu_view *v, uint64_t next, uint64_t rip, struct branch_pred *s)
{
    const char *why;
    for (int n = 0; n < ATTRIB_SKIP_MAX; n++) {
        if (branch_predict_at(v, next, s, &why) < 0)
            return false;
        if (s->kind != VBTS_KIND_UNKNOWN && !(s->kind == VBTS_KIND_JCC && !s->taken))
            return s->taken && s->target_known && rip == s->target;
        if (rip == next + s->len)
            return true;
        if (!attrib_swallows_step(s))
            return false;
        next += s->len;
    }
    return false;
}
