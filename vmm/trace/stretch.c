/* SPDX-License-Identifier: MIT */
#include "trace/stretch.h"
#include "x86/deliver.h"

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

/* The general register r is part of, as a bit of stretch.written: 0 if it is none. */
static uint32_t gpr_bit(ZydisRegister r)
{
    if (ZydisRegisterGetClass(r) < ZYDIS_REGCLASS_GPR8 || ZydisRegisterGetClass(r) > ZYDIS_REGCLASS_GPR64)
        return 0;
    int id = ZydisRegisterGetId(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r));
    return id >= 0 && id < 32 ? 1u << id : 0;
}

/* Does an instruction before this one in the stretch write r (any part of it)? */
static bool written(const struct stretch *s, ZydisRegister r)
{
    return s->written & gpr_bit(r);
}

/*
 * Note the guest-physical bytes of [lo, hi) as written: a later
 * instruction of the stretch there was decoded before they changed.
 * False if they are too many to note (the stretch ends before the store).
 */
static bool note_store(const struct cpu_view *v, uint64_t lo, uint64_t hi, struct stretch *s)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    if (hi - lo > 2 * 4096ull)
        return false;
    for (uint64_t at = lo; at < hi;) {
        uint64_t end = (at | 0xfff) + 1, gpa;
        if (end > hi)
            end = hi;
        /* Not mapped: the store faults there, on a watched handler, and writes nothing. */
        if (gmem_translate(v->mem, &pg, at, &gpa) == GMEM_OK) {
            if (s->nst == STRETCH_MAX_STORES)
                return false;
            s->st[s->nst].gpa = gpa;
            s->st[s->nst++].len = end - at;
        }
        at = end;
    }
    return true;
}

static bool stored(const struct stretch *s, uint64_t gpa, uint64_t len)
{
    for (unsigned i = 0; i < s->nst; i++)
        if (gpa < s->st[i].gpa + s->st[i].len && s->st[i].gpa < gpa + len)
            return true;
    return false;
}

/*
 * May the stretch's stores so far have written any byte of the
 * instruction at [lin, lin + len), or a paging entry that maps it?
 */
static bool overwritten(const struct cpu_view *v, uint64_t lin, unsigned len, const struct stretch *s)
{
    if (!s->nst)
        return false;
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    for (uint64_t at = lin; at < lin + len;) {
        uint64_t end = (at | 0xfff) + 1, gpa;
        struct gmem_access a;
        if (end > lin + len)
            end = lin + len;
        if (gmem_walk(v->mem, &pg, at, &gpa, &a) != GMEM_OK || stored(s, gpa, end - at))
            return true;
        for (unsigned i = 0; i < a.nentry; i++)
            if (stored(s, a.entry[i], 8))
                return true;
        at = end;
    }
    return false;
}

/* A REP STOS or MOVS stores RCX elements from RDI on, up or down by DF: how many bytes either way. */
static bool rep_span(const struct cpu_view *v, const ZydisDecodedInstruction *in, const struct stretch *s,
                     uint64_t elem, uint64_t *span)
{
    *span = 0;
    uint64_t n;
    if (!cpu_rep_count(v, in, &n))
        return true;
    if (written(s, ZYDIS_REGISTER_RCX) || n > 2 * 4096ull)
        return false;
    *span = n * elem;
    return true;
}

/*
 * The instruction writes (or may write) into the IDT: the handlers watched for the rest
 * of the stretch were read from it before (a guest that sets a gate and
 * then faults through it).  Or into an APIC's page.  Or into more than
 * the stretch can note (note_store), which the instructions after it
 * are checked against.
 */
static bool store_cuts(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, struct stretch *s)
{
    uint64_t base = v->sregs->idt.base, end = base + v->sregs->idt.limit;
    /* Its operands as it computes them: its own RIP; registers the stretch wrote before it are not known. */
    struct kvm_regs r = *v->regs;
    struct cpu_view at = { v->mem, &r, v->sregs };
    r.rip = lin - s->cs_base;
    for (unsigned i = 0; i < in->operand_count; i++) {
        uint64_t ea, slack = 0, n = ops[i].size / 8, span;
        if (ops[i].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[i].mem.type != ZYDIS_MEMOP_TYPE_MEM ||
            !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            continue;
        if (written(s, ops[i].mem.index))
            return true;
        bool sp = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, ops[i].mem.base) ==
                  ZYDIS_REGISTER_RSP;
        if (written(s, ops[i].mem.base)) {
            if (!sp || s->sp_span == ~0ull)
                return true;
            slack = s->sp_span;
        }
        if (cpu_store_below_sp(&ops[i]))
            slack += 2 * n;
        if (!rep_span(v, in, s, n, &span))
            return true;
        slack += span;
        if (cpu_operand_address(&at, in, &ops[i], &ea) < 0)
            return true;
        if (ea <= end + slack && ea + n + slack > base)
            return true;
        /* An APIC's register: an interrupt may be due at once (a self-IPI), which steps let in. */
        if (cpu_lin_irqchip(&at, ea))
            return true;
        if (!note_store(v, ea - slack, ea + n + slack, s))
            return true;
    }
    return false;
}

