/* SPDX-License-Identifier: MIT */
#include "trace/known.h"
#include "trace/loads.h"

#include <string.h>

#include "vbts/format.h"
#include "x86/fault.h"

#define SP_BIT (1u << 4)

/* Is r (any part of it) not known here: written by an instruction of the stretch it did not compute? */
static bool written(const struct stretch *s, ZydisRegister r)
{
    return s->now.unknown & eval_gpr_bit(r);
}

static bool is_sp(ZydisRegister r)
{
    return r == ZYDIS_REGISTER_RSP || r == ZYDIS_REGISTER_ESP || r == ZYDIS_REGISTER_SP || r == ZYDIS_REGISTER_SPL;
}

/* A memory operand's address from registers the stretch knows (RSP where it knows where it left it). */
static bool address_known(const struct stretch *s, const ZydisDecodedOperand *op)
{
    return !written(s, op->mem.index) && !(written(s, op->mem.base) && !(is_sp(op->mem.base) && s->sp_exact));
}

/* A general register's value where the stretch knows it. */
static bool known_reg(const struct stretch *s, ZydisRegister r, uint64_t *val)
{
    return !written(s, r) && eval_get(&s->now, r, val);
}

/* A REP STOS or MOVS stores RCX elements from RDI on, up or down by DF: how many bytes either way. */
static bool rep_span(const struct cpu_view *at, const ZydisDecodedInstruction *in, const struct stretch *s,
                     uint64_t elem, uint64_t *span)
{
    *span = 0;
    uint64_t n;
    if (!cpu_rep_count(at, in, &n))
        return true;
    if (written(s, ZYDIS_REGISTER_RCX) || n > 2 * 4096ull)
        return false;
    *span = n * elem;
    return true;
}

/*
 * The registers the instruction at lin computes its operands from, as far
 * as the stretch knows them: its own RIP, RSP where the stretch knows
 * where it left it, the others as it computed them; those it did not are
 * not known (written()).
 */
static const struct kvm_regs *regs_at(const struct cpu_view *v, uint64_t lin, const struct stretch *s,
                                      struct kvm_regs *r)
{
    if (s->at_set && s->at_lin == lin)
        return &s->at;
    const uint64_t *g = s->now.gpr;
    *r = *v->regs;
    r->rax = g[0], r->rcx = g[1], r->rdx = g[2], r->rbx = g[3], r->rbp = g[5], r->rsi = g[6], r->rdi = g[7];
    r->r8 = g[8], r->r9 = g[9], r->r10 = g[10], r->r11 = g[11], r->r12 = g[12], r->r13 = g[13];
    r->r14 = g[14], r->r15 = g[15];
    r->rip = lin - s->cs_base;
    if (s->sp_exact)
        r->rsp = cpu_sp_add(v->sregs, v->regs->rsp, s->sp_delta);
    return r;
}

void known_begin(const struct cpu_view *v, uint64_t lin, struct stretch *s)
{
    s->at_set = false;
    regs_at(v, lin, s, &s->at);
    s->at_lin = lin;
    s->at_set = true;
}

/* A push's slot, or a call's, below RSP as the stretch has it: the bytes it writes, exactly. */
static bool pushes(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op, const struct stretch *s)
{
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_CALL: case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFD: case ZYDIS_MNEMONIC_PUSHFQ:
        return s->sp_exact && cpu_store_below_sp(op) && in->meta.branch_type != ZYDIS_BRANCH_TYPE_FAR;
    default:
        return false;
    }
}

/*
 * The instruction writes (or may write) into the IDT: the handlers watched for the rest
 * of the stretch were read from it before (a guest that sets a gate and
 * then faults through it).  Or into an APIC's page.  Or into more than
 * the stretch can note (stores_note), which the instructions after it
 * are checked against.
 */
