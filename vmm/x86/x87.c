/* SPDX-License-Identifier: MIT */
/*
 * Completing x87 instructions on this CPU's own x87 unit (x86/x87.h).
 *
 * Each documented register form (D8-DF, ModRM C0-FF) and each memory form
 * with ModRM [rdi] has a stub of its own below: endbr64, the two bytes,
 * ret.  x87_run loads the guest's x87 state with FXRSTOR around the host's
 * (saved by FXSAVE in the same asm statement, so the compiler sees no
 * state change), calls the stub, and saves the result.  Neither FXSAVE nor
 * FXRSTOR waits for a pending x87 exception, and the stub's instruction
 * runs only when none is pending: an unmasked exception it raises is left
 * pending in the guest's state (ES), as on the guest's CPU, and never
 * reaches the host.
 */
#include "x86/x87.h"

#include <string.h>

#include "vbts/le.h"
#include "x86/fault.h"

__asm__(".pushsection .text.vbts_x87, \"ax\", @progbits\n"
        ".balign 8\n"
        ".globl vbts_x87_stubs\n"
        ".hidden vbts_x87_stubs\n"
        "vbts_x87_stubs:\n"
        ".set vbts_x87_i, 0\n"
        ".rept 512\n"
        ".byte 0xf3, 0x0f, 0x1e, 0xfa, 0xd8 + (vbts_x87_i >> 6), 0xc0 + (vbts_x87_i & 63), 0xc3, 0xcc\n"
        ".set vbts_x87_i, vbts_x87_i + 1\n"
        ".endr\n"
        ".set vbts_x87_i, 0\n"
        ".rept 64\n"
        ".byte 0xf3, 0x0f, 0x1e, 0xfa, 0xd8 + (vbts_x87_i >> 3), ((vbts_x87_i & 7) << 3) | 7, 0xc3, 0xcc\n"
        ".set vbts_x87_i, vbts_x87_i + 1\n"
        ".endr\n"
        ".popsection\n");
extern const char vbts_x87_stubs[] __attribute__((visibility("hidden")));

enum { STUB = 8, MEM_STUBS = 512 };

/* Register forms, by opcode: bit (ModRM - 0xc0) set where the form is documented and runs here. */
static bool reg_form(uint8_t opcode, uint8_t modrm)
{
    unsigned m = modrm - 0xc0u;
    switch (opcode) {
    case 0xd8: return true;                                         /* fadd .. fdivr st0, st(i) */
    case 0xd9: return m < 0x11 || (m >= 0x20 && m != 0x22 && m != 0x23 && m != 0x26 && m != 0x27 &&
                                   m != 0x2f);                     /* fld, fxch, fnop, fchs .. fcos */
    case 0xda: return modrm == 0xe9;                                /* fucompp (fcmov reads RFLAGS) */
    case 0xdb: return modrm == 0xe2 || modrm == 0xe3;              /* fnclex, fninit (fcomi writes RFLAGS) */
    case 0xdc: return m < 0x10 || m >= 0x20;                        /* fadd .. fdiv st(i), st0 */
    case 0xdd: return m < 0x08 || (m >= 0x10 && m < 0x30);         /* ffree, fst, fstp, fucom, fucomp */
    case 0xde: return m < 0x10 || modrm == 0xd9 || m >= 0x20;     /* faddp .. fdivp, fcompp */
    default: return false;                                          /* df: aliases, fnstsw ax, fcomip */
    }
}

