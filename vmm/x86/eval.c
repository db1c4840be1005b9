/* SPDX-License-Identifier: MIT */
#include "x86/eval.h"

#include <string.h>

#include "x86/cpu.h"

#define SP_BIT (1u << 4)

void eval_init(struct eval_regs *e, const struct kvm_regs *r)
{
    const uint64_t g[16] = { r->rax, r->rcx, r->rdx, r->rbx, r->rsp, r->rbp, r->rsi, r->rdi,
                             r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15 };
    memcpy(e->gpr, g, sizeof(g));
    e->rflags = r->rflags;
    e->unknown = 0;
    e->flags_unknown = 0;
}

/* Each register's general register (Zydis's order) and width: the planner asks for every operand it sees. */
static struct gpr_of {
    int8_t id;          /* -1: not a general register */
    uint8_t bits;
} gprs[ZYDIS_REGISTER_MAX_VALUE + 1];

/* Before main: a pthread_once per lookup cost the planner more than the lookup. */
__attribute__((constructor)) static void gprs_init(void)
{
    for (int r = 0; r <= ZYDIS_REGISTER_MAX_VALUE; r++) {
        ZydisRegisterClass c = ZydisRegisterGetClass((ZydisRegister)r);
        int id = ZydisRegisterGetId(ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, (ZydisRegister)r));
        bool gpr = c >= ZYDIS_REGCLASS_GPR8 && c <= ZYDIS_REGCLASS_GPR64 && id >= 0 && id < 16;
        gprs[r].id = (int8_t)(gpr ? id : -1);
        gprs[r].bits = (uint8_t)(gpr ? ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, (ZydisRegister)r) : 0);
    }
}

static const struct gpr_of *gpr_of(ZydisRegister r)
{
    static const struct gpr_of none = { -1, 0 };
    return (unsigned)r <= ZYDIS_REGISTER_MAX_VALUE ? &gprs[r] : &none;
}

static int gpr_id(ZydisRegister r)
{
    return gpr_of(r)->id;
}

uint32_t eval_gpr_bit(ZydisRegister r)
{
    int id = gpr_id(r);
    return id >= 0 ? 1u << id : 0;
}

