/* SPDX-License-Identifier: MIT */
#include "x86/cpu.h"

#include <Zydis/Zydis.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vbts/le.h"
#include "x86/pc.h"

void cpu_flat64_segment(struct kvm_segment *s, uint16_t sel, bool code, unsigned dpl)
{
    *s = (struct kvm_segment){ .base = 0, .limit = 0xffffffff, .selector = sel,
                               .type = code ? 0xb : 0x3, .present = 1, .dpl = (uint8_t)dpl, .s = 1,
                               .l = code, .db = !code, .g = 1 };
}

uint64_t cpu_code_base(const struct kvm_sregs *s)
{
    return cpu_mode(s) == MODE_LONG64 ? 0 : s->cs.base;
}

bool cpu_ip_allowed(const struct kvm_sregs *s, uint64_t ip)
{
    return cpu_mode(s) == MODE_LONG64 ? cpu_canonical(s, ip) : ip <= s->cs.limit;
}

uint64_t cpu_linear_ip(const struct kvm_regs *r, const struct kvm_sregs *s)
{
    switch (cpu_mode(s)) {
    case MODE_LONG64: return r->rip;
    case MODE_REAL16:
    case MODE_PROT16: return (uint32_t)(s->cs.base + (uint16_t)r->rip);
    default: return (uint32_t)(s->cs.base + (uint32_t)r->rip);
    }
}

uint64_t cpu_stack_base(const struct kvm_sregs *s)
{
    return cpu_mode(s) == MODE_LONG64 ? 0 : s->ss.base;
}

uint64_t cpu_stack_top(const struct kvm_regs *r, const struct kvm_sregs *s)
{
    if (cpu_mode(s) == MODE_LONG64)
        return r->rsp;
    return (uint32_t)(s->ss.base + (s->ss.db ? (uint32_t)r->rsp : (uint16_t)r->rsp));
}

int cpu_pushed_tf(const struct cpu_view *v, bool tf)
{
    uint64_t at = cpu_stack_top(v->regs, v->sregs) + 1, fault;
    if (cpu_mode(v->sregs) != MODE_LONG64)
        at = (uint32_t)at;
    struct gmem_paging pg;
    uint8_t b;
    cpu_paging(v->sregs, &pg);
    if (gmem_read_linear(v->mem, &pg, at, &b, 1) != GMEM_OK)
        return -1;
    uint8_t want = tf ? (uint8_t)(b | 1) : (uint8_t)(b & ~1);
    return want == b || gmem_write_linear(v->mem, &pg, at, &want, 1, &fault) == GMEM_OK ? 0 : -1;
}

unsigned cpu_stack_width(const struct kvm_sregs *s)
{
    if (cpu_mode(s) == MODE_LONG64)
        return 64;
    return s->ss.db ? 32 : 16;
}

bool cpu_fetch_touches(const struct cpu_view *v, uint64_t lin, uint64_t page)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    uint64_t last = lin + ZYDIS_MAX_INSTRUCTION_LENGTH - 1, gpa;
    if (cpu_mode(v->sregs) != MODE_LONG64)
        last = (uint32_t)last;
    if (gmem_translate(v->mem, &pg, lin, &gpa) == GMEM_OK && (gpa & ~0xfffull) == page)
        return true;
    return ((last ^ lin) & ~0xfffull) && gmem_translate(v->mem, &pg, last, &gpa) == GMEM_OK &&
           (gpa & ~0xfffull) == page;
}

static const ZydisDecoder *decoder_for(enum cpu_mode m)
{
    static ZydisDecoder dec[5];
    static bool ready;
    /* Initialisation is idempotent, so racing vCPU threads write the same bytes. */
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        ZydisDecoderInit(&dec[MODE_REAL16], ZYDIS_MACHINE_MODE_REAL_16, ZYDIS_STACK_WIDTH_16);
        ZydisDecoderInit(&dec[MODE_PROT16], ZYDIS_MACHINE_MODE_LEGACY_16, ZYDIS_STACK_WIDTH_16);
        ZydisDecoderInit(&dec[MODE_PROT32], ZYDIS_MACHINE_MODE_LEGACY_32, ZYDIS_STACK_WIDTH_32);
        ZydisDecoderInit(&dec[MODE_COMPAT32], ZYDIS_MACHINE_MODE_LONG_COMPAT_32, ZYDIS_STACK_WIDTH_32);
        ZydisDecoderInit(&dec[MODE_LONG64], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
        __atomic_store_n(&ready, true, __ATOMIC_RELEASE);
    }
    return &dec[m];
}

