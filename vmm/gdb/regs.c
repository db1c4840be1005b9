/* SPDX-License-Identifier: MIT */
#include "gdb/regs.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum kind { GPR, RIP, EFLAGS, SEG, ST, FCTRL, FSTAT, FTAG, FISEG, FIOFF, FOSEG, FOOFF, FOP,
            XMM, MXCSR, BASE, CR, EFER };
enum feature { CORE, SSE, SEGMENTS, SYS };

struct reg {
    const char *name;
    unsigned char bits;
    enum kind kind;
    unsigned char index;    /* GPR: kvm_regs slot; SEG, ST, XMM, BASE, CR: which */
    const char *type;
    enum feature feature;
};

/* kvm_regs in its own order: rax rbx rcx rdx rsi rdi rsp rbp r8..r15 rip rflags. */
enum { RAX, RBX, RCX, RDX, RSI, RDI, RSP, RBP, R8 };

#define SEGS(w)                                                                              \
    { "cs", 32, SEG, 0, "int32", CORE }, { "ss", 32, SEG, 1, "int32", CORE },               \
    { "ds", 32, SEG, 2, "int32", CORE }, { "es", 32, SEG, 3, "int32", CORE },               \
    { "fs", 32, SEG, 4, "int32", CORE }, { "gs", 32, SEG, 5, "int32", CORE }
#define X87                                                                                  \
    { "st0", 80, ST, 0, "i387_ext", CORE }, { "st1", 80, ST, 1, "i387_ext", CORE },         \
    { "st2", 80, ST, 2, "i387_ext", CORE }, { "st3", 80, ST, 3, "i387_ext", CORE },         \
    { "st4", 80, ST, 4, "i387_ext", CORE }, { "st5", 80, ST, 5, "i387_ext", CORE },         \
    { "st6", 80, ST, 6, "i387_ext", CORE }, { "st7", 80, ST, 7, "i387_ext", CORE },         \
    { "fctrl", 32, FCTRL, 0, "int", CORE }, { "fstat", 32, FSTAT, 0, "int", CORE },         \
    { "ftag", 32, FTAG, 0, "int", CORE }, { "fiseg", 32, FISEG, 0, "int", CORE },           \
    { "fioff", 32, FIOFF, 0, "int", CORE }, { "foseg", 32, FOSEG, 0, "int", CORE },         \
    { "fooff", 32, FOOFF, 0, "int", CORE }, { "fop", 32, FOP, 0, "int", CORE }
#define XMMS(n) { "xmm" #n, 128, XMM, n, "vec128", SSE }

static const struct reg regs64[] = {
    { "rax", 64, GPR, RAX, "int64", CORE }, { "rbx", 64, GPR, RBX, "int64", CORE },
    { "rcx", 64, GPR, RCX, "int64", CORE }, { "rdx", 64, GPR, RDX, "int64", CORE },
    { "rsi", 64, GPR, RSI, "int64", CORE }, { "rdi", 64, GPR, RDI, "int64", CORE },
    { "rbp", 64, GPR, RBP, "data_ptr", CORE }, { "rsp", 64, GPR, RSP, "data_ptr", CORE },
    { "r8", 64, GPR, R8 + 0, "int64", CORE }, { "r9", 64, GPR, R8 + 1, "int64", CORE },
    { "r10", 64, GPR, R8 + 2, "int64", CORE }, { "r11", 64, GPR, R8 + 3, "int64", CORE },
    { "r12", 64, GPR, R8 + 4, "int64", CORE }, { "r13", 64, GPR, R8 + 5, "int64", CORE },
    { "r14", 64, GPR, R8 + 6, "int64", CORE }, { "r15", 64, GPR, R8 + 7, "int64", CORE },
    { "rip", 64, RIP, 0, "code_ptr", CORE }, { "eflags", 32, EFLAGS, 0, "i386_eflags", CORE },
    SEGS(64), X87,
    XMMS(0), XMMS(1), XMMS(2), XMMS(3), XMMS(4), XMMS(5), XMMS(6), XMMS(7),
    XMMS(8), XMMS(9), XMMS(10), XMMS(11), XMMS(12), XMMS(13), XMMS(14), XMMS(15),
    { "mxcsr", 32, MXCSR, 0, "i386_mxcsr", SSE },
    { "fs_base", 64, BASE, 0, "int", SEGMENTS }, { "gs_base", 64, BASE, 1, "int", SEGMENTS },
    { "cr0", 64, CR, 0, "int64", SYS }, { "cr2", 64, CR, 2, "int64", SYS },
    { "cr3", 64, CR, 3, "int64", SYS }, { "cr4", 64, CR, 4, "int64", SYS },
    { "cr8", 64, CR, 8, "int64", SYS }, { "efer", 64, EFER, 0, "int64", SYS },
};