uint32_t eval_gprs_written(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    /* Zydis leaves out what CMPS and SCAS do to RSI and RDI: every string instruction may move all three. */
    uint32_t m = in->meta.category == ZYDIS_CATEGORY_STRINGOP ? 1u << 1 | 1u << 6 | 1u << 7 : 0;
    for (unsigned i = 0; i < in->operand_count; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            m |= eval_gpr_bit(ops[i].reg.value);
    return m;
}

static bool high_byte(ZydisRegister r)
{
    return r == ZYDIS_REGISTER_AH || r == ZYDIS_REGISTER_CH || r == ZYDIS_REGISTER_DH || r == ZYDIS_REGISTER_BH;
}

static uint64_t mask(unsigned bits)
{
    return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

static uint64_t sext(uint64_t v, unsigned bits)
{
    return bits >= 64 ? v : (uint64_t)((int64_t)(v << (64 - bits)) >> (64 - bits));
}

bool eval_get(const struct eval_regs *e, ZydisRegister r, uint64_t *val)
{
    int id = gpr_id(r);
    if (id < 0 || (e->unknown & (1u << id)))
        return false;
    uint64_t g = e->gpr[id];
    *val = high_byte(r) ? (g >> 8) & 0xff : g & mask(gpr_of(r)->bits);
    return true;
}

/*
 * Write r into out as the CPU does: 32 bits zero the rest, 8 and 16 keep
 * it, so the register is known after only if it was before (in e).
 */
static void set(struct eval_regs *out, const struct eval_regs *e, ZydisRegister r, uint64_t val)
{
    int id = gpr_id(r);
    if (id < 0)
        return;
    unsigned bits = gpr_of(r)->bits;
    uint64_t *g = &out->gpr[id];
    if (bits == 64 || bits == 32)
        *g = val & mask(bits);
    else if (high_byte(r))
        *g = (*g & ~0xff00ull) | ((val & 0xff) << 8);
    else
        *g = (*g & ~mask(bits)) | (val & mask(bits));
    if (bits == 64 || bits == 32 || !(e->unknown & (1u << id)))
        out->unknown &= ~(1u << id);
}

/* An operand's value (a register's or memory's op->size bits): false if not known. */
static bool value(const ZydisDecodedOperand *op, const struct eval_regs *e, eval_load_fn load, void *ctx,
                  uint64_t *v)
{
    switch (op->type) {
    case ZYDIS_OPERAND_TYPE_REGISTER:
        return eval_get(e, op->reg.value, v);
    case ZYDIS_OPERAND_TYPE_IMMEDIATE:
        /* Sign-extended where it is signed: the destination's width cuts it (its size is the encoding's). */
        *v = op->imm.value.u;
        return true;
    case ZYDIS_OPERAND_TYPE_MEMORY:
        return op->mem.type == ZYDIS_MEMOP_TYPE_MEM && op->size && op->size <= 64 && load &&
               load(ctx, op, 0, op->size / 8, v);
    default:
        return false;
    }
}

/* LEA's address: base + index * scale + displacement, at the instruction's address width. */
static bool address(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op, uint64_t ip,
                    const struct eval_regs *e, uint64_t *a)
{
    uint64_t b = 0, x = 0;
    if (op->mem.base == ZYDIS_REGISTER_RIP || op->mem.base == ZYDIS_REGISTER_EIP)
        b = ip + in->length;
    else if (op->mem.base != ZYDIS_REGISTER_NONE && !eval_get(e, op->mem.base, &b))
        return false;
    if (op->mem.index != ZYDIS_REGISTER_NONE && !eval_get(e, op->mem.index, &x))
        return false;
    *a = (b + x * op->mem.scale + (uint64_t)op->mem.disp.value) & mask(in->address_width);
    return true;
}

static uint64_t szp(uint64_t r, unsigned bits)
{
    uint64_t f = 0;
    r &= mask(bits);
    if (r == 0)
        f |= RFLAGS_ZF;
    if ((r >> (bits - 1)) & 1)
        f |= RFLAGS_SF;
    if (!__builtin_parity((unsigned)(r & 0xff)))
        f |= RFLAGS_PF;
    return f;
}

/* a + b + c, or a - b - c: the result, and all six flags in *f. */
static uint64_t arith(uint64_t a, uint64_t b, unsigned c, bool sub, unsigned bits, uint64_t *f)
{
    a &= mask(bits);
    b &= mask(bits);
    unsigned __int128 wide = sub ? (unsigned __int128)a - b - c : (unsigned __int128)a + b + c;
    uint64_t r = (uint64_t)wide & mask(bits);
    *f = szp(r, bits);
    if ((uint64_t)(wide >> bits) & 1)
        *f |= RFLAGS_CF;
    if ((((sub ? (a ^ b) : ~(a ^ b)) & (a ^ r)) >> (bits - 1)) & 1)
        *f |= RFLAGS_OF;
    if ((a ^ b ^ r) & 0x10)
        *f |= RFLAGS_AF;
    return r;
}

/* SHL, SHR, SAR by c (1 <= c < bits): the result; CF, SF, ZF, PF, and OF where c is 1, in *f and *def. */
static uint64_t shift(ZydisMnemonic m, uint64_t a, unsigned c, unsigned bits, uint64_t *f, uint32_t *def)
{
    a &= mask(bits);
    uint64_t r, out;
    if (m == ZYDIS_MNEMONIC_SHL) {
        r = (a << c) & mask(bits);
        out = (a >> (bits - c)) & 1;
    } else {
        r = m == ZYDIS_MNEMONIC_SAR ? (uint64_t)((int64_t)sext(a, bits) >> c) & mask(bits) : a >> c;
        out = (a >> (c - 1)) & 1;
    }
    *f = szp(r, bits) | (out ? RFLAGS_CF : 0);
    *def = RFLAGS_CF | RFLAGS_SF | RFLAGS_ZF | RFLAGS_PF;
    if (c == 1) {
        *def |= RFLAGS_OF;
        bool of = m == ZYDIS_MNEMONIC_SHL ? (((r >> (bits - 1)) & 1) != out) :
                  m == ZYDIS_MNEMONIC_SHR ? ((a >> (bits - 1)) & 1) : false;
        *f |= of ? RFLAGS_OF : 0;
    }
    return r;
}

/* A condition code's value from e's flags: 1, 0, or -1 if a flag it tests is not known. */
static int cond(ZydisMnemonic m, const struct eval_regs *e)
{
    static const struct { ZydisMnemonic j, set, mov; uint32_t need; } codes[] = {
        { ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_SETO, ZYDIS_MNEMONIC_CMOVO, RFLAGS_OF },
        { ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_SETNO, ZYDIS_MNEMONIC_CMOVNO, RFLAGS_OF },
        { ZYDIS_MNEMONIC_JB, ZYDIS_MNEMONIC_SETB, ZYDIS_MNEMONIC_CMOVB, RFLAGS_CF },
        { ZYDIS_MNEMONIC_JNB, ZYDIS_MNEMONIC_SETNB, ZYDIS_MNEMONIC_CMOVNB, RFLAGS_CF },
        { ZYDIS_MNEMONIC_JZ, ZYDIS_MNEMONIC_SETZ, ZYDIS_MNEMONIC_CMOVZ, RFLAGS_ZF },
        { ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_CMOVNZ, RFLAGS_ZF },
        { ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_SETBE, ZYDIS_MNEMONIC_CMOVBE, RFLAGS_CF | RFLAGS_ZF },
        { ZYDIS_MNEMONIC_JNBE, ZYDIS_MNEMONIC_SETNBE, ZYDIS_MNEMONIC_CMOVNBE, RFLAGS_CF | RFLAGS_ZF },
        { ZYDIS_MNEMONIC_JS, ZYDIS_MNEMONIC_SETS, ZYDIS_MNEMONIC_CMOVS, RFLAGS_SF },
        { ZYDIS_MNEMONIC_JNS, ZYDIS_MNEMONIC_SETNS, ZYDIS_MNEMONIC_CMOVNS, RFLAGS_SF },
        { ZYDIS_MNEMONIC_JP, ZYDIS_MNEMONIC_SETP, ZYDIS_MNEMONIC_CMOVP, RFLAGS_PF },
        { ZYDIS_MNEMONIC_JNP, ZYDIS_MNEMONIC_SETNP, ZYDIS_MNEMONIC_CMOVNP, RFLAGS_PF },
        { ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_SETL, ZYDIS_MNEMONIC_CMOVL, RFLAGS_SF | RFLAGS_OF },
        { ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_SETNL, ZYDIS_MNEMONIC_CMOVNL, RFLAGS_SF | RFLAGS_OF },
        { ZYDIS_MNEMONIC_JLE, ZYDIS_MNEMONIC_SETLE, ZYDIS_MNEMONIC_CMOVLE, RFLAGS_ZF | RFLAGS_SF | RFLAGS_OF },
        { ZYDIS_MNEMONIC_JNLE, ZYDIS_MNEMONIC_SETNLE, ZYDIS_MNEMONIC_CMOVNLE, RFLAGS_ZF | RFLAGS_SF | RFLAGS_OF },
    };
    for (unsigned i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (m != codes[i].j && m != codes[i].set && m != codes[i].mov)
            continue;
        if (e->flags_unknown & codes[i].need)
            return -1;
        uint64_t f = e->rflags;
        bool cf = f & RFLAGS_CF, zf = f & RFLAGS_ZF, sf = f & RFLAGS_SF, of = f & RFLAGS_OF, pf = f & RFLAGS_PF;
        bool t[] = { of, !of, cf, !cf, zf, !zf, cf || zf, !cf && !zf, sf, !sf, pf, !pf,
                     sf != of, sf == of, zf || sf != of, !zf && sf == of };
        return t[i];
    }
    return -1;
}

int eval_cond(const ZydisDecodedInstruction *in, const struct eval_regs *e)
{
    uint64_t c;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_JCXZ: case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JRCXZ:
        if (e->unknown & eval_gpr_bit(ZYDIS_REGISTER_RCX))
            return -1;
        c = e->gpr[1] & mask(in->address_width);
        return c == 0;
    default:
        return in->meta.category == ZYDIS_CATEGORY_COND_BR ? cond(in->mnemonic, e) : -1;
    }
}

bool eval_bit_offset(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, const struct eval_regs *e,
                     int64_t *offset)
{
    *offset = 0;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_BT: case ZYDIS_MNEMONIC_BTS: case ZYDIS_MNEMONIC_BTR: case ZYDIS_MNEMONIC_BTC:
        break;
    default:
        return true;
    }
    if (ops[0].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER)
        return true;
    uint64_t bit;
    unsigned bits = ops[0].size;
    if (!eval_get(e, ops[1].reg.value, &bit) || (bits != 16 && bits != 32 && bits != 64))
        return false;
    /* The offset is signed, as wide as the operand: the unit is that many operands away. */
    int64_t units = (int64_t)sext(bit, bits) >> (bits == 16 ? 4 : bits == 32 ? 5 : 6);
    *offset = units * (int64_t)(bits / 8);
    return true;
}