bool known_store_cuts(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, struct stretch *s)
{
    uint64_t base = v->sregs->idt.base, end = base + v->sregs->idt.limit;
    struct kvm_regs r;
    struct cpu_view at = { v->mem, NULL, v->sregs };
    at.regs = regs_at(v, lin, s, &r);
    for (unsigned i = 0; i < in->operand_count; i++) {
        uint64_t ea, slack = 0, n = ops[i].size / 8, span;
        if (ops[i].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[i].mem.type != ZYDIS_MEMOP_TYPE_MEM ||
            !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            continue;
        if (written(s, ops[i].mem.index))
            return true;
        if (written(s, ops[i].mem.base) && !(is_sp(ops[i].mem.base) && s->sp_exact)) {
            if (!is_sp(ops[i].mem.base) || s->sp_span == ~0ull)
                return true;
            slack = s->sp_span;
        }
        if (cpu_store_below_sp(&ops[i]) && !pushes(in, &ops[i], s))
            slack += 2 * n;
        if (!rep_span(&at, in, s, n, &span))
            return true;
        slack += span;
        uint64_t lo, hi;
        if (pushes(in, &ops[i], s)) {
            lo = cpu_stack_base(v->sregs) + cpu_sp_add(v->sregs, at.regs->rsp, -(int64_t)n);
            hi = lo + n;
        } else if (cpu_operand_address(&at, in, &ops[i], &ea) == 0) {
            /* A bit test's store lands in the unit of its bit, as far from the operand as the offset says. */
            int64_t off;
            if (!eval_bit_offset(in, ops, &s->now, &off))
                return true;
            ea += (uint64_t)off;
            lo = ea - slack;
            hi = ea + n + slack;
        } else {
            return true;
        }
        if (lo <= end && hi > base)
            return true;
        /* An APIC's register: an interrupt may be due at once (a self-IPI), which steps let in. */
        for (uint64_t pg = lo & ~0xfffull; pg < hi && pg >= (lo & ~0xfffull); pg += 0x1000)
            if (cpu_lin_irqchip(&at, pg < lo ? lo : pg))
                return true;
        if (!stores_note(&s->st, v, lo, hi))
            return true;
        loads_forget(v, lo, hi, s);
    }
    return false;
}

/*
 * How the instruction moves RSP, if by what the stretch knows (sp_delta
 * from RSP at its start, v's); else sp_exact goes.
 */
static void note_sp(const struct cpu_view *v, const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                    struct stretch *s)
{
    bool hidden = false, visible = false;
    int64_t slot = 0;
    uint64_t val;
    for (unsigned i = 0; i < in->operand_count; i++) {
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
            is_sp(ops[i].mem.base))
            slot = ops[i].size / 8;
        if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER || !is_sp(ops[i].reg.value) ||
            !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            continue;
        if (ops[i].visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN)
            hidden = true;
        else
            visible = true;
    }
    if ((!hidden && !visible) || !s->sp_exact)
        return;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_CALL: case ZYDIS_MNEMONIC_PUSHF:
    case ZYDIS_MNEMONIC_PUSHFD: case ZYDIS_MNEMONIC_PUSHFQ:
        if (!visible && slot) {
            s->sp_delta -= slot;
            return;
        }
        break;
    case ZYDIS_MNEMONIC_POP:
        if (!visible && slot) {
            s->sp_delta += slot;
            return;
        }
        break;
    case ZYDIS_MNEMONIC_RET:
        if (!visible && slot) {
            s->sp_delta += slot + (in->operand_count_visible ? (int64_t)ops[0].imm.value.u : 0);
            return;
        }
        break;
    case ZYDIS_MNEMONIC_ADD: case ZYDIS_MNEMONIC_SUB:
        if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && is_sp(ops[0].reg.value) && ops[0].size >= 32 &&
            ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
            s->sp_delta += in->mnemonic == ZYDIS_MNEMONIC_ADD ? ops[1].imm.value.s : -ops[1].imm.value.s;
            return;
        }
        break;
    case ZYDIS_MNEMONIC_MOV:
        if (is_sp(ops[0].reg.value) && ops[0].size == 64 && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
            known_reg(s, ops[1].reg.value, &val)) {
            s->sp_delta = (int64_t)(val - v->regs->rsp);
            return;
        }
        break;
    case ZYDIS_MNEMONIC_AND:
        if (is_sp(ops[0].reg.value) && ops[0].size == 64 && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
            s->sp_delta = (int64_t)(((v->regs->rsp + (uint64_t)s->sp_delta) & ops[1].imm.value.u) - v->regs->rsp);
            return;
        }
        break;
    case ZYDIS_MNEMONIC_LEAVE:
        if (in->operand_width == 64 && known_reg(s, ZYDIS_REGISTER_RBP, &val)) {
            s->sp_delta = (int64_t)(val + 8 - v->regs->rsp);
            return;
        }
        break;
    case ZYDIS_MNEMONIC_LEA:
        if (is_sp(ops[0].reg.value) && ops[0].size >= 32 && is_sp(ops[1].mem.base) &&
            ops[1].mem.index == ZYDIS_REGISTER_NONE) {
            s->sp_delta += ops[1].mem.disp.value;
            return;
        }
        break;
    default:
        break;
    }
    s->sp_exact = false;
}

