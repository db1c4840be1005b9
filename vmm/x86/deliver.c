/* SPDX-License-Identifier: MIT */
#include "x86/deliver.h"

#include <string.h>

#include "vbts/le.h"
#include "x86/cpu.h"

#define RFLAGS_NT (1ull << 14)
#define RFLAGS_VM (1ull << 17)
#define RFLAGS_AC (1ull << 18)
#define CR0_WP    (1ull << 16)

bool deliver_has_error_code(unsigned v)
{
    return v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 || v == 29 || v == 30;
}

struct ctx {
    const struct gmem *mem;
    struct kvm_regs *r;
    struct kvm_sregs *s;
    struct gmem_paging pg;
    const char **why;
    bool untrap;            /* find_frame: clear TF in the frame it finds */
    bool dry;               /* deliver_would_fault: check the frame's stack, write nothing */
    uint32_t ext;           /* error codes' EXT bit: 1 but for INT n, INT3, INTO */
    int raise;              /* the fault the CPU raises on the way in, vector + 1 (0: refused) */
    uint32_t raise_err;
    uint64_t raise_cr2;
};

static int fail(struct ctx *c, const char *why)
{
    *c->why = why;
    return -1;
}

/* A fault on the way in the CPU raises, with its error code (deliver_nested delivers it). */
static int raise_on_way(struct ctx *c, unsigned vector, uint32_t error, const char *why)
{
    c->raise = (int)vector + 1;
    c->raise_err = error;
    return fail(c, why);
}

/* A selector's error code: its index and TI, and EXT. */
static uint32_t sel_error(const struct ctx *c, uint16_t sel)
{
    return (sel & 0xfffcu) | c->ext;
}

/* A gate's error code: its vector, IDT, and EXT. */
static uint32_t idt_error(const struct ctx *c, unsigned vec)
{
    return vec * 8 + 2 + c->ext;
}

static int read_lin(struct ctx *c, uint64_t lin, void *buf, size_t len)
{
    return gmem_read_linear(c->mem, &c->pg, lin, buf, len) == GMEM_OK ? 0 : -1;
}

/* A GDT descriptor (LDT selectors are not modelled). */
static int descriptor(struct ctx *c, uint16_t sel, uint8_t d[8])
{
    if (sel & 4)
        return fail(c, "an LDT selector (not modelled)");
    if ((sel & ~7u) == 0 || (sel & ~7u) + 7u > c->s->gdt.limit)
        return raise_on_way(c, 13, sel_error(c, sel), "a null or out-of-GDT selector (the CPU raises #GP)");
    if (read_lin(c, c->s->gdt.base + (sel & ~7u), d, 8))
        return fail(c, "the GDT is not readable");
    if (!(d[5] & 0x80))
        return raise_on_way(c, 11, sel_error(c, sel), "a segment that is not present (the CPU raises #NP)");
    return 0;
}

static unsigned desc_dpl(const uint8_t d[8])
{
    return (d[5] >> 5) & 3;
}

/* KVM's view of a segment loaded from descriptor d with selector sel. */
static void load_segment(struct kvm_segment *seg, uint16_t sel, const uint8_t d[8], bool long_mode)
{
    uint32_t limit = vbts_le16(d) | (uint32_t)(d[6] & 0xf) << 16;
    bool g = d[6] & 0x80;
    *seg = (struct kvm_segment){
        .base = (vbts_le16(d + 2) | (uint32_t)d[4] << 16 | (uint32_t)d[7] << 24),
        .limit = g ? limit << 12 | 0xfff : limit,
        .selector = sel, .type = d[5] & 0xf, .present = 1, .dpl = desc_dpl(d),
        .db = (d[6] >> 6) & 1, .s = (d[5] >> 4) & 1, .l = (d[6] >> 5) & 1, .g = g, .avl = (d[6] >> 4) & 1,
    };
    if (long_mode && seg->l)
        seg->base = 0;
}