/* BT and its kin: CF is the bit; BTS, BTR, BTC write the register they name. */
static bool bit_test(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, struct eval_regs *out,
                     const struct eval_regs *e, eval_load_fn load, void *ctx, uint64_t *f)
{
    uint64_t a, b;
    int64_t off;
    unsigned bits = ops[0].size;
    if (!value(&ops[1], e, NULL, NULL, &b) || !eval_bit_offset(in, ops, e, &off))
        return false;
    if (ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {
        if (ops[0].mem.type != ZYDIS_MEMOP_TYPE_MEM || !load || !load(ctx, &ops[0], off, bits / 8, &a))
            return false;
    } else if (!value(&ops[0], e, NULL, NULL, &a)) {
        return false;
    }
    unsigned n = (unsigned)(b & (bits - 1));
    *f = ((a >> n) & 1) ? RFLAGS_CF : 0;
    if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && in->mnemonic != ZYDIS_MNEMONIC_BT) {
        uint64_t r = in->mnemonic == ZYDIS_MNEMONIC_BTS ? a | (1ull << n) :
                     in->mnemonic == ZYDIS_MNEMONIC_BTR ? a & ~(1ull << n) : a ^ (1ull << n);
        set(out, e, ops[0].reg.value, r);
    }
    return true;
}

