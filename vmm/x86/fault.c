/* SPDX-License-Identifier: MIT */
#include "x86/fault.h"

#include <string.h>

#define PF_P      (1u << 0)
#define PF_W      (1u << 1)
#define PF_U      (1u << 2)
#define PF_I      (1u << 4)
#define CR0_EM    (1ull << 2)
#define CR0_TS    (1ull << 3)
#define CR0_WP    (1ull << 16)
#define CR0_AM    (1ull << 18)
#define CR4_SMEP  (1ull << 20)
#define CR4_SMAP  (1ull << 21)
#define EFER_NXE  (1ull << 11)
#define RFLAGS_AC (1ull << 18)

enum { GOOD = 0, FAULTS = 1, UNSURE = -1 };

static void set_fault(struct delivery *d, unsigned vector, bool has_error, uint32_t error)
{
    *d = (struct delivery){ .kind = DELIVER_FAULT, .vector = (uint8_t)vector,
                            .has_error = has_error, .error = error };
}

/*
 * The page-level checks of an access of len bytes at lin, page by page, as
 * the CPU makes them (SDM vol. 3, "Access Rights").  `fetch` is an
 * instruction fetch.
 */
static int page_check(const struct cpu_view *v, uint64_t lin, uint64_t len, bool write,
                      bool fetch, struct delivery *d)
{
    const struct kvm_sregs *s = v->sregs;
    struct gmem_paging pg;
    cpu_paging(s, &pg);
    bool user = cpu_cpl(s) == 3;
    uint64_t end = lin + len - 1;
    for (uint64_t a = lin;; a = (a | 0xfff) + 1) {
        uint64_t gpa;
        struct gmem_access acc;
        enum gmem_xlate x = gmem_walk(v->mem, &pg, a, &gpa, &acc);
        bool fault = false;
        uint32_t err = (write ? PF_W : 0) | (user ? PF_U : 0);
        if (fetch && ((s->efer & EFER_NXE) || (s->cr4 & CR4_SMEP)))
            err |= PF_I;
        if (x == GMEM_NOT_PRESENT) {
            fault = true;
        } else if (x != GMEM_OK) {
            return UNSURE;              /* a page table outside RAM, a non-canonical address */
        } else {
            /* A page that is not RAM is MMIO: the monitor or KVM answers it, no #PF. */
            fault = (user && !acc.user) || (write && !acc.write && (user || (s->cr0 & CR0_WP))) ||
                    (fetch && !acc.exec) ||
                    (fetch && !user && acc.user && (s->cr4 & CR4_SMEP)) ||
                    (!fetch && !user && acc.user && (s->cr4 & CR4_SMAP) &&
                     !(v->regs->rflags & RFLAGS_AC));
            err |= PF_P;
        }
        if (fault) {
            set_fault(d, 14, true, err);
            d->cr2 = a < lin ? lin : a;
            return FAULTS;
        }
        if ((a | 0xfff) >= end)
            return GOOD;
    }
}

/* Where an operand reads or writes: pushes write below the stack pointer. */
static int operand_range(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                         const ZydisDecodedOperand *op, uint64_t *lin, uint64_t *len)
{
    *len = (op->size + 7) / 8;
    if (*len == 0)
        return UNSURE;
    bool stack = op->mem.base == ZYDIS_REGISTER_RSP || op->mem.base == ZYDIS_REGISTER_ESP ||
                 op->mem.base == ZYDIS_REGISTER_SP;
    if (cpu_operand_address(v, in, op, lin) < 0)
        return UNSURE;
    if (stack && op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
        (op->actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE))) {
        if (in->mnemonic == ZYDIS_MNEMONIC_ENTER)
            return UNSURE;
        *lin -= *len;
        if (cpu_mode(v->sregs) != MODE_LONG64)
            *lin = (uint32_t)*lin;
    }
    return GOOD;
}