/*
 * The frame's bytes must go to memory the new privilege may write.  The
 * CPU pushes its highest slot first: a frame within one page faults there
 * (CR2); one across pages is not modelled.
 */
static int write_frame(struct ctx *c, uint64_t lin, const uint8_t *frame, size_t len, unsigned slot, bool user)
{
    bool one_page = (lin >> 12) == ((lin + len - 1) >> 12);
    for (uint64_t a = lin; a < lin + len; a = (a | 0xfff) + 1) {
        uint64_t gpa;
        struct gmem_access acc;
        enum gmem_xlate w = gmem_walk(c->mem, &c->pg, a, &gpa, &acc);
        bool here = w == GMEM_OK && gmem_contains(c->mem, gpa, 1);
        bool writable = here && !((user && (!acc.user || !acc.write)) ||
                                  (!user && !acc.write && (c->s->cr0 & CR0_WP)));
        if (writable)
            continue;
        if (one_page && (w == GMEM_NOT_PRESENT || here)) {
            c->raise_cr2 = lin + len - slot;
            return raise_on_way(c, 14, (here ? 1u : 0u) | 2u | (user ? 4u : 0u),
                                here ? "the stack for the frame is not writable (the CPU raises #PF)"
                                     : "the stack for the frame is not mapped (the CPU raises #PF)");
        }
        return fail(c, "the stack for the frame is not mapped or not writable (across pages, or outside "
                    "RAM: not modelled)");
    }
    uint64_t fault;
    if (c->dry)
        return 0;
    if (gmem_write_linear(c->mem, &c->pg, lin, frame, len, &fault) != GMEM_OK)
        return fail(c, "the stack for the frame is not in guest RAM");
    return 0;
}

static uint64_t return_rip(const struct ctx *c, const struct delivery *d)
{
    bool after = d->kind == DELIVER_TRAP || d->kind == DELIVER_SOFT;
    return c->r->rip + (after ? d->insn_len : 0);
}

/* RFLAGS as the frame holds it: fault-class exceptions but #DB set RF. */
static uint64_t pushed_rflags(const struct ctx *c, const struct delivery *d)
{
    uint64_t f = c->r->rflags;
    if (d->kind == DELIVER_FAULT && d->vector != 1)
        f |= RFLAGS_RF;
    return f;
}

static void new_rflags(struct ctx *c, bool interrupt_gate)
{
    c->r->rflags &= ~(uint64_t)(RFLAGS_TF | RFLAGS_NT | RFLAGS_RF | RFLAGS_VM);
    if (interrupt_gate)
        c->r->rflags &= ~(uint64_t)RFLAGS_IF;
}

/* A gate's handler segment: present code, and a privilege the event may go to. */
static int handler_segment(struct ctx *c, uint16_t sel, uint8_t code[8], unsigned *new_cpl)
{
    if (descriptor(c, sel, code) < 0)
        return -1;
    if (!(code[5] & 0x10) || !(code[5] & 0x08))
        return raise_on_way(c, 13, sel_error(c, sel), "the gate's selector is not a code segment (the CPU raises #GP)");
    unsigned cpl = (unsigned)cpu_cpl(c->s);
    bool conforming = code[5] & 0x04;
    *new_cpl = conforming ? cpl : desc_dpl(code);
    if (*new_cpl > cpl)
        return raise_on_way(c, 13, sel_error(c, sel), "the handler is less privileged than the code it interrupts (#GP)");
    return 0;
}