int cpu_read_linear(const struct cpu_view *v, uint64_t lin, void *buf, size_t len)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    return gmem_read_linear(v->mem, &pg, lin, buf, len) == GMEM_OK ? 0 : -1;
}

/* Instruction bytes may end at an unmapped page: fetch as many as exist. */
size_t cpu_fetch(const struct cpu_view *v, uint64_t lin, uint8_t *buf)
{
    size_t first = 4096 - (lin & 0xfff);
    if (first >= ZYDIS_MAX_INSTRUCTION_LENGTH)
        return cpu_read_linear(v, lin, buf, ZYDIS_MAX_INSTRUCTION_LENGTH) ? 0 : ZYDIS_MAX_INSTRUCTION_LENGTH;
    if (cpu_read_linear(v, lin, buf, first))
        return 0;
    if (cpu_read_linear(v, lin + first, buf + first, ZYDIS_MAX_INSTRUCTION_LENGTH - first))
        return first;
    return ZYDIS_MAX_INSTRUCTION_LENGTH;
}

/*
 * Decoded instructions by address, per thread: the branch engine plans
 * the same code at every stop, and where vbts itself runs under emulation
 * (the lab) Zydis is most of its time.  An entry holds only if its bytes
 * and mode are the ones fetched now.
 */
#define DECODE_CACHE 2048
struct decoded {
    uint64_t lin;
    uint8_t n, mode;
    unsigned epoch;         /* checked against the bytes in this gmem memo's epoch: they cannot change in it */
    uint8_t bytes[ZYDIS_MAX_INSTRUCTION_LENGTH];
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};
/* A thread's cache, made where it first decodes (the vCPUs'), freed as it ends. */
static __thread struct decoded *decoded;
static pthread_key_t decoded_key;
static pthread_once_t decoded_once = PTHREAD_ONCE_INIT;

static void decoded_key_init(void)
{
    if (pthread_key_create(&decoded_key, free) != 0)
        abort();
}

static struct decoded *decoded_entry(uint64_t lin)
{
    static __thread struct decoded one;     /* without memory for a cache: a cache of one */
    if (!decoded) {
        pthread_once(&decoded_once, decoded_key_init);
        decoded = calloc(DECODE_CACHE, sizeof(*decoded));
        if (!decoded || pthread_setspecific(decoded_key, decoded) != 0) {
            free(decoded);
            decoded = NULL;
            return &one;
        }
    }
    return &decoded[(lin ^ (lin >> 7)) % DECODE_CACHE];
}

/* The cache's entry for the instruction at lin, decoded there now; NULL with *why set. */
static const struct decoded *decode(const struct cpu_view *v, uint64_t lin, const char **why)
{
    enum cpu_mode mode = cpu_mode(v->sregs);
    struct decoded *d = decoded_entry(lin);
    unsigned epoch = gmem_memo_epoch();
    if (epoch && d->n && d->epoch == epoch && d->lin == lin && d->mode == (uint8_t)mode)
        return d;
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    size_t n = cpu_fetch(v, lin, buf);
    if (n == 0) {
        *why = "instruction bytes are not in guest RAM";
        return NULL;
    }
    if (d->n && d->lin == lin && d->n == n && d->mode == (uint8_t)mode && memcmp(d->bytes, buf, n) == 0) {
        d->epoch = epoch;
        return d;
    }
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(decoder_for(mode), buf, n, &in, ops))) {
        *why = "instruction does not decode";
        return NULL;
    }
    d->lin = lin;
    d->n = (uint8_t)n;
    d->mode = (uint8_t)mode;
    d->epoch = epoch;
    memcpy(d->bytes, buf, n);
    d->in = in;
    memcpy(d->ops, ops, sizeof(d->ops));
    return d;
}

int cpu_decode(const struct cpu_view *v, uint64_t lin, ZydisDecodedInstruction *in,
               ZydisDecodedOperand *ops, const char **why)
{
    const struct decoded *d = decode(v, lin, why);
    if (!d)
        return -1;
    /* The operands it has, and zeros after them, as Zydis leaves them. */
    unsigned k = d->in.operand_count;
    *in = d->in;
    memcpy(ops, d->ops, k * sizeof(d->ops[0]));
    memset(&ops[k], 0, (ZYDIS_MAX_OPERAND_COUNT - k) * sizeof(d->ops[0]));
    return 0;
}

int cpu_decode_ref(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction **in,
                   const ZydisDecodedOperand **ops, const char **why)
{
    const struct decoded *d = decode(v, lin, why);
    if (!d)
        return -1;
    *in = &d->in;
    *ops = d->ops;
    return 0;
}