static const struct reg regs32[] = {
    { "eax", 32, GPR, RAX, "int32", CORE }, { "ecx", 32, GPR, RCX, "int32", CORE },
    { "edx", 32, GPR, RDX, "int32", CORE }, { "ebx", 32, GPR, RBX, "int32", CORE },
    { "esp", 32, GPR, RSP, "data_ptr", CORE }, { "ebp", 32, GPR, RBP, "data_ptr", CORE },
    { "esi", 32, GPR, RSI, "int32", CORE }, { "edi", 32, GPR, RDI, "int32", CORE },
    { "eip", 32, RIP, 0, "code_ptr", CORE }, { "eflags", 32, EFLAGS, 0, "i386_eflags", CORE },
    SEGS(32), X87,
    XMMS(0), XMMS(1), XMMS(2), XMMS(3), XMMS(4), XMMS(5), XMMS(6), XMMS(7),
    { "mxcsr", 32, MXCSR, 0, "i386_mxcsr", SSE },
    { "cr0", 32, CR, 0, "int32", SYS }, { "cr2", 32, CR, 2, "int32", SYS },
    { "cr3", 32, CR, 3, "int32", SYS }, { "cr4", 32, CR, 4, "int32", SYS },
    { "efer", 64, EFER, 0, "int64", SYS },
};

static const struct reg *table(enum regs_arch a, int *n)
{
    if (a == REGS_I386) {
        *n = (int)(sizeof(regs32) / sizeof(regs32[0]));
        return regs32;
    }
    *n = (int)(sizeof(regs64) / sizeof(regs64[0]));
    return regs64;
}

int regs_count(enum regs_arch a)
{
    int n;
    table(a, &n);
    return n;
}

size_t regs_size(enum regs_arch a, int n)
{
    int count;
    const struct reg *t = table(a, &count);
    return n >= 0 && n < count ? t[n].bits / 8 : 0;
}

/* --- the target description ------------------------------------------------ */

static const char *const feature_name[] = {
    "org.gnu.gdb.i386.core", "org.gnu.gdb.i386.sse", "org.gnu.gdb.i386.segments",
    "org.vbts.x86.sys",
};

/* The types gdb's own x86 descriptions use for EFLAGS, MXCSR and the xmm registers. */
static const char eflags_type[] =
    "<flags id=\"i386_eflags\" size=\"4\">"
    "<field name=\"CF\" start=\"0\" end=\"0\"/><field name=\"\" start=\"1\" end=\"1\"/>"
    "<field name=\"PF\" start=\"2\" end=\"2\"/><field name=\"AF\" start=\"4\" end=\"4\"/>"
    "<field name=\"ZF\" start=\"6\" end=\"6\"/><field name=\"SF\" start=\"7\" end=\"7\"/>"
    "<field name=\"TF\" start=\"8\" end=\"8\"/><field name=\"IF\" start=\"9\" end=\"9\"/>"
    "<field name=\"DF\" start=\"10\" end=\"10\"/><field name=\"OF\" start=\"11\" end=\"11\"/>"
    "<field name=\"NT\" start=\"14\" end=\"14\"/><field name=\"RF\" start=\"16\" end=\"16\"/>"
    "<field name=\"VM\" start=\"17\" end=\"17\"/><field name=\"AC\" start=\"18\" end=\"18\"/>"
    "<field name=\"VIF\" start=\"19\" end=\"19\"/><field name=\"VIP\" start=\"20\" end=\"20\"/>"
    "<field name=\"ID\" start=\"21\" end=\"21\"/></flags>\n";
