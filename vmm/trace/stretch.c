/* SPDX-License-Identifier: MIT */
#include "trace/stretch.h"
#include "trace/known.h"
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
static bool extend(const struct cpu_view *v, uint64_t lin, int max, const uint64_t *stop,
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
static void run(const struct cpu_view *v, int max, const uint64_t *stop, unsigned limit, uint64_t from,
                struct stretch *s)
{
    uint64_t next = from;
    while (s->nins < limit && extend(v, next, max, stop, s, &next))
        ;
    if (s->nins == limit && limit < STRETCH_MAX_INSNS)
        s->why = STRETCH_END_LOOP;      /* cut short: it ended at code it runs twice, or a handler's */
    s->end = next;
}

/* One path from the fork at s (common part: ins[0, base)), cut short while its leaf lies on the way of another. */
static bool path(const struct cpu_view *v, int max, const uint64_t *stop, unsigned base, unsigned limit, uint64_t from,
                 const struct stretch *s, struct stretch *out)
{
    for (;;) {
        stretch_copy(out, s);
        run(v, max, stop, limit, from, out);
        /* Its leaf on the way of the common part, or of the other path: cut one short, so that it is not. */
        if (stretch_index(s, out->end) < 0 && stretch_index(out, out->end) < 0 && !avoided(out, out->end))
            return true;
        if (out->nins == base)
            return false;
        limit = out->nins - 1;
    }
}

/* Instructions a loop run whole may take: interrupts wait for its end (BLOCKIRQ), where IF would let them in. */
#define STRETCH_LOOP_INSNS_IF 4096
#define STRETCH_LOOP_INSNS (1u << 22)

/* Does the instruction at lin write (any part of) the general register r64? */
static bool writes(const struct cpu_view *v, uint64_t lin, ZydisRegister r64)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_decode(v, lin, &in, ops, &why) < 0)
        return true;
    for (unsigned i = 0; i < in.operand_count; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
            ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, ops[i].reg.value) == r64)
            return true;
    return false;
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
static bool loop_rounds(const struct cpu_view *v, int max, const uint64_t *stop, struct stretch *out)
{
    static __thread struct stretch a, r2;
    uint64_t j = out->end, c;
    ZydisRegister r;
    unsigned bits, at;
    if (!out->alone || out->nh || !out->sp_exact || !counter_of(v, out, j, &r, &bits, &at))
        return false;
    for (unsigned i = 0; i < out->nins; i++)
        if (i != at && writes(v, out->ins[i], r))
            return false;
    if (cpu_register(v->regs, r, &c) < 0)
        return false;
    c = bits == 32 ? (uint32_t)c : c;
    stretch_copy(&a, out);
    a.fork_at = j;
    a.fork_taken = true;
    run(v, max, stop, STRETCH_MAX_INSNS, j, &a);
    unsigned np = out->nins;
    uint64_t cap = (v->regs->rflags & RFLAGS_IF) ? STRETCH_LOOP_INSNS_IF : STRETCH_LOOP_INSNS;
    if (a.end != out->ins[0] || a.why != STRETCH_END_LOOP || a.nh || !a.sp_exact || a.sp_delta ||
        a.nins <= np || c < 2 || c > cap / a.nins)
        return false;
    for (unsigned i = np + 1; i < a.nins; i++)
        if (writes(v, a.ins[i], r))
            return false;
    uint64_t exit = a.ins[np] == j ? j : 0, len;
    struct branch_pred p;
    const char *why;
    if (!exit || branch_predict_at(v, j, &p, &why) < 0)
        return false;
    len = p.len;
    exit = j + len;
    /* The second round, as the planner sees it after the first. */
    stretch_copy(&r2, &a);
    r2.nins = r2.nrec = 0;
    r2.mem_targets = false;     /* the first round's may have (a slot pushed before it), not the second's */
    run(v, max, stop, a.nins, out->ins[0], &r2);
    if (r2.nins != a.nins || r2.end != out->ins[0] || r2.nrec != a.nrec || r2.nh || !r2.sp_exact || r2.sp_delta ||
        r2.mem_targets || memcmp(r2.ins, a.ins, a.nins * sizeof(a.ins[0])) ||
        memcmp(r2.recs_before, a.recs_before, a.nins) || stretch_index(&a, exit) >= 0)
        return false;
    for (unsigned k = 0; k < a.nrec; k++)
        if (r2.rec[k].from != a.rec[k].from || r2.rec[k].to != a.rec[k].to || r2.rec[k].kind != a.rec[k].kind)
            return false;
    int64_t sp = out->sp_delta;
    stretch_copy(out, &a);
    out->rounds = c;
    out->counter = (uint16_t)r;
    out->counter_bits = (uint8_t)bits;
    out->counter_start = c;
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

/* A path of a fork being planned: its stretch (everything on the way to its leaf) and where its own part starts. */
struct way {
    struct stretch s;
    unsigned from, rec_from;        /* its own instructions and records in s */
    struct stretch *fork;           /* where it forks again (its branch added), or NULL */
    struct way *sub[2];             /* ...its two ways on */
};

/* The two ways on from the conditional branch that ends `at`: false (nothing changed) if they cannot be told apart. */
static bool split(const struct cpu_view *v, int max, const uint64_t *stop, unsigned room, struct stretch *t,
                  const struct stretch *at, struct way *w[2], const struct stretch *const *others, unsigned nothers)
{
    struct branch_pred p;
    const char *why;
    uint64_t j = at->end, next;
    if (at->why != STRETCH_END_JCC || at->nh > max || room < 3 ||
        branch_predict_at(v, j, &p, &why) < 0 || p.kind != VBTS_KIND_JCC || !p.target_known)
        return false;
    /* A target the CPU refuses (#GP at the branch) is left to it. */
    uint64_t ip = p.target - at->cs_base;
    if (cpu_mode(v->sregs) == MODE_LONG64 ? !cpu_canonical(v->sregs, ip) : ip > v->sregs->cs.limit)
        return false;
    stretch_copy(t, at);
    t->fork_at = j;
    t->navoid = nothers;
    for (unsigned i = 0; i < nothers; i++)
        t->avoid[i] = others[i];
    if (!extend(v, j, max, stop, t, &next))
        return false;
    unsigned base = t->nins, share = (room - 1) / 2;
    /* Taken: the branch's record first. */
    t->rec[t->nrec++] = (struct stretch_rec){ j, p.target, VBTS_KIND_JCC };
    if (!path(v, max, stop, base, base + share, p.target, t, &w[0]->s))
        return false;
    t->nrec--;
    /* The other way avoids this one, and sees its handlers and stores. */
    t->avoid[t->navoid++] = &w[0]->s;
    t->nh = w[0]->s.nh;
    memcpy(t->handler, w[0]->s.handler, sizeof(t->handler));
    memcpy(t->vectors, w[0]->s.vectors, sizeof(t->vectors));
    t->st = w[0]->s.st;
    if (!path(v, max, stop, base, base + share, next, t, &w[1]->s) || w[0]->s.end == w[1]->s.end)
        return false;
    w[0]->from = w[1]->from = base;
    w[0]->rec_from = w[1]->rec_from = t->nrec;     /* the taken way's: the branch's record first */
    w[0]->fork = w[1]->fork = NULL;
    return true;
}

/* Append s's instructions from `from` and records from `rec_from` to f: the segment they make. */
static void append(struct stretch *f, const struct stretch *s, unsigned from, unsigned rec_from, unsigned seg[4])
{
    unsigned n = s->nins - from, nr = s->nrec - rec_from;
    seg[0] = f->nins;
    seg[2] = f->nrec;
    memcpy(&f->ins[f->nins], &s->ins[from], n * sizeof(f->ins[0]));
    for (unsigned i = 0; i < n; i++)
        f->recs_before[f->nins + i] = (uint8_t)(s->recs_before[from + i] - rec_from + f->nrec);
    memcpy(&f->rec[f->nrec], &s->rec[rec_from], nr * sizeof(f->rec[0]));
    f->nins += n;
    f->nrec += nr;
    seg[1] = f->nins;
    seg[3] = f->nrec;
}

static void add_leaf(struct stretch *f, const struct stretch *s, unsigned nseg, const unsigned seg[2][4])
{
    struct stretch_leaf *l = &f->leaf[f->nleaf++];
    *l = (struct stretch_leaf){ .end = s->end, .nseg = nseg, .sp_exact = s->sp_exact, .sp_delta = s->sp_delta,
                                .why = s->why };
    for (unsigned k = 0; k < nseg; k++) {
        l->seg[k].first = seg[k][0];
        l->seg[k].last = seg[k][1];
        l->seg[k].rec_first = seg[k][2];
        l->seg[k].rec_last = seg[k][3];
    }
}

/*
 * At the conditional branch that ends it, the stretch may go on along
 * both ways, each to a leaf of its own, and each of those again where
 * breakpoint slots are left: the breakpoint that fires names the way the
 * CPU went.  That holds while no leaf, and no handler, lies on the way to
 * another (nor on the common part), and no instruction is on two ways (an
 * exception's frame names one).  Each way gets half of what instructions
 * are left to it, and the handler slots its leaves leave.
 */
static void fork_paths(const struct cpu_view *v, int max, const uint64_t *stop, struct stretch *out)
{
    static __thread struct stretch t, deep[2], f;
    static __thread struct way ways[6];
    struct way *top[2] = { &ways[0], &ways[1] };
    if (!split(v, max - 1, stop, STRETCH_MAX_INSNS - out->nins, &t, out, top, NULL, 0))
        return;
    unsigned leaves = 2, base = top[0]->from;
    unsigned used = base + (top[0]->s.nins - base) + (top[1]->s.nins - base);
    const struct stretch *latest = &top[1]->s;     /* planned last: every handler and store so far */
    /* Two levels: each way forks again where slots and instructions are left, avoiding every other way. */
    for (unsigned k = 0; k < 2; k++) {
        struct way *sub[2] = { &ways[2 + 2 * k], &ways[3 + 2 * k] };
        const struct stretch *others[2];
        struct way *o = top[1 - k];
        unsigned n = 0;
        if (o->fork) {
            others[n++] = &o->sub[0]->s;
            others[n++] = &o->sub[1]->s;
        } else {
            others[n++] = &o->s;
        }
        unsigned room = STRETCH_MAX_INSNS > used ? (STRETCH_MAX_INSNS - used) / (k ? 1 : 2) : 0;
        struct stretch *in = &top[k]->s;
        in->nh = latest->nh;
        memcpy(in->handler, latest->handler, sizeof(in->handler));
        memcpy(in->vectors, latest->vectors, sizeof(in->vectors));
        in->st = latest->st;
        if (max - (int)leaves < 0 || !split(v, max - (int)leaves, stop, room, &deep[k], in, sub, others, n))
            continue;
        top[k]->fork = &deep[k];
        top[k]->sub[0] = sub[0];
        top[k]->sub[1] = sub[1];
        used += 1 + (sub[0]->s.nins - sub[0]->from) + (sub[1]->s.nins - sub[1]->from);
        latest = &sub[1]->s;
        leaves++;
    }
    /* The tree: the common part and its branch, then each way's own part (and branch), then its ways on. */
    stretch_copy(&f, out);
    f.ins[f.nins] = out->end;
    f.recs_before[f.nins++] = (uint8_t)out->nrec;
    f.nprefix = f.nins;
    f.nprefix_rec = f.nrec;
    f.nleaf = 0;
    for (unsigned k = 0; k < 2; k++) {
        struct way *w = top[k];
        unsigned seg[2][4];
        if (!w->fork) {
            append(&f, &w->s, w->from, w->rec_from, seg[0]);
            add_leaf(&f, &w->s, 1, seg);
            continue;
        }
        unsigned head[4];
        append(&f, w->fork, w->from, w->rec_from, head);
        for (unsigned i = 0; i < 2; i++) {
            memcpy(seg[0], head, sizeof(head));
            append(&f, &w->sub[i]->s, w->sub[i]->from, w->sub[i]->rec_from, seg[1]);
            add_leaf(&f, &w->sub[i]->s, 2, seg);
        }
    }
    f.nh = latest->nh;
    memcpy(f.handler, latest->handler, sizeof(f.handler));
    memcpy(f.vectors, latest->vectors, sizeof(f.vectors));
    f.st = latest->st;
    /* No handler on any way, nor at a leaf (a breakpoint there fires on arrival); leaves apart. */
    for (unsigned l = 0; l < f.nleaf; l++) {
        if (stretch_index(&f, f.leaf[l].end) >= 0)
            return;
        for (unsigned m = 0; m < l; m++)
            if (f.leaf[m].end == f.leaf[l].end)
                return;
        for (int i = 0; i < f.nh; i++)
            if (f.handler[i] == f.leaf[l].end)
                return;
    }
    for (int i = 0; i < f.nh; i++)
        if (stretch_index(&f, f.handler[i]) >= 0)
            return;
    if (f.nh + (int)f.nleaf > max + 1 || f.nins > STRETCH_MAX_INSNS)
        return;
    f.end = f.leaf[0].end;
    f.sp_exact = f.leaf[0].sp_exact;
    f.sp_delta = f.leaf[0].sp_delta;
    f.why = f.leaf[0].why;
    f.fork_at = 0;
    f.navoid = 0;
    stretch_copy(out, &f);
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
        run(v, max_handlers, o->stop, limit, lin, out);
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
    if (o->fork && out->why == STRETCH_END_JCC && !loop_rounds(v, max_handlers, o->stop, out))
        fork_paths(v, max_handlers, o->stop, out);
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
