/* SPDX-License-Identifier: MIT */
#include "trace/stretch.h"
#include "trace/fork.h"
#include "trace/known.h"
#include "trace/rounds.h"
#include "x86/deliver.h"

#include <stddef.h>
#include <string.h>

#include "vbts/format.h"
#include "x86/fault.h"

#define STRETCH_CUT UINT32_MAX

/*
 * Instructions a stretch does not run: they change mode, privilege,
 * paging, descriptor tables or the interrupt flag's effect, do I/O the
 * monitor completes, or raise exceptions without fail.  Each is
 * single-stepped, where the step engine reads what it did.
 */
static bool cuts(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_IN: case ZYDIS_MNEMONIC_INSB:
    case ZYDIS_MNEMONIC_INSW: case ZYDIS_MNEMONIC_INSD: case ZYDIS_MNEMONIC_OUT:
    case ZYDIS_MNEMONIC_OUTSB: case ZYDIS_MNEMONIC_OUTSW: case ZYDIS_MNEMONIC_OUTSD:
    case ZYDIS_MNEMONIC_STI: case ZYDIS_MNEMONIC_POPF: case ZYDIS_MNEMONIC_POPFD:
    case ZYDIS_MNEMONIC_POPFQ: case ZYDIS_MNEMONIC_LGDT: case ZYDIS_MNEMONIC_LIDT:
    case ZYDIS_MNEMONIC_LLDT: case ZYDIS_MNEMONIC_LTR: case ZYDIS_MNEMONIC_LMSW:
    case ZYDIS_MNEMONIC_CLTS: case ZYDIS_MNEMONIC_INVLPG: case ZYDIS_MNEMONIC_INVPCID:
    case ZYDIS_MNEMONIC_WRMSR: case ZYDIS_MNEMONIC_RDMSR: case ZYDIS_MNEMONIC_XSETBV:
    case ZYDIS_MNEMONIC_WBINVD: case ZYDIS_MNEMONIC_INVD: case ZYDIS_MNEMONIC_MONITOR:
    case ZYDIS_MNEMONIC_MWAIT: case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1:
    case ZYDIS_MNEMONIC_UD2: case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1:
    case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_INTO: case ZYDIS_MNEMONIC_SYSCALL:
    case ZYDIS_MNEMONIC_SYSRET: case ZYDIS_MNEMONIC_SYSENTER: case ZYDIS_MNEMONIC_SYSEXIT:
    case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
    case ZYDIS_MNEMONIC_RSM: case ZYDIS_MNEMONIC_LSS: case ZYDIS_MNEMONIC_LFS:
    case ZYDIS_MNEMONIC_LGS: case ZYDIS_MNEMONIC_LDS: case ZYDIS_MNEMONIC_LES:
    case ZYDIS_MNEMONIC_VMCALL: case ZYDIS_MNEMONIC_VMMCALL: case ZYDIS_MNEMONIC_BOUND:
    case ZYDIS_MNEMONIC_XBEGIN: case ZYDIS_MNEMONIC_XABORT: case ZYDIS_MNEMONIC_XEND:
    case ZYDIS_MNEMONIC_FXSAVE: case ZYDIS_MNEMONIC_FXSAVE64: case ZYDIS_MNEMONIC_FXRSTOR:
    case ZYDIS_MNEMONIC_FXRSTOR64: case ZYDIS_MNEMONIC_XSAVE: case ZYDIS_MNEMONIC_XSAVE64:
    case ZYDIS_MNEMONIC_XSAVEC: case ZYDIS_MNEMONIC_XSAVEC64: case ZYDIS_MNEMONIC_XSAVEOPT:
    case ZYDIS_MNEMONIC_XSAVEOPT64: case ZYDIS_MNEMONIC_XSAVES: case ZYDIS_MNEMONIC_XSAVES64:
    case ZYDIS_MNEMONIC_XRSTOR: case ZYDIS_MNEMONIC_XRSTOR64: case ZYDIS_MNEMONIC_XRSTORS:
    case ZYDIS_MNEMONIC_XRSTORS64: case ZYDIS_MNEMONIC_FWAIT: case ZYDIS_MNEMONIC_EMMS:
    case ZYDIS_MNEMONIC_LDMXCSR: case ZYDIS_MNEMONIC_STMXCSR: case ZYDIS_MNEMONIC_VZEROUPPER:
    case ZYDIS_MNEMONIC_VZEROALL: case ZYDIS_MNEMONIC_FNINIT: case ZYDIS_MNEMONIC_SWAPGS:
    /* A new FS or GS base: later addresses through it are not the ones the planner computes. */
    case ZYDIS_MNEMONIC_WRFSBASE: case ZYDIS_MNEMONIC_WRGSBASE:
        return true;
    default:
        break;
    }
    for (unsigned i = 0; i < in->operand_count; i++) {
        if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER)
            continue;
        switch (ZydisRegisterGetClass(ops[i].reg.value)) {
        /* #NM, #MF, #XM hang on FPU state the monitor does not read. */
        case ZYDIS_REGCLASS_X87: case ZYDIS_REGCLASS_MMX: case ZYDIS_REGCLASS_XMM:
        case ZYDIS_REGCLASS_YMM: case ZYDIS_REGCLASS_ZMM: case ZYDIS_REGCLASS_MASK:
        case ZYDIS_REGCLASS_BOUND: case ZYDIS_REGCLASS_CONTROL: case ZYDIS_REGCLASS_DEBUG:
            return true;
        case ZYDIS_REGCLASS_SEGMENT:
            if (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
                return true;
            break;
        default:
            break;
        }
    }
    return false;
}