static const char sse_types[] =
    "<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>"
    "<vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>"
    "<vector id=\"v16i8\" type=\"int8\" count=\"16\"/>"
    "<vector id=\"v8i16\" type=\"int16\" count=\"8\"/>"
    "<vector id=\"v4i32\" type=\"int32\" count=\"4\"/>"
    "<vector id=\"v2i64\" type=\"int64\" count=\"2\"/>"
    "<union id=\"vec128\"><field name=\"v4_float\" type=\"v4f\"/>"
    "<field name=\"v2_double\" type=\"v2d\"/><field name=\"v16_int8\" type=\"v16i8\"/>"
    "<field name=\"v8_int16\" type=\"v8i16\"/><field name=\"v4_int32\" type=\"v4i32\"/>"
    "<field name=\"v2_int64\" type=\"v2i64\"/><field name=\"uint128\" type=\"uint128\"/></union>"
    "<flags id=\"i386_mxcsr\" size=\"4\">"
    "<field name=\"IE\" start=\"0\" end=\"0\"/><field name=\"DE\" start=\"1\" end=\"1\"/>"
    "<field name=\"ZE\" start=\"2\" end=\"2\"/><field name=\"OE\" start=\"3\" end=\"3\"/>"
    "<field name=\"UE\" start=\"4\" end=\"4\"/><field name=\"PE\" start=\"5\" end=\"5\"/>"
    "<field name=\"DAZ\" start=\"6\" end=\"6\"/><field name=\"IM\" start=\"7\" end=\"7\"/>"
    "<field name=\"DM\" start=\"8\" end=\"8\"/><field name=\"ZM\" start=\"9\" end=\"9\"/>"
    "<field name=\"OM\" start=\"10\" end=\"10\"/><field name=\"UM\" start=\"11\" end=\"11\"/>"
    "<field name=\"PM\" start=\"12\" end=\"12\"/><field name=\"FZ\" start=\"15\" end=\"15\"/>"
    "</flags>\n";

static char xml64[16384], xml32[16384];
static size_t xml64_len, xml32_len;
static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static size_t build_xml(enum regs_arch a, char *out, size_t cap)
{
    int count;
    const struct reg *t = table(a, &count);
    size_t n = (size_t)snprintf(out, cap,
                                "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
                                "<target version=\"1.0\">\n<architecture>%s</architecture>\n",
                                a == REGS_I386 ? "i386" : "i386:x86-64");
    for (int f = CORE; f <= SYS; f++) {
        bool any = false;
        for (int i = 0; i < count; i++)
            any |= t[i].feature == (enum feature)f;
        if (!any)
            continue;
        n += (size_t)snprintf(out + n, cap - n, "<feature name=\"%s\">\n%s", feature_name[f],
                              f == CORE ? eflags_type : f == SSE ? sse_types : "");
        for (int i = 0; i < count; i++)
            if (t[i].feature == (enum feature)f)
                n += (size_t)snprintf(out + n, cap - n,
                                      "<reg name=\"%s\" bitsize=\"%u\" type=\"%s\" regnum=\"%d\"%s/>\n",
                                      t[i].name, t[i].bits, t[i].type, i,
                                      t[i].kind >= FCTRL && t[i].kind <= FOP ? " group=\"float\""
                                      : t[i].kind == MXCSR ? " group=\"vector\"" : "");
        n += (size_t)snprintf(out + n, cap - n, "</feature>\n");
    }
    n += (size_t)snprintf(out + n, cap - n, "</target>\n");
    return n;
}

