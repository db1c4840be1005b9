/* SPDX-License-Identifier: MIT */
#include "trace/stretch.h"
#include "trace/fork.h"
#include "trace/known.h"
#include "trace/rounds.h"
#include "x86/deliver.h"

#include <stddef.h>
#include <stdlib.h>
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
                       const ZydisDecodedOperand *ops, struct stretch *s, bool *unsafe)
{
    *unsafe = true;
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
    *unsafe = false;
    for (unsigned i = 0; i < in->operand_count && in->mnemonic != ZYDIS_MNEMONIC_NOP; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM && !(safe & (1u << i)))
            *unsafe = true;
    if (!safe)
        return fault_may_raise(v, lin, in, ops) & ~(1u << 8);
    ZydisDecodedOperand left[ZYDIS_MAX_OPERAND_COUNT];
    unsigned k = in->operand_count > 2 ? in->operand_count : 2;    /* fault.c reads the first two by name */
    memcpy(left, ops, k * sizeof(left[0]));
    for (unsigned i = 0; i < in->operand_count; i++)
        if (safe & (1u << i))
            left[i].type = ZYDIS_OPERAND_TYPE_UNUSED;
    return fault_may_raise(v, lin, in, left) & ~(1u << 8);
}

static unsigned where_hash(uint64_t lin, unsigned n)
{
    return (unsigned)((lin * 0x9e3779b97f4a7c15ull) >> 40) & (n - 1);
}

/*
 * where[]: an address's first index on the stretch, by its hash (probed
 * on), marked with the plan's generation: entries of an earlier plan, or
 * past nins (a stretch cut shorter), are not its.
 */
int stretch_index(const struct stretch *s, uint64_t lin)
{
    for (unsigned h = where_hash(lin, s->nwhere), k = 0; k < s->nwhere; k++, h = (h + 1) & (s->nwhere - 1)) {
        uint32_t e = s->where[h];
        if (e >> 16 != (s->gen & 0xffff))
            return -1;
        unsigned i = (e & 0xffff) - 1;
        if (i < s->nins && s->ins[i] == lin)
            return (int)i;
    }
    return -1;
}

/* lin is new to the stretch, at index i. */
static void where_add(struct stretch *s, uint64_t lin, unsigned i)
{
    unsigned h = where_hash(lin, s->nwhere);
    for (unsigned k = 0; k < s->nwhere; k++, h = (h + 1) & (s->nwhere - 1)) {
        uint32_t e = s->where[h];
        if (e >> 16 != (s->gen & 0xffff) || (e & 0xffff) - 1u >= s->nins) {
            s->where[h] = (s->gen & 0xffff) << 16 | (i + 1);
            return;
        }
    }
}