/*
 * The exceptions an instruction that is not cut can raise, a bit per
 * vector (x86/fault.c): #PF, #GP and #SS from memory accesses, #DE from a
 * division, #UD from an extension the CPU may lack.  A double fault is
 * not watched: a delivery that faults is a guest's disaster, and one
 * that happens is seen at the next exit, which ends the trace there.
 */
static uint32_t raises(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, struct stretch *s)
{
    if (cuts(in, ops)) {
        s->why = STRETCH_END_CUT;
        return STRETCH_CUT;
    }
    if (known_store_cuts(v, lin, in, ops, s)) {
        s->why = STRETCH_END_STORE;
        return STRETCH_CUT;
    }
    /* An access that cannot fault is no operand to raise anything. */
    uint32_t safe = known_safe_accesses(v, lin, in, ops, s);
    if (!safe)
        return fault_may_raise(v, lin, in, ops) & ~(1u << 8);
    ZydisDecodedOperand left[ZYDIS_MAX_OPERAND_COUNT];
    memcpy(left, ops, sizeof(left));
    for (unsigned i = 0; i < in->operand_count; i++)
        if (safe & (1u << i))
            left[i].type = ZYDIS_OPERAND_TYPE_UNUSED;
    return fault_may_raise(v, lin, in, left) & ~(1u << 8);
}

int stretch_index(const struct stretch *s, uint64_t lin)
{
    for (unsigned i = 0; i < s->nins; i++)
        if (s->ins[i] == lin)
            return (int)i;
    return -1;
}

/*
 * Whether delivering vec at the instruction being added faults on its way
 * in (then it ends at another handler, or #DF's: stepped).  The frame goes
 * where RSP is then: the stretch's moves of it, or the stack an IST names.
 */
static bool delivery_faults(const struct cpu_view *v, unsigned vec, struct stretch *s)
{
    bool ist = cpu_idt_gate_ist(v, vec) > 0;
    if (!ist && !s->sp_exact)
        return true;            /* RSP is not known there */
    if ((s->dry & (1u << vec)) && (ist || s->dry_delta[vec] == s->sp_delta))
        return false;
    struct kvm_regs here = *v->regs;
    here.rsp += (uint64_t)s->sp_delta;
    const char *why;
    if (deliver_would_fault(v->mem, &here, v->sregs, vec, &why))
        return true;
    s->dry |= 1u << vec;
    s->dry_delta[vec] = s->sp_delta;
    return false;
}

/* The handlers the vectors in `m` go to, merged into s; false if one has none or they are too many. */
static bool watch(const struct cpu_view *v, uint32_t m, int max, struct stretch *s)
{
    for (unsigned vec = 0; vec < 32; vec++) {
        if (!(m & (1u << vec)))
            continue;
        uint64_t h;
        if (cpu_idt_handler(v, vec, &h) < 0 || delivery_faults(v, vec, s))
            return false;
        bool seen = false;
        for (int i = 0; i < s->nh && !seen; i++)
            seen = s->vectors[i] & (1u << vec);
        if (seen)
            continue;
        int i = 0;
        while (i < s->nh && s->handler[i] != h)
            i++;
        if (i == s->nh) {
            if (s->nh == max)
                return false;
            s->handler[s->nh++] = h;
        }
        s->vectors[i] |= 1u << vec;
    }
    return true;
}

