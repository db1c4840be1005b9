/* SPDX-License-Identifier: MIT */
#include "x86/rep.h"

#include <string.h>

#include "x86/fault.h"

#define PAGE      4096ull

static bool flat(const struct kvm_segment *s)
{
    return s->base == 0 && s->limit == 0xffffffffu;
}

/* Elements of `size` bytes from `lin` on, up or down, that stay inside its page. */
static uint64_t in_page(uint64_t lin, unsigned size, bool down)
{
    uint64_t off = lin & (PAGE - 1);
    if (off + size > PAGE)
        return 0;               /* straddles two pages: the CPU's business */
    return down ? off / size + 1 : (PAGE - off) / size;
}

/* A register as an address-size-wide counter: 16-bit keeps the rest, 32-bit clears it. */
static uint64_t set_width(uint64_t old, uint64_t val, unsigned width)
{
    if (width == 16)
        return (old & ~0xffffull) | (val & 0xffff);
    return width == 32 ? (uint32_t)val : val;
}

/* Host memory for [lin, lin+len) of one page, if the CPU would access it without a fault. */
static uint8_t *plain(const struct cpu_view *v, uint64_t lin, uint64_t len, bool write)
{
    struct delivery d;
    if (fault_page(v, lin, len, write, &d) != FAULT_NONE)
        return NULL;
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    uint64_t gpa;
    if (gmem_translate(v->mem, &pg, lin, &gpa) != GMEM_OK)
        return NULL;
    uint8_t *p = gmem_ptr(v->mem, gpa, len);
    if (p)
        gmem_walk_mark(v->mem, &pg, lin, write, &gpa);
    return p;
}

static void store(uint8_t *dst, uint64_t val, unsigned size, uint64_t n)
{
    uint8_t e[8];
    for (unsigned i = 0; i < 8; i++)
        e[i] = (uint8_t)(val >> (8 * i));
    if (size == 1) {
        memset(dst, e[0], n);
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        memcpy(dst + i * size, e, size);
}

/* Element by element in the CPU's order, so that overlapping copies come out as on the CPU. */
static void move(uint8_t *dst, const uint8_t *src, unsigned size, uint64_t n, bool down)
{
    uint64_t len = n * size;
    if (dst + len <= src || src + len <= dst) {
        memcpy(dst, src, len);
        return;
    }
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = down ? n - 1 - k : k;
        memmove(dst + i * size, src + i * size, size);
    }
}

static const ZydisDecodedOperand *memory_operand(const ZydisDecodedInstruction *in,
                                                 const ZydisDecodedOperand *ops, bool write)
{
    for (unsigned i = 0; i < in->operand_count; i++) {
        const ZydisDecodedOperand *op = &ops[i];
        /* Under REP both are conditional: a zero count touches nothing. */
        bool w = op->actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE);
        bool r = op->actions & (ZYDIS_OPERAND_ACTION_READ | ZYDIS_OPERAND_ACTION_CONDREAD);
        if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && w == write && (write || r))
            return op;
    }
    return NULL;
}

uint64_t rep_run(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                 const ZydisDecodedOperand *ops, struct kvm_regs *r)
{
    ZydisMnemonic m = in->mnemonic;
    bool stos = m == ZYDIS_MNEMONIC_STOSB || m == ZYDIS_MNEMONIC_STOSW ||
                m == ZYDIS_MNEMONIC_STOSD || m == ZYDIS_MNEMONIC_STOSQ;
    bool movs = m == ZYDIS_MNEMONIC_MOVSB || m == ZYDIS_MNEMONIC_MOVSW ||
                m == ZYDIS_MNEMONIC_MOVSD || m == ZYDIS_MNEMONIC_MOVSQ;
    if ((!stos && !movs) || !(in->attributes & ZYDIS_ATTRIB_HAS_REP) || v->regs != r)
        return 0;
    const ZydisDecodedOperand *dop = memory_operand(in, ops, true);
    const ZydisDecodedOperand *sop = movs ? memory_operand(in, ops, false) : NULL;
    if (!dop || (movs && !sop))
        return 0;
    /* Outside 64-bit mode only flat segments: their limits are then no concern. */
    if (cpu_mode(v->sregs) != MODE_LONG64 &&
        (!flat(&v->sregs->es) || (sop && !flat(cpu_segment(v->sregs, sop->mem.segment)))))
        return 0;
    unsigned size = in->operand_width / 8, aw = in->address_width;
    uint64_t amask = aw == 64 ? ~0ull : aw == 32 ? 0xffffffffull : 0xffffull;
    bool down = r->rflags & RFLAGS_DF;
    uint64_t done = 0;
    for (;;) {
        uint64_t count = r->rcx & amask, dlin, slin = 0;
        if (!count || cpu_operand_address(v, in, dop, &dlin) < 0 ||
            (sop && cpu_operand_address(v, in, sop, &slin) < 0))
            break;
        uint64_t n = in_page(dlin, size, down);
        if (sop && in_page(slin, size, down) < n)
            n = in_page(slin, size, down);
        if (n > count)
            n = count;
        if (!n)
            break;
        uint64_t len = n * size;
        uint64_t dlo = down ? dlin - (n - 1) * size : dlin, slo = down ? slin - (n - 1) * size : slin;
        const uint8_t *src = sop ? plain(v, slo, len, false) : NULL;
        uint8_t *dst = (!sop || src) ? plain(v, dlo, len, true) : NULL;
        if (!dst)
            break;
        if (stos)
            store(dst, r->rax, size, n);
        else
            move(dst, src, size, n, down);
        uint64_t delta = down ? -len : len;
        r->rdi = set_width(r->rdi, r->rdi + delta, aw);
        if (sop)
            r->rsi = set_width(r->rsi, r->rsi + delta, aw);
        r->rcx = set_width(r->rcx, count - n, aw);
        done += n;
    }
    if (done && !(r->rcx & amask))
        r->rip = cpu_mode(v->sregs) == MODE_LONG64 ? r->rip + in->length
                                                   : (uint32_t)(r->rip + in->length);
    return done;
}