/* A move (or one that picks by a condition): 1 computed, 0 not, -1 not a move. */
static int move(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, uint64_t ip,
                const struct eval_regs *e, struct eval_regs *out, eval_load_fn load, void *ctx)
{
    const ZydisDecodedOperand *d = &ops[0], *s = &ops[1];
    unsigned bits;
    uint64_t a, b;
    int c;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_MOV:
        if (d->type != ZYDIS_OPERAND_TYPE_REGISTER || !value(s, e, load, ctx, &a))
            return 0;
        set(out, e, d->reg.value, a);
        return 1;
    case ZYDIS_MNEMONIC_MOVZX: case ZYDIS_MNEMONIC_MOVSX: case ZYDIS_MNEMONIC_MOVSXD:
        if (!value(s, e, load, ctx, &a))
            return 0;
        set(out, e, d->reg.value, in->mnemonic == ZYDIS_MNEMONIC_MOVZX ? a : sext(a, s->size));
        return 1;
    case ZYDIS_MNEMONIC_LEA:
        if (s->type != ZYDIS_OPERAND_TYPE_MEMORY || !address(in, s, ip, e, &a))
            return 0;
        set(out, e, d->reg.value, a);
        return 1;
    case ZYDIS_MNEMONIC_POP:
        /* Its stack slot is the hidden memory operand. */
        for (unsigned i = 1; i < in->operand_count; i++)
            if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && d->type == ZYDIS_OPERAND_TYPE_REGISTER &&
                value(&ops[i], e, load, ctx, &a)) {
                set(out, e, d->reg.value, a);
                return 1;
            }
        return 0;
    case ZYDIS_MNEMONIC_CDQE: case ZYDIS_MNEMONIC_CWDE:
        bits = in->operand_width;
        set(out, e, bits == 64 ? ZYDIS_REGISTER_RAX : ZYDIS_REGISTER_EAX, sext(e->gpr[0], bits / 2));
        return !(e->unknown & 1);
    case ZYDIS_MNEMONIC_CDQ: case ZYDIS_MNEMONIC_CQO:
        bits = in->operand_width;
        set(out, e, bits == 64 ? ZYDIS_REGISTER_RDX : ZYDIS_REGISTER_EDX,
            ((e->gpr[0] >> (bits - 1)) & 1) ? ~0ull : 0);
        return !(e->unknown & 1);
    case ZYDIS_MNEMONIC_SETO: case ZYDIS_MNEMONIC_SETNO: case ZYDIS_MNEMONIC_SETB: case ZYDIS_MNEMONIC_SETNB:
    case ZYDIS_MNEMONIC_SETZ: case ZYDIS_MNEMONIC_SETNZ: case ZYDIS_MNEMONIC_SETBE: case ZYDIS_MNEMONIC_SETNBE:
    case ZYDIS_MNEMONIC_SETS: case ZYDIS_MNEMONIC_SETNS: case ZYDIS_MNEMONIC_SETP: case ZYDIS_MNEMONIC_SETNP:
    case ZYDIS_MNEMONIC_SETL: case ZYDIS_MNEMONIC_SETNL: case ZYDIS_MNEMONIC_SETLE: case ZYDIS_MNEMONIC_SETNLE:
        if (d->type != ZYDIS_OPERAND_TYPE_REGISTER || (c = cond(in->mnemonic, e)) < 0)
            return 0;
        set(out, e, d->reg.value, (uint64_t)c);
        return 1;
    default:
        if (in->meta.category != ZYDIS_CATEGORY_CMOV)
            return -1;
        if (d->type != ZYDIS_OPERAND_TYPE_REGISTER || (c = cond(in->mnemonic, e)) < 0 ||
            !value(d, e, load, ctx, &a) || !value(s, e, load, ctx, &b))
            return 0;
        /* Not moved, a 32-bit destination is still zero-extended. */
        set(out, e, d->reg.value, c ? b : a);
        return 1;
    }
}