/* Where the instruction, now in the stretch, leaves RSP to the ones after it. */
static void note_writes(const struct cpu_view *v, const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                        uint32_t written, struct stretch *s)
{
    note_sp(v, in, ops, s);
    s->now.unknown |= written & SP_BIT;
    for (unsigned i = 0; i < in->operand_count; i++) {
        if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER || !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) ||
            !is_sp(ops[i].reg.value) || s->sp_span == ~0ull)
            continue;
        /* A push, pop, call moves it by its width: where it points stays within reach. */
        switch (in->mnemonic) {
        case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_POP: case ZYDIS_MNEMONIC_CALL:
        case ZYDIS_MNEMONIC_PUSHF: case ZYDIS_MNEMONIC_PUSHFD: case ZYDIS_MNEMONIC_PUSHFQ:
        case ZYDIS_MNEMONIC_POPF: case ZYDIS_MNEMONIC_POPFD: case ZYDIS_MNEMONIC_POPFQ:
            if (ops[i].visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN) {
                s->sp_span += 8;
                break;
            }
            /* fall through */
        default:
            s->sp_span = ~0ull;
        }
    }
}

/*
 * The value a return pops at RSP as the stretch has it (slot: its linear
 * address): what a call of the stretch pushed there, if no later store may
 * have changed it; else what memory holds, if no store of the stretch may
 * have.  Memory another may write is not read (STRETCH_ALONE).
 */
static bool slot_value(const struct cpu_view *v, uint64_t slot, unsigned w, const struct stretch *s, uint64_t *val,
                       bool *memory)
{
    if (!s->alone)
        return false;
    bool host = stores_hit_between(&s->st, 0, s->nseed, v, slot, w);
    for (unsigned i = s->ncall; i-- > 0;) {
        if (s->call[i].sp_delta != s->sp_delta)
            continue;
        *val = s->call[i].ret;
        if (!stores_hit(&s->st, s->call[i].nst, v, slot, w) && !host)
            return true;
        break;
    }
    *val = 0;
    *memory = true;
    if (s->mmio_maybe || host || loads_paging_entry(v, slot, w, s))
        return false;
    /* A slot the stretch rewrote itself (a retpoline's `mov %rax, (%rsp)`): what it stored. */
    if (stores_hit(&s->st, 0, v, slot, w))
        return loads_forwarded(v, slot, w, s, val);
    return cpu_read_linear(v, slot, val, w) == 0;
}

/*
 * A return, or an indirect jmp or call, whose target the stretch knows
 * before it runs: from registers it has not written (RSP where it knows
 * it), and memory it cannot have written.  A target the CPU would refuse
 * (not canonical, past CS's limit: #GP) is left to it.
 */