static void build_all(void)
{
    xml64_len = build_xml(REGS_X86_64, xml64, sizeof(xml64));
    xml32_len = build_xml(REGS_I386, xml32, sizeof(xml32));
}

const char *regs_target_xml(enum regs_arch a, size_t *len)
{
    pthread_once(&xml_once, build_all);
    *len = a == REGS_I386 ? xml32_len : xml64_len;
    return a == REGS_I386 ? xml32 : xml64;
}

/* --- values ------------------------------------------------------------------ */

static uint64_t *gpr(struct kvm_regs *r, int i)
{
    uint64_t *slots[] = { (uint64_t *)&r->rax, (uint64_t *)&r->rbx, (uint64_t *)&r->rcx,
                          (uint64_t *)&r->rdx, (uint64_t *)&r->rsi, (uint64_t *)&r->rdi,
                          (uint64_t *)&r->rsp, (uint64_t *)&r->rbp, (uint64_t *)&r->r8,
                          (uint64_t *)&r->r9, (uint64_t *)&r->r10, (uint64_t *)&r->r11,
                          (uint64_t *)&r->r12, (uint64_t *)&r->r13, (uint64_t *)&r->r14,
                          (uint64_t *)&r->r15 };
    return slots[i];
}

static struct kvm_segment *seg(struct kvm_sregs *s, int i)
{
    struct kvm_segment *segs[] = { &s->cs, &s->ss, &s->ds, &s->es, &s->fs, &s->gs };
    return segs[i];
}

static uint64_t *cr(struct kvm_sregs *s, int i)
{
    switch (i) {
    case 0: return (uint64_t *)&s->cr0;
    case 2: return (uint64_t *)&s->cr2;
    case 3: return (uint64_t *)&s->cr3;
    case 4: return (uint64_t *)&s->cr4;
    default: return (uint64_t *)&s->cr8;
    }
}

/*
 * KVM keeps FXSAVE's abridged tag byte (a bit per physical register: in
 * use); gdb shows the full tag word, two bits each: valid, zero, special,
 * empty, the last three read off the register's value.
 */
static unsigned full_tag(const struct kvm_fpu *f)
{
    unsigned top = (f->fsw >> 11) & 7, tag = 0;
    for (unsigned phys = 0; phys < 8; phys++) {
        unsigned t = 3;
        if (f->ftwx & (1u << phys)) {
            const uint8_t *v = f->fpr[(phys - top) & 7];
            unsigned exp = (v[9] & 0x7f) << 8 | v[8];
            uint64_t mant;
            memcpy(&mant, v, 8);
            if (exp == 0x7fff)
                t = 2;
            else if (exp == 0)
                t = mant ? 2 : 1;
            else
                t = (mant >> 63) ? 0 : 2;
        }
        tag |= t << (2 * phys);
    }
    return tag;
}