static bool is_sp(ZydisRegister r)
{
    return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r) == ZYDIS_REGISTER_RSP;
}

/*
 * How the instruction moves RSP, if by what the stretch knows (sp_delta
 * from RSP at its start, v's); else sp_exact goes.  Registers it has not
 * written are v's.
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
    case ZYDIS_MNEMONIC_ADD: case ZYDIS_MNEMONIC_SUB:
        if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && is_sp(ops[0].reg.value) && ops[0].size >= 32 &&
            ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
            s->sp_delta += in->mnemonic == ZYDIS_MNEMONIC_ADD ? ops[1].imm.value.s : -ops[1].imm.value.s;
            return;
        }
        break;
    case ZYDIS_MNEMONIC_MOV:
        if (is_sp(ops[0].reg.value) && ops[0].size == 64 && ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
            !written(s, ops[1].reg.value) && cpu_register(v->regs, ops[1].reg.value, &val) == 0) {
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
        if (in->operand_width == 64 && !written(s, ZYDIS_REGISTER_RBP)) {
            s->sp_delta = (int64_t)(v->regs->rbp + 8 - v->regs->rsp);
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

/* What the instruction, now in the stretch, leaves unknown to the ones after it. */
static void note_writes(const struct cpu_view *v, const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
                        struct stretch *s)
{
    note_sp(v, in, ops, s);
    for (unsigned i = 0; i < in->operand_count; i++) {
        ZydisRegister r = ops[i].reg.value;
        uint32_t bit = ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER ? gpr_bit(r) : 0;
        if (!bit || !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            continue;
        s->written |= bit;
        if (ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r) != ZYDIS_REGISTER_RSP ||
            s->sp_span == ~0ull)
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
 * The exceptions an instruction that is not cut can raise, a bit per
 * vector (x86/fault.c): #PF, #GP and #SS from memory accesses, #DE from a
 * division, #UD from an extension the CPU may lack.  A double fault is
 * not watched: a delivery that faults is a guest's disaster, and one
 * that happens is seen at the next exit, which ends the trace there.
 */
static uint32_t raises(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, struct stretch *s)
{
    if (cuts(in, ops) || store_cuts(v, lin, in, ops, s))
        return STRETCH_CUT;
    return fault_may_raise(v, lin, in, ops) & ~(1u << 8);
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

/* Add the instruction at lin if it fits; false: the stretch ends before it. */
static bool extend(const struct cpu_view *v, uint64_t lin, int max, const uint64_t *stop,
                   struct stretch *s, uint64_t *next)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    struct branch_pred p;
    const char *why;
    if (s->nins == STRETCH_MAX_INSNS || (stop && lin == *stop) || stretch_index(s, lin) >= 0 ||
        cpu_decode(v, lin, &in, ops, &why) < 0 || branch_predict_at(v, lin, &p, &why) < 0)
        return false;
    /* A branch to start with is the caller's to take; others are followed if direct. */
    if (p.kind != VBTS_KIND_UNKNOWN &&
        (s->nins == 0 || !((p.kind == VBTS_KIND_JMP || p.kind == VBTS_KIND_CALL) && p.target_known)))
        return false;
    /* Code an earlier store of the stretch may have changed (through any mapping) runs decoded afresh. */
    if (overwritten(v, lin, in.length, s))
        return false;
    int nh = s->nh;
    unsigned nst = s->nst;
    uint32_t m = raises(v, lin, &in, ops, s);
    uint32_t vectors[STRETCH_MAX_HANDLERS];
    memcpy(vectors, s->vectors, sizeof(vectors));
    if (m == STRETCH_CUT || !watch(v, m, max, s)) {
        s->nh = nh;
        s->nst = nst;
        memcpy(s->vectors, vectors, sizeof(vectors));
        return false;
    }
    s->ins[s->nins] = lin;
    s->recs_before[s->nins++] = (uint8_t)s->nrec;
    note_writes(v, &in, ops, s);
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

bool stretch_plan(const struct cpu_view *v, int max_handlers, const uint64_t *stop, struct stretch *out)
{
    uint64_t lin = cpu_linear_ip(v->regs, v->sregs);
    if (max_handlers > STRETCH_MAX_HANDLERS)
        max_handlers = STRETCH_MAX_HANDLERS;
    /* User mode: #AC, and hosts whose breakpoints do not fire there.  The guest's own TF. */
    if (cpu_cpl(v->sregs) == 3 || (v->regs->rflags & RFLAGS_TF))
        return false;
    unsigned limit = STRETCH_MAX_INSNS;
    for (;;) {
        memset(out, 0, sizeof(*out));
        out->sp_exact = true;
        out->cpl = cpu_cpl(v->sregs);
        out->cs_base = cpu_code_base(v->sregs);
        uint64_t next = lin;
        while (out->nins < limit && extend(v, next, max_handlers, stop, out, &next))
            ;
        if (out->nins == 0)
            return false;
        out->end = next;
        int cut = conflict(out);
        if (cut == 0)
            watch_df(v, max_handlers, out);
        if (cut <= 0)
            return cut == 0;
        limit = (unsigned)cut;
    }
}

/* Width-masked stack pointer arithmetic, as the CPU does it in this mode. */
static uint64_t sp_add(const struct kvm_sregs *sr, uint64_t sp, int64_t d)
{
    uint64_t r = sp + (uint64_t)d;
    return cpu_stack_width(sr) == 64 ? r : (uint32_t)r;
}

/* The accessed (and dirty) bits the CPU sets for an access it made, a page at a time. */
static bool mark(const struct cpu_view *v, uint64_t lin, unsigned len, bool write, uint64_t *gpa)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    if ((lin & 0xfff) + len > 0x1000)
        return false;   /* across a page: left to the CPU */
    return gmem_walk_mark(v->mem, &pg, lin, write, gpa) == GMEM_OK &&
           gmem_contains(v->mem, *gpa, len);
}

bool stretch_take(const struct cpu_view *v, const struct branch_pred *p, struct kvm_regs *r)
{
    const struct kvm_sregs *sr = v->sregs;
    enum cpu_mode mode = cpu_mode(sr);
    switch (p->kind) {
    case VBTS_KIND_JCC: case VBTS_KIND_JMP: case VBTS_KIND_JMP_IND:
    case VBTS_KIND_CALL: case VBTS_KIND_CALL_IND: case VBTS_KIND_RET:
        break;
    default:
        return false;
    }
    if ((p->taken && !p->target_known) || (r->rflags & RFLAGS_TF) || (sr->cr4 & CR4_CET) ||
        (mode != MODE_LONG64 && mode != MODE_PROT32 && mode != MODE_COMPAT32))
        return false;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    struct delivery d;
    const char *why;
    uint64_t gpa;
    if (cpu_decode(v, p->from, &in, ops, &why) < 0 || in.mnemonic == ZYDIS_MNEMONIC_LOOP ||
        in.mnemonic == ZYDIS_MNEMONIC_LOOPE || in.mnemonic == ZYDIS_MNEMONIC_LOOPNE ||
        fault_predict(v, &in, ops, &d) != FAULT_NONE || !mark(v, p->from, in.length, false, &gpa))
        return false;
    unsigned w = cpu_stack_width(sr) / 8;
    uint64_t cs_base = cpu_code_base(sr), ss_base = cpu_stack_base(sr);
    if ((p->kind == VBTS_KIND_CALL || p->kind == VBTS_KIND_CALL_IND || p->kind == VBTS_KIND_RET) &&
        in.operand_width != w * 8)
        return false;
    /* A target outside the code segment (non-canonical in 64-bit mode) is a #GP at the branch. */
    uint64_t ip = p->taken ? p->target - cs_base : 0;
    if (mode == MODE_LONG64 ? !cpu_canonical(sr, ip) : ip > sr->cs.limit)
        return false;
    for (unsigned i = 0; i < in.operand_count_visible; i++) {
        uint64_t ea;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM &&
            (cpu_operand_address(v, &in, &ops[i], &ea) < 0 || !mark(v, ea, in.operand_width / 8, false, &gpa)))
            return false;
    }
    uint64_t sp = r->rsp, ret = p->from + p->len - cs_base;
    if (p->kind == VBTS_KIND_CALL || p->kind == VBTS_KIND_CALL_IND) {
        sp = sp_add(sr, sp, -(int64_t)w);
        if (!mark(v, ss_base + sp, w, true, &gpa))
            return false;
        memcpy(gmem_ptr(v->mem, gpa, w), &ret, w);
    } else if (p->kind == VBTS_KIND_RET) {
        uint64_t imm = in.operand_count_visible && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE
                       ? ops[0].imm.value.u : 0;
        if (!mark(v, ss_base + sp, w, false, &gpa))
            return false;
        sp = sp_add(sr, sp, (int64_t)(w + imm));
    }
    r->rsp = sp;
    r->rip = (p->taken ? p->target : p->from + p->len) - cs_base;
    if (mode != MODE_LONG64)
        r->rip = (uint32_t)r->rip;
    return true;
}