/* Instructions whose aligned memory operand #GPs when it is not aligned. */
static bool needs_alignment(const ZydisDecodedInstruction *in)
{
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_MOVAPS: case ZYDIS_MNEMONIC_MOVAPD: case ZYDIS_MNEMONIC_MOVDQA:
    case ZYDIS_MNEMONIC_MOVNTPS: case ZYDIS_MNEMONIC_MOVNTPD: case ZYDIS_MNEMONIC_MOVNTDQ:
    case ZYDIS_MNEMONIC_MOVNTDQA: case ZYDIS_MNEMONIC_FXSAVE: case ZYDIS_MNEMONIC_FXRSTOR:
    case ZYDIS_MNEMONIC_FXSAVE64: case ZYDIS_MNEMONIC_FXRSTOR64:
    case ZYDIS_MNEMONIC_VMOVAPS: case ZYDIS_MNEMONIC_VMOVAPD: case ZYDIS_MNEMONIC_VMOVDQA:
    case ZYDIS_MNEMONIC_VMOVNTPS: case ZYDIS_MNEMONIC_VMOVNTPD: case ZYDIS_MNEMONIC_VMOVNTDQ:
    case ZYDIS_MNEMONIC_VMOVNTDQA:
        return true;
    default:
        return false;
    }
}

/* A rep-prefixed string instruction with a zero count touches no memory. */
static bool no_iterations(const struct cpu_view *v, const ZydisDecodedInstruction *in)
{
    uint64_t c;
    return cpu_rep_count(v, in, &c) && c == 0;
}

/* The checks of one memory operand: canonical (#GP, #SS), alignment (#GP, #AC), pages (#PF). */
static int memory_check(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                        const ZydisDecodedOperand *op, bool write, struct delivery *d)
{
    const struct kvm_sregs *s = v->sregs;
    uint64_t lin, len;
    if (operand_range(v, in, op, &lin, &len) != GOOD)
        return UNSURE;
    bool ss = op->mem.segment == ZYDIS_REGISTER_SS;
    if (cpu_mode(s) == MODE_LONG64) {
        if (!cpu_canonical(s, lin) || !cpu_canonical(s, lin + len - 1)) {
            set_fault(d, ss ? 12 : 13, true, 0);
            return FAULTS;
        }
    } else {
        const struct kvm_segment *seg = cpu_segment(s, op->mem.segment);
        bool flat = seg->base == 0 && seg->limit == 0xffffffff && !(seg->type & 4);
        if (cpu_mode(s) != MODE_REAL16 && !flat)
            return UNSURE;              /* segment limits are not modelled */
    }
    if (needs_alignment(in) && (lin & 15)) {
        set_fault(d, 13, true, 0);
        return FAULTS;
    }
    if (cpu_cpl(s) == 3 && (s->cr0 & CR0_AM) && (v->regs->rflags & RFLAGS_AC) &&
        (len == 2 || len == 4 || len == 8) && (lin & (len - 1)) &&
        in->meta.exception_class == ZYDIS_EXCEPTION_CLASS_NONE) {
        set_fault(d, 17, true, 0);
        return FAULTS;
    }
    return page_check(v, lin, len, write, false, d);
}

static int memory_operands(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                           const ZydisDecodedOperand *ops, struct delivery *d)
{
    /* Hints and TLB maintenance name an address but never fault on its page. */
    if (in->meta.category == ZYDIS_CATEGORY_PREFETCH || in->mnemonic == ZYDIS_MNEMONIC_INVLPG ||
        in->mnemonic == ZYDIS_MNEMONIC_CLDEMOTE || in->mnemonic == ZYDIS_MNEMONIC_NOP ||
        no_iterations(v, in))
        return GOOD;
    /* Reads before writes: the source of a movs faults first. */
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < in->operand_count; i++) {
            const ZydisDecodedOperand *op = &ops[i];
            if (op->type != ZYDIS_OPERAND_TYPE_MEMORY || !op->actions)
                continue;
            if (op->mem.type == ZYDIS_MEMOP_TYPE_AGEN)
                continue;               /* lea, nop: an address, not an access */
            if (op->mem.type != ZYDIS_MEMOP_TYPE_MEM)
                return UNSURE;          /* gathers, bound tables */
            bool w = op->actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE);
            bool r = op->actions & (ZYDIS_OPERAND_ACTION_READ | ZYDIS_OPERAND_ACTION_CONDREAD);
            if ((pass == 0 && !r) || (pass == 1 && (r || !w)))
                continue;
            /* A read-modify-write reports a write, as the CPU does. */
            int c = memory_check(v, in, op, w, d);
            if (c != GOOD)
                return c;
        }
    }
    return GOOD;
}