/* Memory forms: operand bytes by opcode and ModRM.reg (0: not run here: fldenv, frstor, fnsave, fnstenv). */
static const uint8_t mem_size[8][8] = {
    { 4, 4, 4, 4, 4, 4, 4, 4 },             /* d8: fadd .. fdivr m32fp */
    { 4, 0, 4, 4, 0, 2, 0, 2 },             /* d9: fld, fst, fstp m32fp; fldcw, fnstcw */
    { 4, 4, 4, 4, 4, 4, 4, 4 },             /* da: fiadd .. fidivr m32int */
    { 4, 4, 4, 4, 0, 10, 0, 10 },           /* db: fild, fisttp, fist, fistp m32int; fld, fstp m80fp */
    { 8, 8, 8, 8, 8, 8, 8, 8 },             /* dc: fadd .. fdivr m64fp */
    { 8, 8, 8, 8, 0, 0, 0, 2 },             /* dd: fld, fisttp, fst, fstp m64; fnstsw */
    { 2, 2, 2, 2, 2, 2, 2, 2 },             /* de: fiadd .. fidivr m16int */
    { 2, 2, 2, 2, 10, 8, 10, 8 },           /* df: fild .. fistp m16int; fbld; fild m64; fbstp; fistp m64 */
};
static const uint8_t mem_store[8] = { 0, 0x8c, 0, 0x8e, 0, 0x8e, 0, 0xce };

bool x87_runnable(uint8_t opcode, uint8_t modrm, unsigned *size, bool *store)
{
    *size = 0;
    *store = false;
    if (opcode < 0xd8 || opcode > 0xdf)
        return false;
    if (modrm >= 0xc0)
        return reg_form(opcode, modrm);
    unsigned op = opcode - 0xd8u, reg = (modrm >> 3) & 7;
    *size = mem_size[op][reg];
    *store = (mem_store[op] >> reg) & 1;
    return *size != 0;
}

void x87_run(struct kvm_fpu *fpu, uint8_t opcode, uint8_t modrm, void *mem)
{
    _Alignas(16) uint8_t host[512], img[512];
    memset(img, 0, sizeof(img));
    vbts_put16(img, fpu->fcw);
    vbts_put16(img + 2, fpu->fsw);
    img[4] = fpu->ftwx;
    vbts_put32(img + 24, 0x1f80);           /* MXCSR: the reset value, so that FXRSTOR takes it */
    for (int i = 0; i < 8; i++)
        memcpy(img + 32 + 16 * i, fpu->fpr[i], 10);
    unsigned op = opcode - 0xd8u;
    const char *stub = vbts_x87_stubs + STUB * (modrm >= 0xc0 ? op * 64 + (modrm - 0xc0u)
                                                               : MEM_STUBS + op * 8 + ((modrm >> 3) & 7u));
    /* The stub's call must not land in the red zone the compiler may be using. */
    __asm__ volatile("fxsave64 %[host]\n\t"
                     "fxrstor64 %[img]\n\t"
                     "sub $128, %%rsp\n\t"
                     "call *%[stub]\n\t"
                     "add $128, %%rsp\n\t"
                     "fxsave64 %[img]\n\t"
                     "fxrstor64 %[host]"
                     : [host] "=m"(host), [img] "+m"(img)
                     : [stub] "r"(stub), "D"(mem)
                     : "memory", "cc");
    fpu->fcw = vbts_le16(img);
    fpu->fsw = vbts_le16(img + 2);
    fpu->ftwx = img[4];
    /* The stub's where the instruction set them (its FOP is never 0), else 0. */
    fpu->last_opcode = vbts_le16(img + 6);
    fpu->last_ip = vbts_le64(img + 8);
    fpu->last_dp = vbts_le64(img + 16);
    for (int i = 0; i < 8; i++)
        memcpy(fpu->fpr[i], img + 32 + 16 * i, 10);
}

/* The CPU's own walk for the operand: accessed bits, and dirty for a store. */
static void mark(const struct cpu_view *v, uint64_t ea, unsigned size, bool store)
{
    struct gmem_paging pg;
    uint64_t gpa;
    cpu_paging(v->sregs, &pg);
    gmem_walk_mark(v->mem, &pg, ea, store, &gpa);
    if ((ea ^ (ea + size - 1)) >> 12)
        gmem_walk_mark(v->mem, &pg, ea + size - 1, store, &gpa);
}