/* Does lin lie on a path s must not run into, or at its leaf? */
static bool avoided(const struct stretch *s, uint64_t lin)
{
    for (unsigned i = 0; i < s->navoid; i++)
        if (stretch_index(s->avoid[i], lin) >= 0 || lin == s->avoid[i]->end)
            return true;
    return false;
}

/* Add the instruction at lin if it fits; false: the stretch ends before it, s->why says why. */
bool stretch_extend(const struct cpu_view *v, uint64_t lin, int max, const uint64_t *stop,
                    struct stretch *s, uint64_t *next)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    struct branch_pred p;
    const char *why;
    s->why = STRETCH_END_LIMIT;
    if (s->nins == STRETCH_MAX_INSNS || (stop && lin == *stop))
        return false;
    s->why = STRETCH_END_LOOP;
    if (stretch_index(s, lin) >= 0 || avoided(s, lin))
        return false;
    s->why = STRETCH_END_CUT;
    if (cpu_decode(v, lin, &in, ops, &why) < 0 || branch_predict_at(v, lin, &p, &why) < 0)
        return false;
    /*
     * The conditional branch a fork starts at runs on the CPU: which way it
     * goes, the leaf says.  A loop's round takes it back (fork_taken).
     */
    int ends;
    if (lin == s->fork_at && p.kind == VBTS_KIND_JCC) {
        if (!s->fork_taken)
            p.kind = VBTS_KIND_UNKNOWN;
        ends = p.target_known ? -1 : STRETCH_END_JCC;
    } else if (s->nins == 0 && p.kind != VBTS_KIND_UNKNOWN) {
        ends = STRETCH_END_CUT;     /* a branch to start with is the caller's to take */
    } else {
        ends = known_branch_ends(v, lin, &in, ops, &p, s);
    }
    if (ends >= 0) {
        s->why = (enum stretch_end)ends;
        return false;
    }
    /* Code an earlier store of the stretch may have changed (through any mapping) runs decoded afresh. */
    s->why = STRETCH_END_LIMIT;
    if (stores_hit(&s->st, 0, v, lin, in.length))
        return false;
    int nh = s->nh;
    unsigned nst = s->st.n;
    uint32_t m = raises(v, lin, &in, ops, s);
    uint32_t vectors[STRETCH_MAX_HANDLERS];
    memcpy(vectors, s->vectors, sizeof(vectors));
    if (m == STRETCH_CUT || !watch(v, m, max, s)) {
        if (m != STRETCH_CUT)
            s->why = STRETCH_END_HANDLERS;
        s->nh = nh;
        s->st.n = nst;
        memcpy(s->vectors, vectors, sizeof(vectors));
        return false;
    }
    s->ins[s->nins] = lin;
    s->recs_before[s->nins++] = (uint8_t)s->nrec;
    known_note(v, lin, &in, ops, s);
    if (p.kind != VBTS_KIND_UNKNOWN) {
        s->rec[s->nrec++] = (struct stretch_rec){ lin, p.target, p.kind };
        *next = p.target;
    } else {
        *next = lin + p.len;
    }
    return true;
}

/*
 * Where the stretch must end earlier: before an instruction it comes back
 * to, or a handler's entry (a breakpoint there fires on arrival), and
 * before its end if a handler begins there.  0: nowhere; -1: it cannot.
 */
static int conflict(const struct stretch *s)
{
    unsigned cut = s->nins;
    int k = stretch_index(s, s->end);
    if (k >= 0)
        cut = k ? (unsigned)k : 1;
    for (int i = 0; i < s->nh; i++) {
        int j = stretch_index(s, s->handler[i]);
        if (j == 0)
            return -1;
        if (j > 0 && (unsigned)j < cut)
            cut = (unsigned)j;
        if (s->handler[i] == s->end && s->nins - 1 < cut)
            cut = s->nins - 1;
    }
    if (cut == s->nins && k < 0)
        return 0;
    return cut == 0 || cut >= s->nins ? -1 : (int)cut;
}

/*
 * A delivery that faults becomes a double fault, which no instruction
 * raises by itself: its handler gets a slot only where one is left (the
 * end's RSP check catches it otherwise, leap.c).
 */