static int deliver_long(struct ctx *c, const struct delivery *d, unsigned vec, uint64_t *handler)
{
    const struct kvm_sregs *s = c->s;
    uint8_t g[16], code[8];
    if ((uint64_t)vec * 16 + 15 > s->idt.limit)
        return raise_on_way(c, 13, idt_error(c, vec), "the vector is beyond the IDT (the CPU raises #GP)");
    if (read_lin(c, s->idt.base + vec * 16, g, 16))
        return fail(c, "the IDT is not readable");
    if (!(g[5] & 0x80))
        return raise_on_way(c, 11, idt_error(c, vec), "the IDT entry is not present (the CPU raises #NP)");
    unsigned type = g[5] & 0xf;
    if (type != 0xe && type != 0xf)
        return raise_on_way(c, 13, idt_error(c, vec), "the IDT entry is not a 64-bit interrupt or trap gate");
    unsigned cpl = (unsigned)cpu_cpl(s), new_cpl, ist = g[4] & 7;
    if (handler_segment(c, vbts_le16(g + 2), code, &new_cpl) < 0)
        return -1;
    if (!(code[6] & 0x20) || (code[6] & 0x40))     /* L, and not D with it */
        return raise_on_way(c, 13, sel_error(c, vbts_le16(g + 2)), "the handler's code segment is not 64-bit "
                            "(L clear, or L and D set: the CPU raises #GP)");
    uint64_t rsp = c->r->rsp, off = vbts_le16(g) | (uint64_t)vbts_le16(g + 6) << 16 |
                                    (uint64_t)vbts_le32(g + 8) << 32;
    if (ist || new_cpl < cpl) {
        unsigned slot = ist ? 36 + 8 * (ist - 1) : 4 + 8 * new_cpl;
        uint8_t t[8];
        if (slot + 7 > s->tr.limit || read_lin(c, s->tr.base + slot, t, 8))
            return fail(c, "the TSS's stack pointer is not readable");
        rsp = vbts_le64(t);
    }
    rsp &= ~0xfull;
    uint8_t frame[48];
    int n = 0;
    if (d->has_error)
        vbts_put64(frame + 8 * n++, d->error);
    vbts_put64(frame + 8 * n++, return_rip(c, d));
    vbts_put64(frame + 8 * n++, s->cs.selector);
    vbts_put64(frame + 8 * n++, pushed_rflags(c, d));
    vbts_put64(frame + 8 * n++, c->r->rsp);
    vbts_put64(frame + 8 * n++, s->ss.selector);
    rsp -= 8 * (uint64_t)n;
    if (write_frame(c, rsp, frame, 8 * (size_t)n, 8, false) < 0)
        return -1;
    c->r->rsp = rsp;
    c->r->rip = off;
    new_rflags(c, type == 0xe);
    load_segment(&c->s->cs, (uint16_t)((vbts_le16(g + 2) & ~3u) | new_cpl), code, true);
    if (new_cpl != cpl) {
        /* 64-bit mode loads a null SS with the new RPL on a privilege change. */
        c->s->ss = (struct kvm_segment){ .selector = (uint16_t)new_cpl, .limit = 0xffffffff,
                                         .type = 3, .present = 1, .dpl = (uint8_t)new_cpl,
                                         .db = 1, .s = 1, .g = 1 };
    }
    *handler = off;
    return 0;
}

/* Protected mode: the new stack from the TSS when the privilege changes. */
static int stack_for(struct ctx *c, unsigned cpl, unsigned new_cpl, struct kvm_segment *ss,
                     uint64_t *sp)
{
    *ss = c->s->ss;
    *sp = c->r->rsp;
    if (new_cpl == cpl)
        return 0;
    uint8_t t[8], sd[8];
    if (c->s->tr.limit < 8 + 8 * new_cpl + 1 || read_lin(c, c->s->tr.base + 4 + 8 * new_cpl, t, 8))
        return fail(c, "the TSS's stack is not readable");
    uint16_t sel = vbts_le16(t + 4);
    if (descriptor(c, sel, sd) < 0) {
        c->raise = 0;       /* the TSS's SS: #TS, not modelled */
        return -1;
    }
    load_segment(ss, sel, sd, false);
    *sp = vbts_le32(t);
    return 0;
}