static bool target(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                   const ZydisDecodedOperand *ops, const struct stretch *s, uint64_t *to, bool *memory)
{
    const struct kvm_sregs *sr = v->sregs;
    enum cpu_mode mode = cpu_mode(sr);
    unsigned w = in->operand_width / 8;
    uint64_t val = 0, ea;
    if ((mode != MODE_LONG64 && mode != MODE_PROT32 && mode != MODE_COMPAT32) || (sr->cr4 & CR4_CET) ||
        w * 8 != (mode == MODE_LONG64 ? 64u : 32u))
        return false;
    struct kvm_regs r;
    struct cpu_view at = { v->mem, NULL, v->sregs };
    at.regs = regs_at(v, lin, s, &r);
    if (in->meta.category == ZYDIS_CATEGORY_RET) {
        if (!s->sp_exact || w * 8 != cpu_stack_width(sr) ||
            !slot_value(v, cpu_stack_base(sr) + at.regs->rsp, w, s, &val, memory))
            return false;
    } else if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if (written(s, ops[0].reg.value) || is_sp(ops[0].reg.value) || cpu_register(at.regs, ops[0].reg.value, &val))
            return false;
    } else if (ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[0].mem.type == ZYDIS_MEMOP_TYPE_MEM) {
        if (!s->alone || s->mmio_maybe || !address_known(s, &ops[0]) ||
            cpu_operand_address(&at, in, &ops[0], &ea) < 0 || stores_hit(&s->st, 0, v, ea, w) ||
            loads_paging_entry(v, ea, w, s) || cpu_read_linear(v, ea, &val, w) < 0)
            return false;
        *memory = true;
    } else {
        return false;
    }
    if (w == 4)
        val = (uint32_t)val;
    if (!cpu_ip_allowed(sr, val))
        return false;
    *to = s->cs_base + val;
    if (mode != MODE_LONG64)
        *to = (uint32_t)*to;
    return true;
}

/*
 * A conditional branch whose flags (or RCX) the stretch computed: taken,
 * to a target the CPU accepts, or not, then no branch (p->kind).
 */
static bool decided(const struct cpu_view *v, const ZydisDecodedInstruction *in, struct branch_pred *p,
                    const struct stretch *s)
{
    int t = s->eval ? eval_cond(in, &s->now) : -1;
    if (t < 0 || (t && !(p->target_known && cpu_ip_allowed(v->sregs, p->target - s->cs_base))))
        return false;
    if (!t)
        p->kind = VBTS_KIND_UNKNOWN;
    return true;
}

/* Why a branch ends the stretch (enum stretch_end), or -1: it goes on, to p->target. */
int known_branch_ends(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, struct branch_pred *p, struct stretch *s)
{
    switch (p->kind) {
    case VBTS_KIND_UNKNOWN:
        return -1;
    case VBTS_KIND_JMP: case VBTS_KIND_CALL:
        return p->target_known ? -1 : STRETCH_END_CUT;
    case VBTS_KIND_JCC:
        return decided(v, in, p, s) ? -1 : STRETCH_END_JCC;
    case VBTS_KIND_RET: case VBTS_KIND_JMP_IND: case VBTS_KIND_CALL_IND:
        if (target(v, lin, in, ops, s, &p->target, &s->mem_targets))
            return -1;
        return p->kind == VBTS_KIND_RET ? STRETCH_END_RET : STRETCH_END_INDIRECT;
    default:
        return STRETCH_END_CUT;
    }
}