/*
 * What the instruction computes into out (its destination set, the flags
 * it defines in *f and *def); false where this does not know.
 */
static bool compute(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, uint64_t ip,
                    const struct eval_regs *e, struct eval_regs *out, uint64_t *f, uint32_t *def,
                    eval_load_fn load, void *ctx)
{
    const ZydisDecodedOperand *d = &ops[0], *s = &ops[1];
    unsigned bits = d->size;
    uint64_t a, b, r;
    int c = move(in, ops, ip, e, out, load, ctx);
    *def = 0;
    *f = 0;
    if (c >= 0)
        return c;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_ADD: case ZYDIS_MNEMONIC_SUB: case ZYDIS_MNEMONIC_CMP:
    case ZYDIS_MNEMONIC_ADC: case ZYDIS_MNEMONIC_SBB:
        c = 0;
        if (in->mnemonic == ZYDIS_MNEMONIC_ADC || in->mnemonic == ZYDIS_MNEMONIC_SBB) {
            if (e->flags_unknown & RFLAGS_CF)
                return false;
            c = (e->rflags & RFLAGS_CF) != 0;
        }
        if (!value(d, e, load, ctx, &a) || !value(s, e, load, ctx, &b))
            return false;
        r = arith(a, b, (unsigned)c, in->mnemonic != ZYDIS_MNEMONIC_ADD && in->mnemonic != ZYDIS_MNEMONIC_ADC,
                  bits, f);
        *def = EVAL_FLAGS;
        break;
    case ZYDIS_MNEMONIC_INC: case ZYDIS_MNEMONIC_DEC: case ZYDIS_MNEMONIC_NEG:
        if (!value(d, e, load, ctx, &a))
            return false;
        r = in->mnemonic == ZYDIS_MNEMONIC_NEG ? arith(0, a, 0, true, bits, f) :
            arith(a, 1, 0, in->mnemonic == ZYDIS_MNEMONIC_DEC, bits, f);
        *def = in->mnemonic == ZYDIS_MNEMONIC_NEG ? EVAL_FLAGS : EVAL_FLAGS & ~RFLAGS_CF;
        break;
    case ZYDIS_MNEMONIC_AND: case ZYDIS_MNEMONIC_OR: case ZYDIS_MNEMONIC_XOR: case ZYDIS_MNEMONIC_TEST:
        if (!value(d, e, load, ctx, &a) || !value(s, e, load, ctx, &b))
            return false;
        r = in->mnemonic == ZYDIS_MNEMONIC_OR ? a | b : in->mnemonic == ZYDIS_MNEMONIC_XOR ? a ^ b : a & b;
        *f = szp(r, bits);
        *def = RFLAGS_CF | RFLAGS_OF | RFLAGS_SF | RFLAGS_ZF | RFLAGS_PF;
        break;
    case ZYDIS_MNEMONIC_NOT:
        if (!value(d, e, load, ctx, &a))
            return false;
        r = ~a;
        break;
    case ZYDIS_MNEMONIC_IMUL: {
        /* The forms with a destination register: two operands, or three with an immediate. */
        unsigned vis = in->operand_count_visible;
        if (d->type != ZYDIS_OPERAND_TYPE_REGISTER || vis < 2 || !value(vis == 3 ? s : d, e, load, ctx, &a) ||
            !value(vis == 3 ? &ops[2] : s, e, load, ctx, &b))
            return false;
        __int128 full = (__int128)(int64_t)sext(a, bits) * (__int128)(int64_t)sext(b, bits);
        r = (uint64_t)full & mask(bits);
        *f = (__int128)(int64_t)sext(r, bits) != full ? RFLAGS_CF | RFLAGS_OF : 0;
        *def = RFLAGS_CF | RFLAGS_OF;
        break;
    }
    case ZYDIS_MNEMONIC_SHL: case ZYDIS_MNEMONIC_SHR: case ZYDIS_MNEMONIC_SAR:
        if (!value(d, e, load, ctx, &a) || !value(s, e, load, ctx, &b))
            return false;
        b &= bits == 64 ? 0x3f : 0x1f;
        if (b == 0 || b >= bits)
            return false;   /* no flags written, or CF undefined */
        r = shift(in->mnemonic, a, (unsigned)b, bits, f, def);
        break;
    case ZYDIS_MNEMONIC_BT: case ZYDIS_MNEMONIC_BTS: case ZYDIS_MNEMONIC_BTR: case ZYDIS_MNEMONIC_BTC:
        *def = RFLAGS_CF;
        return bit_test(in, ops, out, e, load, ctx, f);
    default:
        return false;
    }
    if (in->mnemonic != ZYDIS_MNEMONIC_CMP && in->mnemonic != ZYDIS_MNEMONIC_TEST &&
        d->type == ZYDIS_OPERAND_TYPE_REGISTER)
        set(out, e, d->reg.value, r);
    return true;
}