static int deliver_prot(struct ctx *c, const struct delivery *d, unsigned vec, uint64_t *handler)
{
    const struct kvm_sregs *s = c->s;
    uint8_t g[8], code[8];
    if (c->r->rflags & RFLAGS_VM)
        return fail(c, "virtual-8086 mode (not modelled)");
    if ((uint64_t)vec * 8 + 7 > s->idt.limit)
        return raise_on_way(c, 13, idt_error(c, vec), "the vector is beyond the IDT (the CPU raises #GP)");
    if (read_lin(c, s->idt.base + vec * 8, g, 8))
        return fail(c, "the IDT is not readable");
    if (!(g[5] & 0x80))
        return raise_on_way(c, 11, idt_error(c, vec), "the IDT entry is not present (the CPU raises #NP)");
    unsigned type = g[5] & 0xf;
    if (type == 5)
        return fail(c, "the IDT entry is a task gate (not modelled)");
    if (type != 0xe && type != 0xf && type != 6 && type != 7)
        return raise_on_way(c, 13, idt_error(c, vec), "the IDT entry is not an interrupt or trap gate");
    unsigned cpl = (unsigned)cpu_cpl(s), new_cpl, w = (type & 8) ? 4 : 2;
    uint16_t sel = vbts_le16(g + 2);
    if (handler_segment(c, sel, code, &new_cpl) < 0)
        return -1;
    struct kvm_segment ss;
    uint64_t sp;
    if (stack_for(c, cpl, new_cpl, &ss, &sp) < 0)
        return -1;
    uint64_t v[6];
    int n = 0;
    if (d->has_error)
        v[n++] = d->error;
    v[n++] = return_rip(c, d);
    v[n++] = s->cs.selector;
    v[n++] = pushed_rflags(c, d);
    if (new_cpl != cpl) {
        v[n++] = c->r->rsp;
        v[n++] = s->ss.selector;
    }
    uint8_t frame[24];
    for (int i = 0; i < n; i++) {
        if (w == 4)
            vbts_put32(frame + 4 * i, (uint32_t)v[i]);
        else
            vbts_put16(frame + 2 * i, (uint16_t)v[i]);
    }
    uint64_t mask = ss.db ? 0xffffffffull : 0xffffull, len = (uint64_t)n * w;
    if ((ss.type & 4) || (sp & mask) < len || (sp & mask) - 1 > ss.limit)
        return fail(c, "the stack segment cannot take the frame (#SS, or an expand-down segment)");
    sp = (sp & ~mask) | (((sp & mask) - len) & mask);
    if (write_frame(c, (uint32_t)(ss.base + (sp & mask)), frame, len, w, false) < 0)
        return -1;
    uint32_t off = vbts_le16(g) | (w == 4 ? (uint32_t)vbts_le16(g + 6) << 16 : 0);
    c->r->rsp = sp;
    c->r->rip = off;
    new_rflags(c, !(type & 1));
    load_segment(&c->s->cs, (uint16_t)((sel & ~3u) | new_cpl), code, false);
    c->s->ss = ss;
    *handler = (uint32_t)(c->s->cs.base + off);
    return 0;
}

static int deliver_real(struct ctx *c, const struct delivery *d, unsigned vec, uint64_t *handler)
{
    uint8_t ivt[4];
    if ((uint64_t)vec * 4 + 3 > c->s->idt.limit || read_lin(c, c->s->idt.base + vec * 4, ivt, 4))
        return fail(c, "the vector is beyond the interrupt vector table");
    uint8_t frame[6];
    vbts_put16(frame, (uint16_t)return_rip(c, d));
    vbts_put16(frame + 2, c->s->cs.selector);
    vbts_put16(frame + 4, (uint16_t)c->r->rflags);
    uint16_t sp = (uint16_t)((uint16_t)c->r->rsp - 6);
    if ((uint16_t)c->r->rsp < 6)
        return fail(c, "the stack wraps (not modelled)");
    if (write_frame(c, c->s->ss.base + sp, frame, 6, 2, false) < 0)
        return -1;
    c->r->rsp = (c->r->rsp & ~0xffffull) | sp;
    c->r->rflags &= ~(uint64_t)(RFLAGS_IF | RFLAGS_TF | RFLAGS_AC);
    uint16_t seg = vbts_le16(ivt + 2), off = vbts_le16(ivt);
    c->s->cs.selector = seg;
    c->s->cs.base = (uint64_t)seg << 4;
    c->r->rip = off;
    *handler = ((uint64_t)seg << 4) + off;
    return 0;
}

