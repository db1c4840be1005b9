/* SPDX-License-Identifier: MIT */
#include "trace/branch.h"

#include <Zydis/Zydis.h>
#include <string.h>

#include "vbts/format.h"
#include "vbts/le.h"
#include "x86/eval.h"
#include "x86/fault.h"

static uint64_t width_mask(unsigned bits)
{
    return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

static bool cond_taken(const ZydisDecodedInstruction *in, const struct kvm_regs *r)
{
    uint64_t count = r->rcx & width_mask(in->address_width);
    bool zf = r->rflags & RFLAGS_ZF;
    struct eval_regs e;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_LOOP:  return count != 1;
    case ZYDIS_MNEMONIC_LOOPE: return count != 1 && zf;
    case ZYDIS_MNEMONIC_LOOPNE: return count != 1 && !zf;
    default:
        /* Every flag known: the condition is the evaluator's (x86/eval.h), a jump not one it knows is taken. */
        eval_init(&e, r);
        return eval_cond(in, &e) != 0;
    }
}

static int read_uint(const struct cpu_view *v, uint64_t lin, unsigned bytes, uint64_t *val)
{
    *val = 0;
    return cpu_read_linear(v, lin, val, bytes);
}

/* Stack slot `i` of `bytes` each, counted from the stack pointer. */
static int read_stack(const struct cpu_view *v, unsigned i, unsigned bytes, uint64_t *val)
{
    uint64_t sp = (v->regs->rsp + (uint64_t)i * bytes) & width_mask(cpu_stack_width(v->sregs));
    return read_uint(v, cpu_stack_base(v->sregs) + sp, bytes, val);
}

/* Target of an indirect near jmp/call, read from its operand. */
static int indirect_target(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                           const ZydisDecodedOperand *op, uint64_t *target)
{
    uint64_t cs_base = cpu_code_base(v->sregs);
    if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        uint64_t val;
        if (cpu_register(v->regs, op->reg.value, &val) < 0)
            return -1;
        *target = cs_base + (val & width_mask(in->operand_width));
        return 0;
    }
    uint64_t ea;
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || cpu_operand_address(v, in, op, &ea) < 0)
        return -1;
    uint64_t off;
    if (read_uint(v, ea, in->operand_width / 8, &off))
        return -1;
    *target = cs_base + off;
    return 0;
}

/* A far jmp/call's m16:16, m16:32 or m16:64 operand: far_destination's answer. */
static int far_pointer(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *op, uint64_t *target, int *vector)
{
    uint64_t ea, off, sel;
    unsigned off_bytes = in->operand_width / 8;
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || cpu_operand_address(v, in, op, &ea) < 0 ||
        read_uint(v, ea, off_bytes, &off) || read_uint(v, ea + off_bytes, 2, &sel))
        return -1;
    return cpu_far_destination(v, (uint16_t)sel, off, target, vector);
}

static uint8_t classify(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    bool far = in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
    bool rel = ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative;

    switch (in->meta.category) {
    case ZYDIS_CATEGORY_COND_BR:
        return VBTS_KIND_JCC;
    case ZYDIS_CATEGORY_UNCOND_BR:
        return far ? VBTS_KIND_FAR : rel ? VBTS_KIND_JMP : VBTS_KIND_JMP_IND;
    case ZYDIS_CATEGORY_CALL:
        return far ? VBTS_KIND_FAR : rel ? VBTS_KIND_CALL : VBTS_KIND_CALL_IND;
    case ZYDIS_CATEGORY_RET:
        if (in->mnemonic == ZYDIS_MNEMONIC_IRET || in->mnemonic == ZYDIS_MNEMONIC_IRETD ||
            in->mnemonic == ZYDIS_MNEMONIC_IRETQ)
            return VBTS_KIND_IRET;
        return far ? VBTS_KIND_FAR : VBTS_KIND_RET;
    case ZYDIS_CATEGORY_SYSCALL:
    case ZYDIS_CATEGORY_SYSRET:
        return VBTS_KIND_SYSCALL;
    case ZYDIS_CATEGORY_INTERRUPT:
        return VBTS_KIND_INT;
    default:
        /* Zydis files IRET under its own category on some versions. */
        if (in->mnemonic == ZYDIS_MNEMONIC_IRET || in->mnemonic == ZYDIS_MNEMONIC_IRETD ||
            in->mnemonic == ZYDIS_MNEMONIC_IRETQ)
            return VBTS_KIND_IRET;
        return VBTS_KIND_UNKNOWN;
    }
}