/* #DE: a zero divisor, or a quotient that does not fit. */
static int divide_check(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                        const ZydisDecodedOperand *ops, struct delivery *d)
{
    const ZydisDecodedOperand *src = &ops[0];
    unsigned bits = in->operand_width;
    uint64_t divisor;
    if (src->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if (cpu_register(v->regs, src->reg.value, &divisor) < 0)
            return UNSURE;
    } else if (src->type == ZYDIS_OPERAND_TYPE_MEMORY) {
        uint64_t lin;
        divisor = 0;
        if (cpu_operand_address(v, in, src, &lin) < 0 || cpu_read_linear(v, lin, &divisor, bits / 8))
            return UNSURE;              /* memory_operands decides the #PF */
    } else {
        return UNSURE;
    }
    const struct kvm_regs *r = v->regs;
    uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    divisor &= mask;
    if (divisor == 0) {
        set_fault(d, 0, false, 0);
        return FAULTS;
    }
    unsigned __int128 hi, lo;
    if (bits == 8) {
        hi = 0;
        lo = (uint16_t)r->rax;
    } else {
        hi = r->rdx & mask;
        lo = r->rax & mask;
    }
    unsigned __int128 dividend = bits == 8 ? lo : (hi << bits) | lo;
    bool overflow;
    if (in->mnemonic == ZYDIS_MNEMONIC_DIV) {
        overflow = dividend / divisor > mask;
    } else {
        /* Signed: sign-extend the 2*bits dividend and the divisor. */
        unsigned w = bits * 2;
        __int128 sd = w == 128 ? (__int128)dividend
                               : (__int128)(dividend << (128 - w)) >> (128 - w);
        __int128 sv = (__int128)((int64_t)(divisor << (64 - bits)) >> (64 - bits));
        /* The most negative 128-bit dividend over -1 overflows the division itself. */
        __int128 min = (__int128)((unsigned __int128)1 << (w - 1)) * (w == 128 ? 1 : -1);
        if (sv == -1 && sd == min) {
            overflow = true;
        } else {
            __int128 q = sd / sv;
            __int128 lim = (__int128)1 << (bits - 1);
            overflow = q >= lim || q < -lim;
        }
    }
    if (overflow) {
        set_fault(d, 0, false, 0);
        return FAULTS;
    }
    return GOOD;
}