/* The memory operand: its address in *ea, read into buf unless a store; X87_DONE, or a #PF to raise. */
static enum x87_verdict operand(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                                const ZydisDecodedOperand *ops, unsigned size, bool store, uint8_t *buf,
                                uint64_t *ea, struct delivery *d)
{
    const ZydisDecodedOperand *m = NULL;
    for (unsigned i = 0; i < in->operand_count; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY)
            m = &ops[i];
    if (!m || cpu_operand_address(v, in, m, ea) < 0)
        return X87_NOT;
    switch (fault_page(v, *ea, size, store, d)) {
    case FAULT_YES:
        return X87_RAISE;
    case FAULT_UNKNOWN:
        return X87_NOT;
    default:
        return store || cpu_read_linear(v, *ea, buf, size) == 0 ? X87_DONE : X87_NOT;
    }
}

enum x87_verdict x87_emulate(const struct cpu_view *v, struct kvm_fpu *fpu, __u64 *rax, unsigned *len,
                             struct delivery *d)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_decode(v, cpu_linear_ip(v->regs, v->sregs), &in, ops, &why) < 0 ||
        in.opcode_map != ZYDIS_OPCODE_MAP_DEFAULT || in.opcode < 0xd8 || in.opcode > 0xdf ||
        (in.attributes & (ZYDIS_ATTRIB_HAS_LOCK | ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
                          ZYDIS_ATTRIB_HAS_REPNE | ZYDIS_ATTRIB_HAS_OPERANDSIZE)))
        return X87_NOT;
    uint8_t op = in.opcode, modrm = (uint8_t)(in.raw.modrm.mod << 6 | in.raw.modrm.reg << 3 | in.raw.modrm.rm);
    unsigned reg = in.raw.modrm.reg;
    *len = in.length;
    *d = (struct delivery){ .kind = DELIVER_FAULT };
    if (v->sregs->cr0 & 0xc) {              /* CR0.EM or TS: #NM before anything else */
        d->vector = 7;
        return X87_RAISE;
    }
    /* The no-wait forms (FN*) are the only ones that do not take a pending exception first. */
    bool nowait = (op == 0xdb && (modrm == 0xe2 || modrm == 0xe3)) || (op == 0xdf && modrm == 0xe0) ||
                  (modrm < 0xc0 && (op == 0xd9 || op == 0xdd) && reg == 7),
         fldcw = op == 0xd9 && modrm < 0xc0 && reg == 5;
    bool es = fpu->fsw & 0x80, unmasked = fpu->fsw & ~fpu->fcw & 0x3f;
    if ((es || unmasked) && !nowait) {
        /* #MF needs CR0.NE (else FERR#, a PC's IRQ 13); FLDCW's own behaviour under one is not sure. */
        if (!es || !(v->sregs->cr0 & (1u << 5)) || fldcw)
            return X87_NOT;
        d->vector = 16;
        return X87_RAISE;
    }
    if (op == 0xdf && modrm == 0xe0) {      /* fnstsw ax */
        *rax = (*rax & ~0xffffull) | fpu->fsw;
        return X87_DONE;
    }
    unsigned size;
    bool store;
    if (!x87_runnable(op, modrm, &size, &store))
        return X87_NOT;
    uint8_t buf[16] = { 0 };
    uint64_t ea = 0;
    enum x87_verdict r = size ? operand(v, &in, ops, size, store, buf, &ea, d) : X87_DONE;
    if (r != X87_DONE)
        return r;
    struct kvm_fpu after = *fpu;
    x87_run(&after, op, modrm, buf);
    if (store) {
        /* An unmasked exception can withhold the store: not worked out here. */
        if (after.fsw & 0x80)
            return X87_NOT;
        struct gmem_paging pg;
        uint64_t fault;
        cpu_paging(v->sregs, &pg);
        if (gmem_write_linear(v->mem, &pg, ea, buf, size, &fault) != GMEM_OK)
            return X87_NOT;
    }
    if (size)
        mark(v, ea, size, store);
    /* The pointers the instruction set are the stub's: they become the guest's RIP and operand. */
    bool init = op == 0xdb && modrm == 0xe3;
    after.last_opcode = init ? 0 : after.last_opcode ? (uint16_t)((op & 7) << 8 | modrm) : fpu->last_opcode;
    after.last_ip = init ? 0 : after.last_ip ? v->regs->rip : fpu->last_ip;
    after.last_dp = init ? 0 : after.last_dp ? ea : fpu->last_dp;
    *fpu = after;
    return X87_DONE;
}