/* ...and *nested, if not NULL, the fault the CPU raises instead when it fails so (vector 0xff: none). */
static int deliver(const struct gmem *mem, struct kvm_regs *r, struct kvm_sregs *s,
                   const struct delivery *d, uint64_t *handler, unsigned *vector,
                   const char **why, bool dry, struct delivery *nested)
{
    struct kvm_regs r0 = *r;
    struct kvm_sregs s0 = *s;
    struct ctx c = { .mem = mem, .r = r, .s = s, .why = why, .dry = dry };
    cpu_paging(s, &c.pg);
    struct delivery gp;
    unsigned vec = d->vector;
    enum cpu_mode m = cpu_mode(s);
    /* int n through a gate the caller may not use: #GP(vector * 8 + 2) instead. */
    if (d->kind == DELIVER_SOFT && m != MODE_REAL16) {
        uint8_t g[16];
        unsigned size = m == MODE_LONG64 || m == MODE_COMPAT32 ? 16 : 8;
        if ((uint64_t)vec * size + size - 1 <= s->idt.limit &&
            read_lin(&c, s->idt.base + vec * size, g, size) == 0 &&
            (unsigned)((g[5] >> 5) & 3) < (unsigned)cpu_cpl(s)) {
            gp = (struct delivery){ .kind = DELIVER_FAULT, .vector = 13, .has_error = true,
                                    .error = vec * 8 + 2 };
            d = &gp;
            vec = 13;
        }
    }
    c.ext = d->kind == DELIVER_SOFT || (d->kind == DELIVER_TRAP && d->vector != 1) ? 0 : 1;
    int rc;
    if (m == MODE_REAL16)
        rc = deliver_real(&c, d, vec, handler);
    else if (s->efer & EFER_LMA)
        rc = deliver_long(&c, d, vec, handler);
    else
        rc = deliver_prot(&c, d, vec, handler);
    if (rc < 0) {
        *r = r0;
        *s = s0;
        if (nested) {
            /* (an INT n made #GP and faulting again: not modelled) */
            bool raised = c.raise && d != &gp && m != MODE_REAL16;
            *nested = (struct delivery){ .kind = DELIVER_FAULT, .vector = raised ? (uint8_t)(c.raise - 1) : 0xff,
                                         .has_error = raised, .error = c.raise_err, .cr2 = c.raise_cr2 };
        }
        return -1;
    }
    if (vec == 14 && d->kind == DELIVER_FAULT)
        s->cr2 = d->cr2;
    *vector = vec;
    return 0;
}

int deliver_event(const struct gmem *mem, struct kvm_regs *r, struct kvm_sregs *s,
                  const struct delivery *d, uint64_t *handler, unsigned *vector,
                  const char **why)
{
    return deliver(mem, r, s, d, handler, vector, why, false, NULL);
}

bool deliver_raises(const struct gmem *mem, const struct kvm_regs *r, const struct kvm_sregs *s,
                    const struct delivery *d)
{
    struct kvm_regs rr = *r;
    struct kvm_sregs ss = *s;
    struct delivery next;
    uint64_t h;
    unsigned vec;
    const char *why;
    return deliver(mem, &rr, &ss, d, &h, &vec, &why, true, &next) < 0 && next.vector != 0xff;
}

static bool contributory(const struct delivery *d)
{
    return d->kind == DELIVER_FAULT && (d->vector == 0 || (d->vector >= 10 && d->vector <= 13));
}