/* The instruction writes a segment register: the descriptor's checks are not modelled. */
static bool segment_load(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    for (unsigned i = 0; i < in->operand_count; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
            ZydisRegisterGetClass(ops[i].reg.value) == ZYDIS_REGCLASS_SEGMENT &&
            (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            return true;
    return false;
}

int fault_segment_load(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, unsigned *error)
{
    const struct kvm_sregs *s = v->sregs;
    if (!(s->cr0 & 1) || cpu_mode(s) == MODE_REAL16 || (v->regs->rflags & (1u << 17)))
        return -1;
    ZydisRegister sreg = ZYDIS_REGISTER_NONE;
    uint64_t sel = 0;
    if (in->mnemonic == ZYDIS_MNEMONIC_MOV && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
        ZydisRegisterGetClass(ops[0].reg.value) == ZYDIS_REGCLASS_SEGMENT) {
        sreg = ops[0].reg.value;
        uint64_t lin;
        if (ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER) {
            if (cpu_register(v->regs, ops[1].reg.value, &sel) < 0)
                return -1;
        } else if (ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY ||
                   cpu_operand_address(v, in, &ops[1], &lin) < 0 || cpu_read_linear(v, lin, &sel, 2) < 0) {
            return -1;
        }
    } else {
        return -1;
    }
    sel &= 0xffff;
    if (sreg != ZYDIS_REGISTER_SS && sreg != ZYDIS_REGISTER_DS && sreg != ZYDIS_REGISTER_ES &&
        sreg != ZYDIS_REGISTER_FS && sreg != ZYDIS_REGISTER_GS)
        return -1;                      /* mov cs: #UD, opcode_check's */
    unsigned cpl = (unsigned)cpu_cpl(s), rpl = sel & 3, idx = sel & ~7u;
    bool ss = sreg == ZYDIS_REGISTER_SS;
    *error = sel & ~3u;
    if (idx == 0 && !(sel & 4)) {
        /* A null selector: fine in DS-GS; in SS only in 64-bit mode below CPL3 (RPL = CPL). */
        if (!ss || (cpu_mode(s) == MODE_LONG64 && cpl != 3 && rpl == cpl))
            return -1;
        *error = 0;
        return 13;
    }
    if (sel & 4)
        return -1;                      /* LDT: not modelled */
    if (idx + 7 > s->gdt.limit)
        return 13;
    uint8_t d[8];
    if (cpu_read_linear(v, s->gdt.base + idx, d, 8))
        return -1;
    unsigned type = d[5] & 0x1f, dpl = (d[5] >> 5) & 3;
    bool code = type & 0x08, present = d[5] & 0x80;
    if (!(type & 0x10))
        return 13;                      /* a system descriptor */
    if (ss) {
        if (code || !(type & 0x02) || rpl != cpl || dpl != cpl)
            return 13;
        return present ? -1 : 12;
    }
    if (code && !(type & 0x02))
        return 13;                      /* execute-only code */
    if ((!code || !(type & 0x04)) && (rpl > dpl || cpl > dpl))
        return 13;                      /* data or non-conforming code above its privilege */
    return present ? -1 : 11;
}

/* A far JMP or CALL whose selector faults for sure (cpu_far_destination): the vector, or -1. */
static int far_branch_fault(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                            const ZydisDecodedOperand *ops, unsigned *error)
{
    uint64_t off = 0, sel = 0, ea, target;
    int vector = -1;
    if (in->meta.branch_type != ZYDIS_BRANCH_TYPE_FAR ||
        (in->mnemonic != ZYDIS_MNEMONIC_JMP && in->mnemonic != ZYDIS_MNEMONIC_CALL))
        return -1;
    if (ops[0].type == ZYDIS_OPERAND_TYPE_POINTER) {
        off = ops[0].ptr.offset;
        sel = ops[0].ptr.segment;
    } else if (ops[0].type != ZYDIS_OPERAND_TYPE_MEMORY || cpu_operand_address(v, in, &ops[0], &ea) < 0 ||
               cpu_read_linear(v, ea, &off, in->operand_width / 8) < 0 ||
               cpu_read_linear(v, ea + in->operand_width / 8, &sel, 2) < 0) {
        return -1;
    }
    if (cpu_far_destination(v, (uint16_t)sel, off, &target, &vector) != 1)
        return -1;
    *error = (unsigned)sel & 0xfffc;
    return vector;
}

/* Software interrupts and the exceptions an opcode itself raises. */
/* #BR: BOUND's index (signed) outside the pair of bounds it reads. */
static int bound_check(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, struct delivery *d)
{
    unsigned bytes = in->operand_width / 8, sh = 64 - 8 * bytes;
    uint64_t index, lin, lo = 0, hi = 0;
    if ((bytes != 2 && bytes != 4) || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
        ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY || cpu_register(v->regs, ops[0].reg.value, &index) < 0 ||
        cpu_operand_address(v, in, &ops[1], &lin) < 0 || cpu_read_linear(v, lin, &lo, bytes) ||
        cpu_read_linear(v, lin + bytes, &hi, bytes))
        return UNSURE;
    int64_t i = (int64_t)(index << sh) >> sh, l = (int64_t)(lo << sh) >> sh, h = (int64_t)(hi << sh) >> sh;
    if (i >= l && i <= h)
        return GOOD;
    set_fault(d, 5, false, 0);
    return FAULTS;
}

static int opcode_check(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                        const ZydisDecodedOperand *ops, struct delivery *d)
{
    const struct kvm_sregs *s = v->sregs;
    unsigned cpl = (unsigned)cpu_cpl(s), iopl = (v->regs->rflags >> 12) & 3;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
        set_fault(d, 6, false, 0);
        return FAULTS;
    case ZYDIS_MNEMONIC_MOV:
        /* MOV to CS does not exist: #UD. */
        if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].reg.value == ZYDIS_REGISTER_CS) {
            set_fault(d, 6, false, 0);
            return FAULTS;
        }
        break;
    case ZYDIS_MNEMONIC_AAM:
        /* AAM 0 divides by zero (outside 64-bit mode, where Zydis decodes it at all). */
        if (in->operand_count_visible && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.value.u == 0) {
            set_fault(d, 0, false, 0);
            return FAULTS;
        }
        return GOOD;
    case ZYDIS_MNEMONIC_INT3:
        *d = (struct delivery){ .kind = DELIVER_TRAP, .vector = 3, .insn_len = in->length };
        return FAULTS;
    case ZYDIS_MNEMONIC_INT1:
        *d = (struct delivery){ .kind = DELIVER_TRAP, .vector = 1, .insn_len = in->length };
        return FAULTS;
    case ZYDIS_MNEMONIC_INTO:
        if (!(v->regs->rflags & RFLAGS_OF))
            return GOOD;
        *d = (struct delivery){ .kind = DELIVER_TRAP, .vector = 4, .insn_len = in->length };
        return FAULTS;
    case ZYDIS_MNEMONIC_INT:
        *d = (struct delivery){ .kind = DELIVER_SOFT, .vector = (uint8_t)ops[0].imm.value.u,
                                .insn_len = in->length };
        return FAULTS;
    case ZYDIS_MNEMONIC_CLI: case ZYDIS_MNEMONIC_STI:
        if ((s->cr0 & 1) && cpl > iopl) {
            set_fault(d, 13, true, 0);
            return FAULTS;
        }
        return GOOD;
    case ZYDIS_MNEMONIC_IN: case ZYDIS_MNEMONIC_OUT: case ZYDIS_MNEMONIC_INSB:
    case ZYDIS_MNEMONIC_INSW: case ZYDIS_MNEMONIC_INSD: case ZYDIS_MNEMONIC_OUTSB:
    case ZYDIS_MNEMONIC_OUTSW: case ZYDIS_MNEMONIC_OUTSD:
        return (s->cr0 & 1) && cpl > iopl ? UNSURE : GOOD;     /* the TSS's I/O bitmap decides */
    case ZYDIS_MNEMONIC_SYSCALL:
        if (!(s->efer & EFER_SCE)) {
            set_fault(d, 6, false, 0);
            return FAULTS;
        }
        return GOOD;
    case ZYDIS_MNEMONIC_XSAVE: case ZYDIS_MNEMONIC_XSAVE64: case ZYDIS_MNEMONIC_XSAVEC:
    case ZYDIS_MNEMONIC_XSAVEC64: case ZYDIS_MNEMONIC_XSAVEOPT: case ZYDIS_MNEMONIC_XSAVEOPT64:
    case ZYDIS_MNEMONIC_XSAVES: case ZYDIS_MNEMONIC_XSAVES64: case ZYDIS_MNEMONIC_XRSTOR:
    case ZYDIS_MNEMONIC_XRSTOR64: case ZYDIS_MNEMONIC_XRSTORS: case ZYDIS_MNEMONIC_XRSTORS64:
        return UNSURE;                  /* the size comes from XCR0 and the header */
    default:
        break;
    }
    if ((in->attributes & ZYDIS_ATTRIB_IS_PRIVILEGED) && cpl > 0) {
        set_fault(d, 13, true, 0);
        return FAULTS;
    }
    unsigned err;
    int vec = fault_segment_load(v, in, ops, &err);
    if (vec < 0)
        vec = far_branch_fault(v, in, ops, &err);
    if (vec >= 0) {
        set_fault(d, (unsigned)vec, true, err);
        return FAULTS;
    }
    /* Far transfers, segment loads, task and system registers: their descriptors decide. */
    if (segment_load(in, ops) || in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ||
        in->mnemonic == ZYDIS_MNEMONIC_AAM)
        return UNSURE;
    return GOOD;
}