int cpu_undecodable_vector(const struct cpu_view *v, uint64_t lin)
{
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    size_t n = cpu_fetch(v, lin, buf);
    if (n == 0)
        return 14;
    ZyanStatus st = ZydisDecoderDecodeFull(decoder_for(cpu_mode(v->sregs)), buf, n, &in, ops);
    if (ZYAN_SUCCESS(st))
        return -1;
    if (st == ZYDIS_STATUS_NO_MORE_DATA)
        return n < ZYDIS_MAX_INSTRUCTION_LENGTH ? 14 : 13;
    return st == ZYDIS_STATUS_INSTRUCTION_TOO_LONG ? 13 : 6;
}

bool cpu_rep_count(const struct cpu_view *v, const ZydisDecodedInstruction *in, uint64_t *n)
{
    if (!(in->attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)))
        return false;
    *n = v->regs->rcx;
    if (in->address_width == 32)
        *n = (uint32_t)*n;
    else if (in->address_width == 16)
        *n = (uint16_t)*n;
    return true;
}

bool cpu_store_below_sp(const ZydisDecodedOperand *op)
{
    return op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
           ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op->mem.base) == ZYDIS_REGISTER_RSP;
}

void cpu_stores(const struct cpu_view *v, uint64_t lin, uint64_t *lo, uint64_t *len)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    uint64_t l = ~0ull, h = 0;
    *len = 0;
    if (cpu_decode(v, lin, &in, ops, &why) < 0)
        return;
    for (unsigned i = 0; i < in.operand_count; i++) {
        uint64_t ea, n = ops[i].size / 8;
        if (ops[i].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[i].mem.type != ZYDIS_MEMOP_TYPE_MEM ||
            !(ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) || cpu_operand_address(v, &in, &ops[i], &ea) < 0)
            continue;
        uint64_t end = ea + n;
        if (cpu_store_below_sp(&ops[i])) {
            end = ea;
            ea -= 2 * n;
        }
        l = ea < l ? ea : l;
        h = end > h ? end : h;
    }
    if (h > l) {
        *lo = l;
        *len = h - l;
    }
}

int cpu_selector_base(const struct cpu_view *v, uint16_t sel, uint64_t *base)
{
    enum cpu_mode m = cpu_mode(v->sregs);
    if (m == MODE_REAL16) {
        *base = (uint64_t)sel << 4;
        return 0;
    }
    if (sel & 4)        /* LDT selectors: not modelled; nothing here uses them */
        return -1;
    uint32_t idx = sel & ~7u;
    if (idx + 7 > v->sregs->gdt.limit)
        return -1;
    uint8_t d[8];
    if (cpu_read_linear(v, v->sregs->gdt.base + idx, d, 8))
        return -1;
    bool is_long = d[6] & 0x20;
    if ((v->sregs->efer & EFER_LMA) && is_long)
        *base = 0;
    else
        *base = vbts_le16(d + 2) | (uint32_t)d[4] << 16 | (uint32_t)d[7] << 24;
    return 0;
}

int cpu_idt_handler(const struct cpu_view *v, unsigned vector, uint64_t *handler)
{
    const struct kvm_sregs *s = v->sregs;
    enum cpu_mode m = cpu_mode(s);
    if (m == MODE_REAL16) {
        uint8_t ivt[4];
        if ((uint64_t)vector * 4 + 3 > s->idt.limit || cpu_read_linear(v, s->idt.base + vector * 4, ivt, 4))
            return -1;
        *handler = ((uint64_t)vbts_le16(ivt + 2) << 4) + vbts_le16(ivt);
        return 0;
    }
    bool long_mode = s->efer & EFER_LMA;
    unsigned size = long_mode ? 16 : 8;
    uint8_t g[16];
    if ((uint64_t)vector * size + size - 1 > s->idt.limit || cpu_read_linear(v, s->idt.base + vector * size, g, size))
        return -1;
    if (!(g[5] & 0x80))
        return -1;                      /* not present */
    unsigned type = g[5] & 0xf;
    if (type == 5)
        return -1;                      /* task gate: not modelled */
    uint64_t off = vbts_le16(g) | (uint32_t)vbts_le16(g + 6) << 16;
    if (long_mode)
        off |= (uint64_t)vbts_le32(g + 8) << 32;
    uint64_t base = 0;
    if (!long_mode && cpu_selector_base(v, vbts_le16(g + 2), &base))
        return -1;
    *handler = long_mode ? off : (uint32_t)(base + off);
    return 0;
}