int deliver_nested(const struct gmem *mem, struct kvm_regs *r, struct kvm_sregs *s,
                   const struct delivery *d, uint64_t *handler, unsigned *vector,
                   const char **why)
{
    struct delivery cur = *d, next;
    uint64_t cr2 = s->cr2;
    for (int depth = 0; depth < 3; depth++) {
        if (deliver(mem, r, s, &cur, handler, vector, why, false, &next) == 0)
            return 0;
        if (next.vector == 0xff)
            break;
        if (next.vector == 14)
            s->cr2 = next.cr2;      /* as the #PF is raised, whether or not its delivery faults */
        /* SDM vol. 3 table 6-5: which pairs make a double fault, and a fault in #DF's delivery a shutdown */
        bool harmful = next.vector == 14 || contributory(&next);
        bool pf = cur.kind == DELIVER_FAULT && cur.vector == 14;
        if (cur.kind == DELIVER_FAULT && cur.vector == 8 && harmful) {
            *why = "a fault while delivering #DF: the CPU shuts down";
            s->cr2 = cr2;
            return -2;
        }
        if ((contributory(&cur) && contributory(&next)) || (pf && harmful))
            next = (struct delivery){ .kind = DELIVER_FAULT, .vector = 8, .has_error = true };
        cur = next;
        if (depth == 2)
            *why = "faults nested three deep on the way in (not modelled)";
    }
    s->cr2 = cr2;
    return -1;
}

bool deliver_would_fault(const struct gmem *mem, const struct kvm_regs *r, const struct kvm_sregs *s,
                         unsigned vector, const char **why)
{
    struct kvm_regs rr = *r;
    struct kvm_sregs ss = *s;
    struct delivery d = { .kind = DELIVER_FAULT, .vector = (uint8_t)vector,
                          .has_error = cpu_mode(s) != MODE_REAL16 && deliver_has_error_code(vector) };
    uint64_t h;
    unsigned vec;
    return deliver(mem, &rr, &ss, &d, &h, &vec, why, true, NULL) < 0;
}

/* IF, IOPL, NT, VM, AC, VIF, VIP, ID: flags only a few instructions change (deliver_before). */
#define SYSTEM_FLAGS 0x3e7200ull

/* A frame of `slot` bytes per field with RIP, CS and RFLAGS at `at` and up. */
static bool frame_at(struct ctx *c, uint64_t at, unsigned slot, const struct deliver_before *b)
{
    uint8_t f[24];
    if ((b->wrote_len && at < b->wrote + b->wrote_len && b->wrote < at + 3 * slot) ||
        (b->guest_frame && at == b->guest_frame) || read_lin(c, at, f, 3 * slot))
        return false;
    uint64_t rip = slot == 8 ? vbts_le64(f) : slot == 4 ? vbts_le32(f) : vbts_le16(f);
    uint64_t cs = slot == 8 ? vbts_le64(f + 8) : slot == 4 ? vbts_le32(f + 4) : vbts_le16(f + 2);
    uint64_t fl = slot == 8 ? vbts_le64(f + 16) : slot == 4 ? vbts_le32(f + 8) : vbts_le16(f + 4);
    /* An RFLAGS image has bit 1 set and the reserved bits (3, 5, 15, 22 and up) clear. */
    uint64_t reserved = slot == 2 ? 0x8028 : 0xffffffffffc08028ull;
    bool ours = (fl & RFLAGS_TF) && (fl & 2) && !(fl & reserved) && (uint16_t)cs == b->sregs->cs.selector &&
                (rip == b->regs->rip || rip == b->next_rip);
    uint64_t kept = rip == b->regs->rip && b->fault_flags_exact ? ~(uint64_t)(RFLAGS_RF | RFLAGS_TF)
                    : rip == b->next_rip && b->trap_flags_kept ? SYSTEM_FLAGS : 0;
    if (slot == 2)
        kept &= 0xffff;
    ours = ours && !((fl ^ b->regs->rflags) & kept);
    if (ours && c->untrap) {
        /* TF is in the image's second byte, whatever the slot's width. */
        uint8_t hi = f[2 * slot + 1] & (uint8_t)~1;
        uint64_t fault;
        gmem_write_linear(c->mem, &c->pg, at + 2 * slot + 1, &hi, 1, &fault);
    }
    return ours;
}