/* #NM: x87 and SIMD instructions while CR0.TS (or x87 with CR0.EM). */
static int device_check(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                        struct delivery *d)
{
    uint64_t cr0 = v->sregs->cr0;
    if (!(cr0 & (CR0_TS | CR0_EM)))
        return GOOD;
    bool x87 = in->meta.isa_ext == ZYDIS_ISA_EXT_X87;
    bool simd = in->meta.exception_class != ZYDIS_EXCEPTION_CLASS_NONE ||
                in->meta.isa_ext == ZYDIS_ISA_EXT_MMX;
    if ((x87 || simd) && ((cr0 & CR0_TS) || (x87 && (cr0 & CR0_EM)))) {
        set_fault(d, 7, false, 0);
        return FAULTS;
    }
    return simd && (cr0 & CR0_EM) ? UNSURE : GOOD;
}

/* The instruction's own bytes: readable, executable at this privilege. */
static int fetch_check(const struct cpu_view *v, uint64_t lin, unsigned len, struct delivery *d)
{
    if (cpu_mode(v->sregs) == MODE_LONG64 && !cpu_canonical(v->sregs, lin))
        return UNSURE;
    return page_check(v, lin, len, false, true, d);
}

enum fault_verdict fault_predict(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                                 const ZydisDecodedOperand *ops, struct delivery *d)
{
    uint64_t rip = cpu_linear_ip(v->regs, v->sregs);
    memset(d, 0, sizeof(*d));
    if (!in) {
        /* The bytes could not be fetched (a #PF on the first page that is not there), or are no instruction. */
        int vec = cpu_undecodable_vector(v, rip);
        if (vec == 6 || vec == 13) {
            set_fault(d, (unsigned)vec, vec == 13, 0);
            return FAULT_YES;
        }
        return fetch_check(v, rip, ZYDIS_MAX_INSTRUCTION_LENGTH, d) == FAULTS ? FAULT_YES
                                                                              : FAULT_UNKNOWN;
    }
    int (*const checks[])(const struct cpu_view *, const ZydisDecodedInstruction *,
                          const ZydisDecodedOperand *, struct delivery *) = {
        opcode_check, memory_operands,
    };
    int c = fetch_check(v, rip, in->length, d);
    if (c == GOOD)
        c = device_check(v, in, d);
    for (unsigned i = 0; c == GOOD && i < sizeof(checks) / sizeof(checks[0]); i++)
        c = checks[i](v, in, ops, d);
    if (c == GOOD && (in->mnemonic == ZYDIS_MNEMONIC_DIV || in->mnemonic == ZYDIS_MNEMONIC_IDIV))
        c = divide_check(v, in, ops, d);
    if (c == GOOD && in->mnemonic == ZYDIS_MNEMONIC_BOUND)
        c = bound_check(v, in, ops, d);
    return c == GOOD ? FAULT_NONE : c == FAULTS ? FAULT_YES : FAULT_UNKNOWN;
}