void stretch_reset(struct stretch *s)
{
    memset(&s->nins, 0, sizeof(*s) - offsetof(struct stretch, nins));
    /* A new generation; where it wraps, no entry may keep an old one's number. */
    if ((++s->gen & 0xffff) == 0) {
        memset(s->where, 0, s->nwhere * sizeof(s->where[0]));
        s->gen++;
    }
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
    for (uint32_t left = m; left; left &= left - 1) {
        unsigned vec = (unsigned)__builtin_ctz(left);
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

/* How many instructions s may have. */
static unsigned room(const struct stretch *s)
{
    unsigned n = s->loops ? s->max_path : STRETCH_MAX_INSNS;
    return n < s->cap ? n : s->cap;
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
    const ZydisDecodedInstruction *in;
    const ZydisDecodedOperand *ops;
    struct branch_pred p;
    const char *why;
    s->why = STRETCH_END_LIMIT;
    if (s->nins == room(s) || (stop && lin == *stop))
        return false;
    s->why = STRETCH_END_LOOP;
    int again = stretch_index(s, lin);
    s->came_back |= again == 0;
    if ((again >= 0 && !s->loops) || avoided(s, lin))
        return false;
    s->why = STRETCH_END_CUT;
    if (cpu_decode_ref(v, lin, &in, &ops, &why) < 0)
        return false;
    branch_predict_decoded(v, lin, in, ops, &p);
    known_begin(v, lin, s);
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
        ends = known_branch_ends(v, lin, in, ops, &p, s);
        /*
         * A counted loop's way back, computed: the loop runs whole from its
         * head (trace/rounds.h) for less than its rounds cost computed one
         * by one.  It ends here, and the next stretch starts at the head.
         */
        if (ends < 0 && s->loops && p.kind == VBTS_KIND_JCC && stretch_index(s, p.target) >= 0 &&
            rounds_counted(v, s, lin))
            ends = STRETCH_END_JCC;
    }
    if (ends >= 0) {
        s->why = (enum stretch_end)ends;
        return false;
    }
    /* Code an earlier store of the stretch may have changed (through any mapping) runs decoded afresh. */
    s->why = STRETCH_END_LIMIT;
    if (stores_hit(&s->st, 0, v, lin, in->length))
        return false;
    int nh = s->nh;
    unsigned nst = s->st.n;
    bool unsafe;
    uint32_t m = raises(v, lin, in, ops, s, &unsafe);
    uint32_t vectors[STRETCH_MAX_HANDLERS];
    memcpy(vectors, s->vectors, sizeof(vectors));
    /* Again: an exception's frame names the one time it may raise one, the first. */
    if (m == STRETCH_CUT || (again >= 0 && m) || !watch(v, m, max, s)) {
        if (m != STRETCH_CUT)
            s->why = again >= 0 && m ? STRETCH_END_LOOP : STRETCH_END_HANDLERS;
        s->nh = nh;
        s->st.n = nst;
        memcpy(s->vectors, vectors, sizeof(vectors));
        return false;
    }
    if (s->loops) {
        s->known[s->nins] = (uint16_t)(~s->now.unknown & 0xffef);
        s->key[s->nins] = s->now_key;
    }
    stretch_append(s, lin);
    known_note(v, lin, in, ops, nst, s);
    s->mmio_maybe |= unsafe;
    if (p.kind != VBTS_KIND_UNKNOWN) {
        s->rec[s->nrec++] = (struct stretch_rec){ lin, p.target, p.kind };
        *next = p.target;
    } else {
        *next = lin + p.len;
    }
    return true;
}

/* Its last instruction that is there for the first time: a breakpoint there fires there first. */
static unsigned last_first(const struct stretch *s)
{
    unsigned i = s->nins ? s->nins - 1 : 0;
    while (i > 0 && !s->first[i])
        i--;
    return i;
}

/*
 * Where the stretch must end earlier: at its last new instruction where it
 * comes back to one (its end's breakpoint would fire there first), before
 * a handler's entry (a breakpoint there fires on arrival), and before its
 * end if a handler begins there.  0: nowhere; -1: it cannot.
 */
static int conflict(const struct stretch *s)
{
    unsigned cut = s->nins;
    int k = stretch_index(s, s->end);
    if (k >= 0)
        cut = last_first(s);
    for (int i = 0; i < s->nh; i++) {
        int j = stretch_index(s, s->handler[i]);
        if (j == 0)
            return -1;
        if (j > 0 && (unsigned)j < cut)
            cut = (unsigned)j;
        if (s->handler[i] == s->end && last_first(s) < cut)
            cut = last_first(s);
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
    if (s->nins == limit && limit < room(s))
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

/* The stretch from lin, cut where a breakpoint of its own would fire early; false if it cannot start. */
static bool plan_once(const struct cpu_view *v, const struct stretch_opts *o, int max_handlers, bool eval,
                      uint64_t lin, struct stretch *out)
{
    bool loops = eval && !o->no_loops;
    unsigned max_path = (v->regs->rflags & RFLAGS_IF) ? STRETCH_MAX_PATH_IF : STRETCH_MAX_PATH;
    unsigned limit = loops ? max_path : STRETCH_MAX_INSNS;
    bool back = false, ran_out = false;
    for (;;) {
        stretch_reset(out);
        out->sp_exact = true;
        out->alone = o->alone;
        out->eval = eval;
        out->loops = loops;
        out->max_path = max_path;
        eval_init(&out->now, v->regs);
        out->now_key = stretch_key(out->now.gpr, 0xffef, cpu_mode(v->sregs) == MODE_LONG64);
        if (o->host)
            out->st = *o->host;
        out->nseed = out->st.keep = out->st.n;
        out->cpl = cpu_cpl(v->sregs);
        out->cs_base = cpu_code_base(v->sregs);
        stretch_run(v, max_handlers, o->stop, limit, lin, out);
        back |= out->came_back;
        if (out->nins == 0)
            return false;
        int cut = conflict(out);
        if (cut < 0)
            return false;
        if (cut == 0)
            break;
        ran_out |= out->nins == room(out) && !out->first[out->nins - 1];
        limit = (unsigned)cut;
    }
    out->came_back = back;
    out->ran_out = ran_out;
    out->nprefix = out->nins;
    out->nprefix_rec = out->nrec;
    out->nleaf = 1;
    out->leaf[0] = (struct stretch_leaf){ .end = out->end, .sp_exact = out->sp_exact, .sp_delta = out->sp_delta,
                                          .why = out->why };
    stretch_leaf_regs(&out->leaf[0], out);
    return true;
}

/*
 * The stretch, planned with nothing computed (as the CPU repeats a loop's
 * rounds, not from values the first round alone has), ends at a loop's
 * branch back to it: the loop may run whole (trace/rounds.h).
 */
static bool plan_rounds(const struct cpu_view *v, const struct stretch_opts *o, int max_handlers, uint64_t lin,
                        struct stretch *out)
{
    static __thread struct stretch plain;
    static __thread uint64_t mem[STRETCH_MEM(STRETCH_MAX_INSNS) / 8 + 1];
    if (!out->eval)
        return rounds_plan(v, max_handlers, o->stop, out);
    if (!plain.cap)
        stretch_attach(&plain, mem, STRETCH_MAX_INSNS);
    if (!plan_once(v, o, max_handlers, false, lin, &plain) || plain.why != STRETCH_END_JCC ||
        !rounds_plan(v, max_handlers, o->stop, &plain))
        return false;
    stretch_copy(out, &plain);
    return true;
}

/*
 * The stretch computes what it can; where it ends at a conditional
 * branch, or comes back to its start, a loop may run whole instead, and
 * else it forks at the branch.
 */
static bool plan(const struct cpu_view *v, const struct stretch_opts *o, struct stretch *out)
{
    uint64_t lin = cpu_linear_ip(v->regs, v->sregs);
    int max_handlers = o->max_handlers > STRETCH_MAX_HANDLERS ? STRETCH_MAX_HANDLERS : o->max_handlers;
    /* User mode: #AC, and hosts whose breakpoints do not fire there.  The guest's own TF. */
    if (cpu_cpl(v->sregs) == 3 || (v->regs->rflags & RFLAGS_TF))
        return false;
    if (!plan_once(v, o, max_handlers, o->eval && o->alone, lin, out))
        return false;
    /*
     * A round needs a counted way back: the plain plan ends at the first
     * conditional branch, this one's end, or one on the way back to its start.
     */
    if (o->fork && ((out->why == STRETCH_END_JCC && rounds_counted(v, out, out->end)) || out->came_back) &&
        plan_rounds(v, o, max_handlers, lin, out))
        return true;
    if (o->fork && out->why == STRETCH_END_JCC)
        fork_plan(v, max_handlers, o->stop, out);
    if (out->nleaf == 1)
        watch_df(v, max_handlers, out);
    return true;
}

bool stretch_plan(const struct cpu_view *v, const struct stretch_opts *o, struct stretch *out)
{
    /* The guest stands still while the planner reads it: each page is walked once. */
    gmem_memo_begin();
    bool r = plan(v, o, out);
    gmem_memo_end();
    return r;
}

void stretch_leaf_regs(struct stretch_leaf *l, const struct stretch *s)
{
    l->regs_known = ~s->now.unknown & 0xffff & ~(1u << 4);
    memcpy(l->gpr, s->now.gpr, sizeof(l->gpr));
}

void stretch_attach(struct stretch *s, void *mem, unsigned cap)
{
    char *p = mem;
    s->ins = (uint64_t *)(void *)p;
    p += cap * sizeof(uint64_t);
    s->rec = (struct stretch_rec *)(void *)p;
    p += cap * sizeof(struct stretch_rec);
    s->key = (uint32_t *)(void *)p;
    p += cap * sizeof(uint32_t);
    s->known = (uint16_t *)(void *)p;
    p += cap * sizeof(uint16_t);
    s->recs_before = (uint16_t *)(void *)p;
    p += cap * sizeof(uint16_t);
    s->first = (uint8_t *)p;
    p += cap * sizeof(uint8_t);
    /* where[]: a power of 2, at least twice cap (cap * 2 * 4 bytes are there for it). */
    s->nwhere = 1;
    while (s->nwhere < 2 * cap)
        s->nwhere *= 2;
    if (s->nwhere > 2 * cap)
        s->nwhere /= 2;
    s->where = (uint32_t *)(void *)(((uintptr_t)p + 3) & ~(uintptr_t)3);
    s->cap = s->nwhere / 2 < cap ? s->nwhere / 2 : cap;
    memset(s->where, 0, s->nwhere * sizeof(s->where[0]));
    s->gen = 0;
    stretch_reset(s);
}

void stretch_copy(struct stretch *dst, const struct stretch *src)
{
    if (src->nins > dst->cap || src->nrec > dst->cap)
        abort();        /* the monitor's bug: a copy into less room than the plan needs */
    stretch_reset(dst);
    memcpy(&dst->nins, &src->nins, sizeof(*dst) - offsetof(struct stretch, nins));
    memcpy(dst->ins, src->ins, src->nins * sizeof(src->ins[0]));
    memcpy(dst->key, src->key, src->nins * sizeof(src->key[0]));
    memcpy(dst->known, src->known, src->nins * sizeof(src->known[0]));
    memcpy(dst->recs_before, src->recs_before, src->nins * sizeof(src->recs_before[0]));
    memcpy(dst->first, src->first, src->nins);
    memcpy(dst->rec, src->rec, src->nrec * sizeof(src->rec[0]));
    for (unsigned i = 0; i < src->nins; i++)
        if (src->first[i])
            where_add(dst, src->ins[i], i);
}

void stretch_append(struct stretch *s, uint64_t lin)
{
    s->first[s->nins] = stretch_index(s, lin) < 0;
    if (s->first[s->nins])
        where_add(s, lin, s->nins);
    s->ins[s->nins] = lin;
    s->recs_before[s->nins++] = (uint16_t)s->nrec;
}

/* One register's part of a key: the key is their sum, kept as the stretch's registers change (stretch_key_update). */
static uint32_t key_part(unsigned i, uint64_t v)
{
    uint64_t x = (v ^ (i * 0xc2b2ae3d27d4eb4full)) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)((x ^ (x >> 29)) >> 32);
}

uint32_t stretch_key(const uint64_t gpr[16], uint16_t known, bool long64)
{
    uint32_t h = 0;
    for (unsigned i = 0; i < 16; i++)
        if (known & (1u << i))
            h += key_part(i, long64 ? gpr[i] : (uint32_t)gpr[i]);
    return h;
}

void stretch_key_update(struct stretch *s, const struct eval_regs *was, uint32_t written, bool long64)
{
    for (uint32_t left = written & 0xffef; left; left &= left - 1) {
        unsigned i = (unsigned)__builtin_ctz(left);
        uint32_t b = 1u << i;
        bool k0 = !(was->unknown & b) && i != 4, k1 = !(s->now.unknown & b) && i != 4;
        uint64_t m = long64 ? ~0ull : 0xffffffffull;
        if (k0 == k1 && (!k0 || !((was->gpr[i] ^ s->now.gpr[i]) & m)))
            continue;
        if (k0)
            s->now_key -= key_part(i, was->gpr[i] & m);
        if (k1)
            s->now_key += key_part(i, s->now.gpr[i] & m);
    }
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