static bool find_frame(const struct gmem *mem, const struct deliver_before *b, bool untrap)
{
    struct kvm_regs r = *b->regs;
    struct kvm_sregs s = *b->sregs;
    const char *why;
    struct ctx c = { .mem = mem, .r = &r, .s = &s, .why = &why, .untrap = untrap };
    cpu_paging(&s, &c.pg);
    enum cpu_mode m = cpu_mode(&s);
    int cpl = cpu_cpl(&s);
    if (m == MODE_REAL16)
        return frame_at(&c, s.ss.base + (uint16_t)(r.rsp - 6), 2, b);
    uint8_t t[8];
    if (s.efer & EFER_LMA) {
        /* The stacks a 64-bit IDT may switch to: this one (CPL0), RSP0, IST1-7. */
        uint64_t tops[9];
        int n = 0;
        if (cpl == 0)
            tops[n++] = r.rsp;
        for (unsigned slot = 4; slot <= 84; slot += 8) {
            if (slot == 12 || slot == 20 || slot == 28)
                continue;               /* RSP1, RSP2 and the reserved field */
            if (slot + 7 <= s.tr.limit && !read_lin(&c, s.tr.base + slot, t, 8) && vbts_le64(t))
                tops[n++] = vbts_le64(t);
        }
        for (int i = 0; i < n; i++)
            if (frame_at(&c, (tops[i] & ~0xfull) - 40, 8, b))
                return true;
        return false;
    }
    if (cpl == 0)
        return frame_at(&c, (uint32_t)(s.ss.base + (uint32_t)r.rsp - 12), 4, b);
    if (s.tr.limit >= 11 && !read_lin(&c, s.tr.base + 4, t, 8))
        return frame_at(&c, (uint32_t)(vbts_le32(t) - 20), 4, b);
    return false;
}

bool deliver_seen(const struct gmem *mem, const struct deliver_before *b)
{
    return find_frame(mem, b, false);
}

bool deliver_untrap(const struct gmem *mem, const struct deliver_before *b)
{
    return find_frame(mem, b, true);
}

int deliver_segment(const struct gmem *mem, const struct kvm_sregs *s, uint16_t sel,
                    struct kvm_segment *seg, const char **why)
{
    struct kvm_regs r = { 0 };
    struct kvm_sregs cs = *s;
    struct ctx c = { .mem = mem, .r = &r, .s = &cs, .why = why };
    cpu_paging(s, &c.pg);
    uint8_t d[8];
    if (descriptor(&c, sel, d) < 0)
        return -1;
    load_segment(seg, sel, d, s->efer & EFER_LMA);
    seg->type |= 1;     /* accessed: the CPU sets it as it loads the register */
    return 0;
}

int deliver_syscall(struct kvm_regs *r, struct kvm_sregs *s, const struct deliver_syscall_msrs *m,
                    uint8_t insn_len, const char **why)
{
    if (!(s->efer & EFER_SCE)) {
        *why = "SYSCALL with EFER.SCE clear raises #UD";
        return -1;
    }
    enum cpu_mode mode = cpu_mode(s);
    if (mode != MODE_LONG64 && !(mode == MODE_COMPAT32 && m->compat_cstar)) {
        *why = mode == MODE_COMPAT32 ? "SYSCALL in compatibility mode raises #UD on this vendor (not modelled)"
                                     : "SYSCALL outside long mode is not modelled";
        return -1;
    }
    uint16_t sel = (uint16_t)(m->star >> 32) & 0xfffc;
    r->rcx = mode == MODE_LONG64 ? r->rip + insn_len : (uint32_t)(r->rip + insn_len);
    r->r11 = r->rflags & ~(uint64_t)RFLAGS_RF;
    r->rflags = (r->rflags & ~m->fmask & ~(uint64_t)RFLAGS_RF) | 2;
    r->rip = mode == MODE_LONG64 ? m->lstar : m->cstar;
    cpu_flat64_segment(&s->cs, sel, true, 0);
    cpu_flat64_segment(&s->ss, (uint16_t)(sel + 8), false, 0);
    return 0;
}