enum fault_verdict fault_page(const struct cpu_view *v, uint64_t lin, uint64_t len, bool write,
                              struct delivery *d)
{
    int c = page_check(v, lin, len, write, false, d);
    return c == GOOD ? FAULT_NONE : c == FAULTS ? FAULT_YES : FAULT_UNKNOWN;
}

#define V(n) (1u << (n))

/* Instructions of these extensions exist on every x86-64 CPU: no #UD for want of a feature. */
static bool always_there(const ZydisDecodedInstruction *in)
{
    return in->meta.isa_ext == ZYDIS_ISA_EXT_BASE || in->meta.isa_ext == ZYDIS_ISA_EXT_LONGMODE ||
           in->meta.isa_ext == ZYDIS_ISA_EXT_X87;
}

/* The exceptions an opcode raises by itself: #DE, #BR, #OF, #BP, #UD. */
static uint32_t opcode_vectors(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_DIV: case ZYDIS_MNEMONIC_IDIV: case ZYDIS_MNEMONIC_AAM:
        return V(0);
    case ZYDIS_MNEMONIC_BOUND:
        return V(5);
    case ZYDIS_MNEMONIC_INTO:
        return V(4);
    case ZYDIS_MNEMONIC_INT3:
        return V(3);
    case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1: case ZYDIS_MNEMONIC_UD2:
    case ZYDIS_MNEMONIC_SYSCALL:                /* #UD without EFER.SCE, and nothing else */
        return V(6);
    case ZYDIS_MNEMONIC_MOV:
        return ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].reg.value == ZYDIS_REGISTER_CS ? V(6) : 0;
    /* An extended control register or PKRU ECX does not name: #GP (kvm-unit-tests' xsave). */
    case ZYDIS_MNEMONIC_XGETBV: case ZYDIS_MNEMONIC_XSETBV:
    case ZYDIS_MNEMONIC_RDPKRU: case ZYDIS_MNEMONIC_WRPKRU:
        return V(13);
    default:
        return 0;
    }
}