/* What needs no register state, of the instruction decoded at `lin`: kind, length, hints. */
static void predict_common(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                           const ZydisDecodedOperand *ops, struct branch_pred *p)
{
    memset(p, 0, sizeof(*p));
    p->cpl = cpu_cpl(v->sregs);
    p->from = lin;
    p->len = in->length;
    p->kind = classify(in, ops);
    p->mnemonic = (uint16_t)in->mnemonic;
    p->vector_hint = -1;
    p->dr = -1;
    if (in->mnemonic == ZYDIS_MNEMONIC_UD2 || in->mnemonic == ZYDIS_MNEMONIC_UD0 ||
        in->mnemonic == ZYDIS_MNEMONIC_UD1)
        p->vector_hint = 6;
    if ((in->mnemonic == ZYDIS_MNEMONIC_MOV && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
         ops[0].reg.value == ZYDIS_REGISTER_SS) ||
        (in->mnemonic == ZYDIS_MNEMONIC_POP && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
         ops[0].reg.value == ZYDIS_REGISTER_SS))
        p->shadow = true;
}

/* Relative and far-pointer branches: the target is in the instruction itself. */
static bool direct_target(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                          const ZydisDecodedOperand *ops, uint64_t *target)
{
    enum cpu_mode m = cpu_mode(v->sregs);
    uint64_t cs_base = cpu_code_base(v->sregs);
    if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative) {
        uint64_t t;
        if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(in, &ops[0], v->regs->rip, &t)))
            return false;
        *target = cs_base + t;
        if (m != MODE_LONG64)
            *target = (uint32_t)*target;
        return true;
    }
    return false;
}

/*
 * A far JMP or CALL: through a pointer or memory.  Its target, or the
 * vector it raises before it is taken (p->vector_hint).
 */
static void far_target(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, struct branch_pred *p)
{
    int r, vector = -1;
    if (ops[0].type == ZYDIS_OPERAND_TYPE_POINTER)
        r = cpu_far_destination(v, ops[0].ptr.segment, ops[0].ptr.offset, &p->target, &vector);
    else
        r = far_pointer(v, in, &ops[0], &p->target, &vector);
    p->target_known = r == 0;
    if (r == 1)
        p->vector_hint = (int16_t)vector;
}

/*
 * DIV raises #DE for sure when the divisor is 0 or the quotient does not
 * fit (the dividend's high half is not below the divisor).  Known before
 * it runs, so a handler right after it cannot pass for straight-line code.
 */
static bool div_faults(const struct cpu_view *v, const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    if (in->mnemonic != ZYDIS_MNEMONIC_DIV && in->mnemonic != ZYDIS_MNEMONIC_IDIV)
        return false;
    const ZydisDecodedOperand *d = &ops[0];
    unsigned bits = d->size;
    uint64_t divisor, lin;
    if (d->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if (cpu_register(v->regs, d->reg.value, &divisor))
            return false;
    } else if (d->type == ZYDIS_OPERAND_TYPE_MEMORY && bits <= 64) {
        divisor = 0;
        if (cpu_operand_address(v, in, d, &lin) || cpu_read_linear(v, lin, &divisor, bits / 8))
            return false;
    } else {
        return false;
    }
    uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    divisor &= mask;
    if (divisor == 0)
        return true;
    if (in->mnemonic == ZYDIS_MNEMONIC_IDIV)
        return false;   /* its overflow is not worth the sign arithmetic here */
    uint64_t high = bits == 8 ? (v->regs->rax >> 8) & 0xff : v->regs->rdx & mask;
    return high >= divisor;
}

/* SYSRET goes to RCX (ECX without REX.W); INT n and INT3 to their vector's handler. */
static void system_target(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                          const ZydisDecodedOperand *ops, struct branch_pred *p)
{
    p->to_user = in->meta.category == ZYDIS_CATEGORY_SYSRET;
    if (in->mnemonic == ZYDIS_MNEMONIC_SYSRET) {
        p->target = in->operand_width == 64 ? v->regs->rcx : (uint32_t)v->regs->rcx;
        p->target_known = true;
        /* RFLAGS from R11: its TF is the guest's (trace/gdbg.c), though the guest's was clear before */
        p->loads_flags = true;
        p->flags_image = v->regs->r11;
    } else if (in->mnemonic == ZYDIS_MNEMONIC_INT || in->mnemonic == ZYDIS_MNEMONIC_INT3) {
        unsigned vec = in->mnemonic == ZYDIS_MNEMONIC_INT3 ? 3 : (unsigned)ops[0].imm.value.u & 0xff;
        p->vector = (uint8_t)vec;
        p->target_known = cpu_idt_handler(v, vec, &p->target) == 0;
    }
}