static void put(uint8_t *out, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(const uint8_t *in, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        v |= (uint64_t)in[i] << (8 * i);
    return v;
}

/*
 * The x86-64 layout outside 64-bit code: the general registers and RIP as
 * that code has them, 32 bits (QEMU's gdbstub does the same).
 */
static bool narrow(enum regs_arch a, const struct regs_state *s)
{
    return a == REGS_X86_64 && !s->sregs.cs.l;
}

size_t regs_read(enum regs_arch a, const struct regs_state *cs, int n, uint8_t *out)
{
    int count;
    const struct reg *t = table(a, &count);
    if (n < 0 || n >= count)
        return 0;
    struct regs_state *s = (struct regs_state *)cs;  /* the accessors serve both ways */
    const struct reg *r = &t[n];
    size_t size = r->bits / 8;
    uint64_t v = 0, low = narrow(a, s) ? 0xffffffffull : ~0ull;
    switch (r->kind) {
    case GPR: v = *gpr(&s->regs, r->index) & low; break;
    case RIP: v = s->regs.rip & low; break;
    case EFLAGS: v = s->regs.rflags; break;
    case SEG: v = seg(&s->sregs, r->index)->selector; break;
    case ST: memcpy(out, s->fpu.fpr[r->index], 10); return size;
    case FCTRL: v = s->fpu.fcw; break;
    case FSTAT: v = s->fpu.fsw; break;
    case FTAG: v = full_tag(&s->fpu); break;
    case FISEG: case FOSEG: v = 0; break;   /* KVM's FXSAVE image has no selectors */
    case FIOFF: v = s->fpu.last_ip; break;
    case FOOFF: v = s->fpu.last_dp; break;
    case FOP: v = s->fpu.last_opcode; break;
    case XMM: memcpy(out, s->fpu.xmm[r->index], 16); return size;
    case MXCSR: v = s->fpu.mxcsr; break;
    case BASE: v = seg(&s->sregs, 4 + r->index)->base; break;
    case CR: v = *cr(&s->sregs, r->index); break;
    case EFER: v = s->sregs.efer; break;
    }
    put(out, v, size);
    return size;
}

int regs_write(enum regs_arch a, struct regs_state *s, int n, const uint8_t *in, size_t len,
               unsigned *changed)
{
    int count;
    const struct reg *t = table(a, &count);
    if (n < 0 || n >= count || len != t[n].bits / 8)
        return -1;
    const struct reg *r = &t[n];
    uint8_t old[REGS_MAX_BYTES];
    regs_read(a, s, n, old);
    if (!memcmp(old, in, len))
        return 0;
    uint64_t v = get(in, len);
    /* A 32-bit value's write keeps the upper half, as the CPU's 32-bit code does. */
    uint64_t keep = len < 8 ? ~0ull << (8 * len) : 0;
    if (narrow(a, s) && (r->kind == GPR || r->kind == RIP)) {
        keep = ~0xffffffffull;
        v &= 0xffffffffull;
    }
    switch (r->kind) {
    case GPR: {
        uint64_t *p = gpr(&s->regs, r->index);
        *p = (*p & keep) | v;
        *changed |= REGS_CHANGED_REGS;
        return 0;
    }
    case RIP: s->regs.rip = (s->regs.rip & keep) | v; *changed |= REGS_CHANGED_REGS; return 0;
    case EFLAGS:
        /* Bit 1 is always set; the rest are the guest's. */
        s->regs.rflags = (s->regs.rflags & ~0xffffffffull) | v | 2;
        *changed |= REGS_CHANGED_REGS;
        return 0;
    case ST: memcpy(s->fpu.fpr[r->index], in, 10); break;
    case FCTRL: s->fpu.fcw = (uint16_t)v; break;
    case FSTAT: s->fpu.fsw = (uint16_t)v; break;
    case FTAG: {
        uint8_t ab = 0;
        for (unsigned phys = 0; phys < 8; phys++)
            if (((v >> (2 * phys)) & 3) != 3)
                ab |= (uint8_t)(1u << phys);
        s->fpu.ftwx = ab;
        break;
    }
    case FIOFF: s->fpu.last_ip = v; break;
    case FOOFF: s->fpu.last_dp = v; break;
    case FOP: s->fpu.last_opcode = (uint16_t)v; break;
    case XMM: memcpy(s->fpu.xmm[r->index], in, 16); break;
    case MXCSR: s->fpu.mxcsr = (uint32_t)v; break;
    case BASE:
        seg(&s->sregs, 4 + r->index)->base = v;
        *changed |= REGS_CHANGED_SREGS;
        return 0;
    default:
        return -1;              /* selectors, control registers, EFER */
    }
    *changed |= REGS_CHANGED_FPU;
    return 0;
}