uint32_t fault_may_raise(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                         const ZydisDecodedOperand *ops)
{
    const struct kvm_sregs *s = v->sregs;
    struct delivery d;
    if (!in)
        return V(14) | V(6) | V(13);
    uint32_t m = 0;
    if (page_check(v, lin, in->length, false, true, &d) != GOOD)
        m |= V(14);                             /* the fetch */
    /* SYSCALL loads fixed selectors, checks no descriptor and touches no memory. */
    if (in->mnemonic == ZYDIS_MNEMONIC_SYSCALL)
        return m | V(6);
    const struct kvm_segment *cs = &s->cs;
    if (cpu_mode(s) != MODE_LONG64 && cpu_mode(s) != MODE_REAL16 && !(cs->base == 0 && cs->limit == 0xffffffff))
        m |= V(13);                             /* the code segment's limit */
    for (unsigned i = 0; i < in->operand_count; i++) {
        const ZydisDecodedOperand *o = &ops[i];
        if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.type == ZYDIS_MEMOP_TYPE_AGEN ||
            in->mnemonic == ZYDIS_MNEMONIC_NOP || in->meta.category == ZYDIS_CATEGORY_PREFETCH)
            continue;
        m |= V(o->mem.segment == ZYDIS_REGISTER_SS ? 12 : 13);
        if (s->cr0 & CR0_PG)
            m |= V(14);
        if (cpu_cpl(s) == 3 && (s->cr0 & CR0_AM) && (v->regs->rflags & RFLAGS_AC))
            m |= V(17);
    }
    /* A descriptor loaded: not present (#NP, #SS for the stack), not allowed (#GP). */
    if (segment_load(in, ops) || in->meta.category == ZYDIS_CATEGORY_SYSTEM)
        m |= V(13) | V(11) | V(12);
    /* ...and through a call or task gate, a task's state (#TS). */
    if (in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ||
        (in->meta.category == ZYDIS_CATEGORY_SYSCALL && in->mnemonic != ZYDIS_MNEMONIC_SYSCALL) ||
        in->meta.category == ZYDIS_CATEGORY_SYSRET || in->meta.category == ZYDIS_CATEGORY_INTERRUPT ||
        in->mnemonic == ZYDIS_MNEMONIC_IRET || in->mnemonic == ZYDIS_MNEMONIC_IRETD ||
        in->mnemonic == ZYDIS_MNEMONIC_IRETQ)
        m |= V(13) | V(11) | V(12) | V(10);
    if ((in->attributes & ZYDIS_ATTRIB_IS_PRIVILEGED) || in->mnemonic == ZYDIS_MNEMONIC_RDTSC ||
        in->mnemonic == ZYDIS_MNEMONIC_CLI || in->mnemonic == ZYDIS_MNEMONIC_STI ||
        in->mnemonic == ZYDIS_MNEMONIC_RDTSCP || in->mnemonic == ZYDIS_MNEMONIC_RDPMC ||
        in->meta.category == ZYDIS_CATEGORY_IO || in->meta.category == ZYDIS_CATEGORY_IOSTRINGOP ||
        in->mnemonic == ZYDIS_MNEMONIC_CMPXCHG16B)
        m |= V(13);
    m |= opcode_vectors(in, ops);
    if (in->meta.isa_ext == ZYDIS_ISA_EXT_X87 || in->meta.isa_ext == ZYDIS_ISA_EXT_MMX ||
        in->meta.exception_class != ZYDIS_EXCEPTION_CLASS_NONE)
        m |= V(7) | V(16) | V(19) | V(13);
    if (!always_there(in) || (in->attributes & (ZYDIS_ATTRIB_IS_PRIVILEGED | ZYDIS_ATTRIB_HAS_LOCK)))
        m |= V(6);
    if ((s->cr4 & CR4_CET) && (in->meta.category == ZYDIS_CATEGORY_RET ||
                                in->meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
                                in->meta.category == ZYDIS_CATEGORY_CALL))
        m |= V(21);
    /*
     * An event through a gate pushes its frame on the handler's stack,
     * which may fault (kvm-unit-tests' eventinj: int $33 through a gate
     * not present, its #NP onto a read-only stack, so #PF on an IST one).
     */
    if (in->meta.category == ZYDIS_CATEGORY_INTERRUPT && (s->cr0 & CR0_PG))
        m |= V(14);
    /* An exception on the way into the handler of another: #DF, or the second alone. */
    if (m & ~(V(14) | V(3) | V(4)))
        m |= V(8);
    return m;
}