/*
 * What the guest's own debugging (trace/gdbg.c) needs to know of an
 * instruction: the RFLAGS image a POPF loads, the debug register a MOV
 * reads or writes.  (IRET's image: in branch_predict.)
 */
static void debug_effects(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                          const ZydisDecodedOperand *ops, struct branch_pred *p)
{
    if (in->mnemonic == ZYDIS_MNEMONIC_POPF || in->mnemonic == ZYDIS_MNEMONIC_POPFD ||
        in->mnemonic == ZYDIS_MNEMONIC_POPFQ) {
        unsigned w = in->operand_width / 8;
        p->loads_flags = read_stack(v, 0, w > 4 ? 4 : w, &p->flags_image) == 0;
        return;
    }
    if (in->mnemonic != ZYDIS_MNEMONIC_MOV || in->operand_count_visible != 2)
        return;
    for (int i = 0; i < 2; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[i].reg.value >= ZYDIS_REGISTER_DR0 &&
            ops[i].reg.value <= ZYDIS_REGISTER_DR7) {
            p->dr = (int8_t)(ops[i].reg.value - ZYDIS_REGISTER_DR0);
            p->dr_write = i == 0;
        }
}

int branch_predict(const struct cpu_view *v, struct branch_pred *p, const char **why)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (cpu_decode(v, cpu_linear_ip(v->regs, v->sregs), &in, ops, why))
        return -1;
    predict_common(v, cpu_linear_ip(v->regs, v->sregs), &in, ops, p);
    if (p->kind == VBTS_KIND_UNKNOWN) {
        unsigned err;
        int vec;
        debug_effects(v, &in, ops, p);
        p->irq_change = cpu_irq_change(v, &in, ops);
        if (div_faults(v, &in, ops))
            p->vector_hint = 0;
        else if ((vec = fault_segment_load(v, &in, ops, &err)) >= 0)
            p->vector_hint = (int16_t)vec;
        return 0;
    }

    p->taken = true;
    uint64_t cs_base = cpu_code_base(v->sregs);
    unsigned w = in.operand_width / 8, sw = cpu_stack_width(v->sregs) / 8;
    uint64_t val, sel;
    switch (p->kind) {
    case VBTS_KIND_JCC:
        p->taken = cond_taken(&in, v->regs);
        p->target_known = p->taken ? direct_target(v, &in, ops, &p->target) : false;
        break;
    case VBTS_KIND_JMP:
    case VBTS_KIND_CALL:
        p->target_known = direct_target(v, &in, ops, &p->target);
        break;
    case VBTS_KIND_JMP_IND:
    case VBTS_KIND_CALL_IND:
        p->target_known = indirect_target(v, &in, &ops[0], &p->target) == 0;
        break;
    case VBTS_KIND_RET:
        if (read_stack(v, 0, w ? w : sw, &val) == 0) {
            p->target = cs_base + val;
            p->target_known = true;
        }
        break;
    case VBTS_KIND_FAR:
        if (in.meta.category == ZYDIS_CATEGORY_RET) {
            /* retf: offset then selector, each an operand-size slot. */
            uint64_t base;
            if (read_stack(v, 0, w, &val) == 0 && read_stack(v, 1, w, &sel) == 0) {
                p->to_user = (sel & 3) == 3 && cpu_cpl(v->sregs) != 3;
                if (cpu_selector_base(v, (uint16_t)sel, &base) == 0) {
                    p->target = base + val;
                    p->target_known = true;
                }
            }
        } else {
            far_target(v, &in, ops, p);
        }
        break;
    case VBTS_KIND_IRET:
        p->loads_flags = read_stack(v, 2, w, &p->flags_image) == 0;
        if (read_stack(v, 0, w, &val) == 0 && read_stack(v, 1, w, &sel) == 0) {
            uint64_t base;
            p->to_user = (sel & 3) == 3 && cpu_cpl(v->sregs) != 3;
            if (cpu_mode(v->sregs) == MODE_REAL16) {
                p->target = ((sel & 0xffff) << 4) + (val & 0xffff);
                p->target_known = true;
            } else if (cpu_selector_base(v, (uint16_t)sel, &base) == 0) {
                p->target = base + val;
                p->target_known = true;
            }
        }
        break;
    case VBTS_KIND_SYSCALL:
    case VBTS_KIND_INT:
        system_target(v, &in, ops, p);
        break;
    default:
        break;
    }
    return 0;
}