/* A call of the stretch pushed its return address where RSP now is: a return of the stretch reads it there. */
static void note_call(uint64_t lin, const ZydisDecodedInstruction *in, struct stretch *s)
{
    if (!s->sp_exact || (in->mnemonic != ZYDIS_MNEMONIC_CALL) || in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
        return;
    if (s->ncall == STRETCH_MAX_CALLS) {
        memmove(&s->call[0], &s->call[1], sizeof(s->call[0]) * (STRETCH_MAX_CALLS - 1));
        s->ncall--;
    }
    s->call[s->ncall].sp_delta = s->sp_delta;
    s->call[s->ncall].ret = lin + in->length - s->cs_base;
    s->call[s->ncall++].nst = s->st.n;
    s->st.keep = s->st.n;       /* the stores after the call stay apart from those before */
}

/* The instruction at lin, being noted in s: what its evaluation may read (x86/eval.h). */
struct load_at {
    const struct cpu_view *v;
    uint64_t lin;
    const ZydisDecodedInstruction *in;
    const struct stretch *s;
    unsigned nst;       /* the stores noted before it's */
};

/*
 * A load's value, where it will be what memory holds now: only this vCPU
 * writes it (alone), no store of the stretch before it may have, nor the
 * host at its entries (the first stores), nor the CPU itself (an entry
 * the stretch's accesses walk: A and D); and no access before it may have
 * gone to a device (mmio_maybe), which may write guest memory as it
 * completes.
 */
static bool load(void *ctx, const ZydisDecodedOperand *op, int64_t offset, unsigned bytes, uint64_t *val)
{
    const struct load_at *c = ctx;
    const struct stretch *s = c->s;
    const struct kvm_sregs *sr = c->v->sregs;
    struct kvm_regs r;
    struct cpu_view at = { c->v->mem, NULL, sr };
    uint64_t ea;
    if (!s->alone || s->mmio_maybe || bytes == 0 || bytes > 8 || op->mem.type != ZYDIS_MEMOP_TYPE_MEM ||
        !address_known(s, op))
        return false;
    at.regs = regs_at(c->v, c->lin, s, &r);
    if (cpu_operand_address(&at, c->in, op, &ea) < 0)
        return false;
    ea += (uint64_t)offset;
    if (ea + bytes < ea || (cpu_mode(sr) == MODE_LONG64 && (!cpu_canonical(sr, ea) || !cpu_canonical(sr, ea + bytes - 1))))
        return false;
    if (loads_paging_entry(c->v, ea, bytes, s) || stores_hit_between(&s->st, 0, s->nseed, c->v, ea, bytes))
        return false;
    *val = 0;
    if (stores_hit_between(&s->st, 0, c->nst, c->v, ea, bytes))
        return loads_forwarded(c->v, ea, bytes, s, val);
    return cpu_read_linear(c->v, ea, val, bytes) == 0;
}

/* Where memory operand i reads or writes: [*lo, *lo + *n), or false if not known. */
static bool access_range(const struct cpu_view *at, const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                         unsigned i, const struct stretch *s, uint64_t *lo, uint64_t *n)
{
    const ZydisDecodedOperand *op = &ops[i];
    int64_t off;
    *n = op->size / 8;
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || op->mem.type != ZYDIS_MEMOP_TYPE_MEM || *n == 0 || *n > 16 ||
        !address_known(s, op))
        return false;
    if (op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN) {
        /* The stack's slot of a push, pop, call or return; others (ENTER, LEAVE, string operands) are not known here. */
        switch (in->mnemonic) {
        case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_POP: case ZYDIS_MNEMONIC_CALL: case ZYDIS_MNEMONIC_RET:
            break;
        default:
            return false;
        }
        if (!is_sp(op->mem.base) || in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
            return false;
    }
    if (cpu_operand_address(at, in, op, lo) < 0 || !eval_bit_offset(in, ops, &s->now, &off))
        return false;
    *lo += (uint64_t)off;
    if (op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN && (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
        *lo -= *n;
    return true;
}

/* Its code and the memory it accesses where the stretch knows the address: the paging entries they walk. */
static void touch_accesses(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                           const ZydisDecodedOperand *ops, struct stretch *s)
{
    struct kvm_regs r;
    struct cpu_view at = { v->mem, NULL, v->sregs };
    if (s->nins < 2 || (s->ins[s->nins - 2] >> 12) != (lin >> 12))
        loads_walked(v, lin, s);
    if (((lin + in->length - 1) >> 12) != (lin >> 12))
        loads_walked(v, lin + in->length - 1, s);
    at.regs = regs_at(v, lin, s, &r);
    for (unsigned i = 0; i < in->operand_count; i++) {
        uint64_t lo, n;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && access_range(&at, in, ops, i, s, &lo, &n)) {
            loads_walked(v, lo, s);
            loads_walked(v, lo + n - 1, s);
        }
    }
}

/*
 * A return to what a call of the stretch pushed ends that call, and those
 * it made: stores after it may again widen the ranges noted since the
 * call before it (a loop's call does not fill them).
 */
static void note_return(const ZydisDecodedInstruction *in, struct stretch *s)
{
    if (in->mnemonic != ZYDIS_MNEMONIC_RET || !s->sp_exact)
        return;
    for (unsigned i = s->ncall; i-- > 0;) {
        if (s->call[i].sp_delta != s->sp_delta)
            continue;
        s->ncall = i;
        s->st.keep = i ? s->call[i - 1].nst : s->nseed;
        return;
    }
}

/* A MOV or PUSH of a value the stretch knows: a load of just those bytes reads it (forwarded). */
static void note_stored(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                        const ZydisDecodedOperand *ops, struct stretch *s)
{
    unsigned mem = 0, src;
    if (in->mnemonic == ZYDIS_MNEMONIC_MOV && ops[0].visibility != ZYDIS_OPERAND_VISIBILITY_HIDDEN) {
        src = 1;
    } else if (in->mnemonic == ZYDIS_MNEMONIC_PUSH) {
        src = 0;
        while (++mem < in->operand_count && ops[mem].type != ZYDIS_OPERAND_TYPE_MEMORY)
            ;
    } else {
        return;
    }
    struct kvm_regs r;
    struct cpu_view at = { v->mem, NULL, v->sregs };
    uint64_t lo, n, val;
    at.regs = regs_at(v, lin, s, &r);
    if (mem >= in->operand_count || ops[mem].type != ZYDIS_OPERAND_TYPE_MEMORY ||
        !access_range(&at, in, ops, mem, s, &lo, &n))
        return;
    if (ops[src].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
        val = ops[src].imm.value.u;
    else if (ops[src].type != ZYDIS_OPERAND_TYPE_REGISTER || !known_reg(s, ops[src].reg.value, &val))
        return;
    loads_remember(v, lo, (unsigned)n, val, s);
}

void known_note(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                const ZydisDecodedOperand *ops, unsigned nst, struct stretch *s)
{
    touch_accesses(v, lin, in, ops, s);
    note_stored(v, lin, in, ops, s);
    note_return(in, s);
    struct eval_regs after = s->now;
    if (s->eval) {
        struct load_at c = { v, lin, in, s, nst };
        eval_insn(in, ops, lin - s->cs_base, &after, load, &c);
    } else {
        eval_forget(in, ops, &after);
    }
    uint32_t w = eval_gprs_written(in, ops);
    note_writes(v, in, ops, w, s);
    after.unknown = (after.unknown & ~SP_BIT) | (s->now.unknown & SP_BIT);
    struct eval_regs was = s->now;
    s->now = after;
    s->at_set = false;
    if (s->loops)
        stretch_key_update(s, &was, w, cpu_mode(v->sregs) == MODE_LONG64);
    if (in->mnemonic == ZYDIS_MNEMONIC_STAC || in->mnemonic == ZYDIS_MNEMONIC_CLAC)
        s->ac_changed = true;
    note_call(lin, in, s);
}

uint32_t known_safe_accesses(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                             const ZydisDecodedOperand *ops, const struct stretch *s)
{
    const struct kvm_sregs *sr = v->sregs;
    /* Another vCPU may unmap them; protection keys and a changed RFLAGS.AC (SMAP) are not modelled. */
    if (!s->alone || s->ac_changed || cpu_mode(sr) != MODE_LONG64 || (sr->cr4 & (CR4_PKE | CR4_PKS)) ||
        in->meta.category == ZYDIS_CATEGORY_STRINGOP || (in->attributes & ZYDIS_ATTRIB_HAS_REP))
        return 0;
    struct kvm_regs r;
    struct cpu_view at = { v->mem, NULL, v->sregs };
    at.regs = regs_at(v, lin, s, &r);
    uint32_t safe = 0;
    for (unsigned i = 0; i < in->operand_count && i < 32; i++) {
        uint64_t lo, n;
        uint8_t bytes[16];
        struct delivery d;
        /* Mapped and in RAM, as a read shows: an access elsewhere exits to the monitor mid-stretch. */
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && access_range(&at, in, ops, i, s, &lo, &n) &&
            cpu_canonical(sr, lo) && cpu_canonical(sr, lo + n - 1) && lo + n > lo &&
            cpu_read_linear(v, lo, bytes, n) == 0 && !stores_remap(&s->st, 0, v, lo, n) &&
            fault_page(v, lo, n, ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE, &d) == FAULT_NONE)
            safe |= 1u << i;
    }
    return safe;
}