static void watch_df(const struct cpu_view *v, int max, struct stretch *s)
{
    int nh = s->nh;
    uint32_t vectors[STRETCH_MAX_HANDLERS];
    memcpy(vectors, s->vectors, sizeof(vectors));
    if (nh && nh < max && watch(v, 1u << 8, max, s) && conflict(s) == 0)
        return;
    s->nh = nh;
    memcpy(s->vectors, vectors, sizeof(vectors));
}

/* Extend s from `from` as far as it goes, to `limit` instructions at most; its end then. */
void stretch_run(const struct cpu_view *v, int max, const uint64_t *stop, unsigned limit, uint64_t from,
                 struct stretch *s)
{
    uint64_t next = from;
    while (s->nins < limit && stretch_extend(v, next, max, stop, s, &next))
        ;
    if (s->nins == limit && limit < STRETCH_MAX_INSNS)
        s->why = STRETCH_END_LOOP;      /* cut short: it ended at code it runs twice, or a handler's */
    s->end = next;
}

/* One path from the fork at s (common part: ins[0, base)), cut short while its leaf lies on the way of another. */
bool stretch_path(const struct cpu_view *v, int max, const uint64_t *stop, unsigned base, unsigned limit,
                  uint64_t from, const struct stretch *s, struct stretch *out)
{
    for (;;) {
        stretch_copy(out, s);
        stretch_run(v, max, stop, limit, from, out);
        /* Its leaf on the way of the common part, or of the other path: cut one short, so that it is not. */
        if (stretch_index(s, out->end) < 0 && stretch_index(out, out->end) < 0 && !avoided(out, out->end))
            return true;
        if (out->nins == base)
            return false;
        limit = out->nins - 1;
    }
}

bool stretch_plan(const struct cpu_view *v, const struct stretch_opts *o, struct stretch *out)
{
    uint64_t lin = cpu_linear_ip(v->regs, v->sregs);
    int max_handlers = o->max_handlers > STRETCH_MAX_HANDLERS ? STRETCH_MAX_HANDLERS : o->max_handlers;
    /* User mode: #AC, and hosts whose breakpoints do not fire there.  The guest's own TF. */
    if (cpu_cpl(v->sregs) == 3 || (v->regs->rflags & RFLAGS_TF))
        return false;
    unsigned limit = STRETCH_MAX_INSNS;
    for (;;) {
        memset(out, 0, offsetof(struct stretch, ins));
        out->sp_exact = true;
        out->alone = o->alone;
        if (o->host)
            out->st = *o->host;
        out->nseed = out->st.n;
        out->cpl = cpu_cpl(v->sregs);
        out->cs_base = cpu_code_base(v->sregs);
        stretch_run(v, max_handlers, o->stop, limit, lin, out);
        if (out->nins == 0)
            return false;
        int cut = conflict(out);
        if (cut < 0)
            return false;
        if (cut == 0)
            break;
        limit = (unsigned)cut;
    }
    out->nprefix = out->nins;
    out->nprefix_rec = out->nrec;
    out->nleaf = 1;
    out->leaf[0] = (struct stretch_leaf){ .end = out->end, .sp_exact = out->sp_exact, .sp_delta = out->sp_delta,
                                          .why = out->why };
    if (o->fork && out->why == STRETCH_END_JCC && !rounds_plan(v, max_handlers, o->stop, out))
        fork_plan(v, max_handlers, o->stop, out);
    if (out->nleaf == 1)
        watch_df(v, max_handlers, out);
    return true;
}

void stretch_copy(struct stretch *dst, const struct stretch *src)
{
    memcpy(dst, src, offsetof(struct stretch, ins));
    memcpy(dst->ins, src->ins, src->nins * sizeof(src->ins[0]));
    memcpy(dst->recs_before, src->recs_before, src->nins);
    memcpy(dst->rec, src->rec, src->nrec * sizeof(src->rec[0]));
}

int stretch_leaf_at(const struct stretch *s, uint64_t lin)
{
    for (unsigned i = 0; i < s->nleaf; i++)
        if (s->leaf[i].end == lin)
            return (int)i;
    return -1;
}

int stretch_path_of(const struct stretch *s, unsigned i)
{
    for (unsigned l = 0; l < s->nleaf && i >= s->nprefix; l++)
        for (unsigned k = 0; k < s->leaf[l].nseg; k++)
            if (i >= s->leaf[l].seg[k].first && i < s->leaf[l].seg[k].last)
                return (int)l;
    return -1;
}