int cpu_far_destination(const struct cpu_view *v, uint16_t sel, uint64_t off, uint64_t *target,
                        int *vector)
{
    const struct kvm_sregs *s = v->sregs;
    if (cpu_mode(s) == MODE_REAL16) {
        *target = ((uint64_t)sel << 4) + (off & 0xffff);
        return 0;
    }
    if (sel & 4)
        return -1;
    uint32_t idx = sel & ~7u;
    if (idx == 0 || idx + 7 > s->gdt.limit) {
        *vector = 13;
        return 1;
    }
    uint8_t d[16];
    bool long_mode = s->efer & EFER_LMA;
    if (cpu_read_linear(v, s->gdt.base + idx, d, 8))
        return -1;
    if (d[5] & 0x10) {                          /* code or data */
        if (!(d[5] & 0x08)) {
            *vector = 13;
            return 1;
        }
        if (!(d[5] & 0x80)) {
            *vector = 11;
            return 1;
        }
        uint64_t base = (long_mode && (d[6] & 0x20)) ? 0
                        : (vbts_le16(d + 2) | (uint32_t)d[4] << 16 | (uint32_t)d[7] << 24);
        *target = base + off;
        return 0;
    }
    if ((d[5] & 0x0f) != 0x0c) {                /* a TSS or task gate: not followed here */
        unsigned type = d[5] & 0x0f;
        if (type == 0x5 || type == 0x9 || type == 0x1 || type == 0xb || type == 0x3)
            return -1;
        *vector = 13;
        return 1;
    }
    if (!(d[5] & 0x80)) {
        *vector = 11;
        return 1;
    }
    uint64_t goff = vbts_le16(d) | (uint32_t)vbts_le16(d + 6) << 16, base;
    if (long_mode) {
        if (idx + 15 > s->gdt.limit || cpu_read_linear(v, s->gdt.base + idx + 8, d + 8, 8))
            return -1;
        goff |= (uint64_t)(d[8] | d[9] << 8 | d[10] << 16 | (uint32_t)d[11] << 24) << 32;
    }
    if (cpu_selector_base(v, vbts_le16(d + 2), &base))
        return -1;
    *target = base + goff;
    return 0;
}

int cpu_idt_gate_dpl(const struct cpu_view *v, unsigned vector)
{
    const struct kvm_sregs *s = v->sregs;
    if (cpu_mode(s) == MODE_REAL16)
        return -1;
    unsigned size = (s->efer & EFER_LMA) ? 16 : 8;
    uint8_t g[8];
    if ((uint64_t)vector * size + size - 1 > s->idt.limit || cpu_read_linear(v, s->idt.base + vector * size, g, 8) ||
        !(g[5] & 0x80))
        return -1;
    return (g[5] >> 5) & 3;
}

int cpu_idt_gate_ist(const struct cpu_view *v, unsigned vector)
{
    const struct kvm_sregs *s = v->sregs;
    uint8_t g[8];
    if (cpu_mode(s) != MODE_LONG64 || (uint64_t)vector * 16 + 15 > s->idt.limit ||
        cpu_read_linear(v, s->idt.base + vector * 16, g, 8))
        return -1;
    return g[4] & 7;
}

/* Zydis numbers the general registers in encoding order: RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8... */
static uint64_t gpr(const struct kvm_regs *r, int id)
{
    switch (id & 15) {
    case 0: return r->rax;
    case 1: return r->rcx;
    case 2: return r->rdx;
    case 3: return r->rbx;
    case 4: return r->rsp;
    case 5: return r->rbp;
    case 6: return r->rsi;
    case 7: return r->rdi;
    case 8: return r->r8;
    case 9: return r->r9;
    case 10: return r->r10;
    case 11: return r->r11;
    case 12: return r->r12;
    case 13: return r->r13;
    case 14: return r->r14;
    default: return r->r15;
    }
}

int cpu_register(const struct kvm_regs *r, ZydisRegister reg, uint64_t *val)
{
    int id = ZydisRegisterGetId(reg);
    switch (ZydisRegisterGetClass(reg)) {
    case ZYDIS_REGCLASS_GPR64:
        *val = gpr(r, id);
        return 0;
    case ZYDIS_REGCLASS_GPR32:
        *val = (uint32_t)gpr(r, id);
        return 0;
    case ZYDIS_REGCLASS_GPR16:
        *val = (uint16_t)gpr(r, id);
        return 0;
    case ZYDIS_REGCLASS_GPR8:
        if (id < 0 || id >= 4)
            return -1;  /* AH..BH, SPL.. and R8B..: not asked for */
        *val = (uint8_t)gpr(r, id);
        return 0;
    default:
        break;
    }
    switch (reg) {
    case ZYDIS_REGISTER_RIP: *val = r->rip; return 0;
    case ZYDIS_REGISTER_EIP: *val = (uint32_t)r->rip; return 0;
    case ZYDIS_REGISTER_IP: *val = (uint16_t)r->rip; return 0;
    default: return -1;
    }
}