/* The flags the instruction writes, and those of them it leaves undefined (on any vendor's CPU). */
static uint32_t flags_written(const ZydisDecodedInstruction *in, uint32_t *undef)
{
    const ZydisAccessedFlags *fl = in->cpu_flags;
    uint32_t fw = fl ? (uint32_t)(fl->modified | fl->set_0 | fl->set_1 | fl->undefined) & EVAL_FLAGS : 0;
    *undef = fl ? (uint32_t)fl->undefined & EVAL_FLAGS : 0;
    /* Intel leaves ZF alone in a bit test, AMD leaves it undefined. */
    if (in->mnemonic == ZYDIS_MNEMONIC_BT || in->mnemonic == ZYDIS_MNEMONIC_BTS ||
        in->mnemonic == ZYDIS_MNEMONIC_BTR || in->mnemonic == ZYDIS_MNEMONIC_BTC) {
        fw |= RFLAGS_ZF;
        *undef |= RFLAGS_ZF;
    }
    return fw;
}

void eval_forget(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, struct eval_regs *e)
{
    uint32_t undef;
    e->unknown |= eval_gprs_written(in, ops) & ~SP_BIT;
    e->flags_unknown |= flags_written(in, &undef);
}

bool eval_insn(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, uint64_t ip,
               struct eval_regs *e, eval_load_fn load, void *ctx)
{
    uint32_t wr = eval_gprs_written(in, ops) & ~SP_BIT, undef;
    uint32_t fw = flags_written(in, &undef);
    if (!wr && !fw)
        return true;
    /* What it writes is unknown until computed: a destination this does not set stays so. */
    struct eval_regs out = *e;
    out.unknown |= wr;
    out.flags_unknown |= fw;
    uint64_t f;
    uint32_t def;
    if (!compute(in, ops, ip, e, &out, &f, &def, load, ctx)) {
        eval_forget(in, ops, e);
        return false;
    }
    def &= fw & ~undef;
    out.rflags = (out.rflags & ~(uint64_t)def) | (f & def);
    out.flags_unknown &= ~def;
    *e = out;
    return !(e->unknown & wr) && !(e->flags_unknown & fw & ~undef);
}
