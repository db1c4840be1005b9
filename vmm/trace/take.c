/* SPDX-License-Identifier: MIT */
#include "trace/take.h"

#include <string.h>

#include "vbts/format.h"
#include "x86/deliver.h"
#include "x86/fault.h"

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

bool take_branch(const struct cpu_view *v, const struct branch_pred *p, struct kvm_regs *r)
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
    if (!cpu_ip_allowed(sr, ip))
        return false;
    for (unsigned i = 0; i < in.operand_count_visible; i++) {
        uint64_t ea;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM &&
            (cpu_operand_address(v, &in, &ops[i], &ea) < 0 || !mark(v, ea, in.operand_width / 8, false, &gpa)))
            return false;
    }
    uint64_t sp = r->rsp, ret = p->from + p->len - cs_base;
    if (p->kind == VBTS_KIND_CALL || p->kind == VBTS_KIND_CALL_IND) {
        sp = cpu_sp_add(sr, sp, -(int64_t)w);
        if (!mark(v, ss_base + sp, w, true, &gpa))
            return false;
        memcpy(gmem_ptr(v->mem, gpa, w), &ret, w);
    } else if (p->kind == VBTS_KIND_RET) {
        uint64_t imm = in.operand_count_visible && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE
                       ? ops[0].imm.value.u : 0;
        if (!mark(v, ss_base + sp, w, false, &gpa))
            return false;
        sp = cpu_sp_add(sr, sp, (int64_t)(w + imm));
    }
    r->rsp = sp;
    r->rip = (p->taken ? p->target : p->from + p->len) - cs_base;
    if (mode != MODE_LONG64)
        r->rip = (uint32_t)r->rip;
    return true;
}