const struct kvm_segment *cpu_segment(const struct kvm_sregs *s, ZydisRegister r)
{
    switch (r) {
    case ZYDIS_REGISTER_ES: return &s->es;
    case ZYDIS_REGISTER_CS: return &s->cs;
    case ZYDIS_REGISTER_SS: return &s->ss;
    case ZYDIS_REGISTER_FS: return &s->fs;
    case ZYDIS_REGISTER_GS: return &s->gs;
    default: return &s->ds;
    }
}

int cpu_operand_address(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                        const ZydisDecodedOperand *op, uint64_t *lin)
{
    uint64_t b = 0, x = 0;
    ZydisRegister base = op->mem.base;
    if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
        return -1;
    /* Base, index times scale, displacement, at the address width (as ZydisCalcAbsoluteAddress, without its context's cost). */
    if (base == ZYDIS_REGISTER_RIP || base == ZYDIS_REGISTER_EIP || base == ZYDIS_REGISTER_IP)
        b = v->regs->rip + in->length;
    else if (base != ZYDIS_REGISTER_NONE && cpu_register(v->regs, base, &b) < 0)
        return -1;
    if (op->mem.index != ZYDIS_REGISTER_NONE && cpu_register(v->regs, op->mem.index, &x) < 0)
        return -1;
    uint64_t ea = b + x * op->mem.scale + (uint64_t)op->mem.disp.value;
    if (in->address_width < 64)
        ea &= (1ull << in->address_width) - 1;
    const struct kvm_segment *seg = cpu_segment(v->sregs, op->mem.segment);
    bool long64 = cpu_mode(v->sregs) == MODE_LONG64;
    if (!long64 || seg == &v->sregs->fs || seg == &v->sregs->gs)
        ea += seg->base;
    *lin = long64 ? ea : (uint32_t)ea;
    return 0;
}

/* The guest-physical address `lin` maps to, if on an interrupt controller's page; else 0. */
static uint64_t irqchip_gpa(const struct cpu_view *v, uint64_t lin)
{
    struct gmem_paging pg;
    struct gmem_access a;
    uint64_t gpa;
    cpu_paging(v->sregs, &pg);
    if (gmem_walk(v->mem, &pg, lin, &gpa, &a) != GMEM_OK)
        return 0;
    return (gpa & ~0xfffull) == LAPIC_BASE || (gpa & ~0xfffull) == IOAPIC_ADDR ? gpa : 0;
}

bool cpu_lin_irqchip(const struct cpu_view *v, uint64_t lin)
{
    return irqchip_gpa(v, lin) != 0;
}

enum cpu_irq cpu_irq_change(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                            const ZydisDecodedOperand *ops)
{
    uint32_t msr = (uint32_t)v->regs->rcx;
    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_WRMSR:
        if (msr == 0x808 || msr == 0x830 || msr == 0x83f)     /* x2APIC TPR, ICR, SELF IPI */
            return CPU_IRQ_RAISE;
        return msr >= 0x800 && msr <= 0x8ff ? CPU_IRQ_ANY : CPU_IRQ_NONE;
    case ZYDIS_MNEMONIC_OUT: case ZYDIS_MNEMONIC_OUTSB: case ZYDIS_MNEMONIC_OUTSW:
    case ZYDIS_MNEMONIC_OUTSD:
        return CPU_IRQ_ANY;     /* a device may raise its line (the PIC's EOI and mask too) */
    default:
        break;
    }
    for (unsigned i = 0; i < in->operand_count; i++) {
        uint64_t ea, gpa;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[i].reg.value == ZYDIS_REGISTER_CR8 &&
            (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
            return CPU_IRQ_RAISE;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM &&
            (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
            cpu_operand_address(v, in, &ops[i], &ea) == 0 && (gpa = irqchip_gpa(v, ea))) {
            /* The local APIC's TPR and ICR (low: the write that sends). */
            bool raise = (gpa & ~0xfffull) == LAPIC_BASE && ((gpa & 0xff0) == 0x080 || (gpa & 0xff0) == 0x300);
            return raise ? CPU_IRQ_RAISE : CPU_IRQ_ANY;
        }
    }
    return CPU_IRQ_NONE;
}