int branch_predict_at(const struct cpu_view *v, uint64_t lin, struct branch_pred *p,
                      const char **why)
{
    const ZydisDecodedInstruction *in;
    const ZydisDecodedOperand *ops;
    if (cpu_decode_ref(v, lin, &in, &ops, why))
        return -1;
    branch_predict_decoded(v, lin, in, ops, p);
    return 0;
}

void branch_predict_decoded(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                            const ZydisDecodedOperand *ops, struct branch_pred *p)
{
    predict_common(v, lin, in, ops, p);
    if (p->kind == VBTS_KIND_UNKNOWN) {
        /* A POPF that ran popped its image from just below RSP. */
        struct kvm_regs r = *v->regs;
        struct cpu_view at = { v->mem, &r, v->sregs };
        r.rsp -= in->operand_width / 8;
        debug_effects(&at, in, ops, p);
        return;
    }
    p->taken = true;
    /* The registers as the instruction saw them, where its target depends on them. */
    uint64_t cs_base = cpu_code_base(v->sregs);
    struct kvm_regs r = *v->regs;
    struct cpu_view at = { v->mem, &r, v->sregs };
    if (p->kind == VBTS_KIND_JMP || p->kind == VBTS_KIND_CALL || p->kind == VBTS_KIND_JCC) {
        /* RIP-relative targets need the instruction's own RIP, not the current one. */
        r.rip = lin - cs_base;
        p->target_known = direct_target(&at, in, ops, &p->target);
    } else if (p->kind == VBTS_KIND_RET) {
        /*
         * The RET has run (a swallowed step): its target is the slot it
         * popped, just below RSP and the imm16 bytes it released.
         */
        unsigned w = in->operand_width / 8, sw = cpu_stack_width(v->sregs) / 8;
        uint64_t imm = ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE ? ops[0].imm.value.u : 0, val;
        w = w ? w : sw;
        r.rsp -= w + imm;
        if (read_stack(&at, 0, w, &val) == 0) {
            p->target = cs_base + val;
            p->target_known = true;
        }
    }
}

bool branch_straight_line(const struct cpu_view *v, uint64_t start, uint64_t end, unsigned max)
{
    const char *why;
    for (unsigned n = 0; start != end; n++) {
        struct branch_pred p;
        if (n == max || branch_predict_at(v, start, &p, &why) < 0 ||
            (p.kind != VBTS_KIND_UNKNOWN && p.kind != VBTS_KIND_JCC))
            return false;
        start += p.len;
    }
    return true;
}

void branch_frame_flags(const struct branch_pred *p, bool *fault_exact, bool *trap_kept)
{
    bool self = p->kind != VBTS_KIND_UNKNOWN && p->taken && (!p->target_known || p->target == p->from);
    *fault_exact = !self;
    *trap_kept = !(p->kind == VBTS_KIND_FAR && !p->target_known);     /* a task switch loads them */
    switch (p->mnemonic) {
    case ZYDIS_MNEMONIC_CMPSB: case ZYDIS_MNEMONIC_CMPSW: case ZYDIS_MNEMONIC_CMPSD: case ZYDIS_MNEMONIC_CMPSQ:
    case ZYDIS_MNEMONIC_SCASB: case ZYDIS_MNEMONIC_SCASW: case ZYDIS_MNEMONIC_SCASD: case ZYDIS_MNEMONIC_SCASQ:
        *fault_exact = false;
        break;
    case ZYDIS_MNEMONIC_POPF: case ZYDIS_MNEMONIC_POPFD: case ZYDIS_MNEMONIC_POPFQ: case ZYDIS_MNEMONIC_IRET:
    case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ: case ZYDIS_MNEMONIC_CLI: case ZYDIS_MNEMONIC_STI:
    case ZYDIS_MNEMONIC_STAC: case ZYDIS_MNEMONIC_CLAC: case ZYDIS_MNEMONIC_SYSCALL: case ZYDIS_MNEMONIC_SYSRET:
    case ZYDIS_MNEMONIC_SYSENTER: case ZYDIS_MNEMONIC_SYSEXIT: case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1:
    case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_INTO: case ZYDIS_MNEMONIC_RSM: case ZYDIS_MNEMONIC_VMCALL:
    case ZYDIS_MNEMONIC_VMMCALL:
        *trap_kept = false;
        break;
    default:
        break;
    }
}
