/* SPDX-License-Identifier: MIT */
#include "trace/ustep.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "trace/engine.h"
#include "trace/step.h"
#include "trace/window.h"
#include "vbts/le.h"
#include "x86/debug.h"
#include "x86/deliver.h"
#include "x86/event.h"

#define VEC_DB 1

bool ustep_can(const struct cpu_view *v, const struct branch_pred *p)
{
    uint64_t h;
    if (!(v->sregs->efer & EFER_LMA) || cpu_idt_handler(v, VEC_DB, &h) < 0)
        return false;
    if (cpu_cpl(v->sregs) == 3)
        return p->mnemonic != ZYDIS_MNEMONIC_SYSENTER && p->mnemonic != ZYDIS_MNEMONIC_SYSEXIT;
    /* Into user mode: IRETQ's frame or SYSRET's R11 carries the TF; a far return has none. */
    return (p->kind == VBTS_KIND_IRET && cpu_mode(v->sregs) == MODE_LONG64 && p->len == 2) ||
           p->mnemonic == ZYDIS_MNEMONIC_SYSRET;
}

static int set_regs(struct trace_vcpu *t)
{
    if (ioctl(t->cpu->fd, KVM_SET_REGS, &t->cpu->run->s.regs.regs) < 0)
        return error_fail_errno("KVM_SET_REGS");
    return 0;
}

/* INT n from user mode, delivered by the monitor: kvm_pvm ends the guest with a triple fault. */
static int user_int(struct trace_vcpu *t)
{
    struct cpu_view v;
    trace_view(t, &v);
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_decode(&v, t->pred.from, &in, ops, &why))
        return error_fail("int at 0x%llx: %s", (unsigned long long)t->pred.from, why);
    struct delivery d = { .kind = DELIVER_SOFT, .vector = (uint8_t)ops[0].imm.value.u, .insn_len = in.length };
    uint64_t from, to;
    unsigned vector;
    if (event_deliver(t->cpu, &d, &from, &to, &vector) < 0)
        return -1;
    /* A gate the CPL may not use turns it into #GP (deliver_event). */
    window_emit_branch(t, from, to, vector == d.vector ? VBTS_KIND_INT : VBTS_KIND_EXCEPTION, 3);
    return 0;
}

/* SYSCALL and INT n from user mode, run by the monitor: kvm_pvm does not (docs/host-compat.md). */
static int syscalls(struct trace_vcpu *t)
{
    while (t->stepping && t->pred_valid && t->pred.cpl == 3 &&
           (t->pred.mnemonic == ZYDIS_MNEMONIC_SYSCALL || t->pred.mnemonic == ZYDIS_MNEMONIC_INT)) {
        if (t->pred.mnemonic == ZYDIS_MNEMONIC_INT) {
            if (user_int(t) < 0)
                return -1;
        } else {
            uint64_t to;
            if (event_syscall(t->cpu, t->pred.len, &to) < 0)
                return -1;
            window_emit_branch(t, t->pred.from, to, VBTS_KIND_SYSCALL, 3);
        }
        if (step_predict(t, false) < 0)
            return -1;
    }
    return 0;
}

/* TF in the RFLAGS image IRETQ will load, at RSP + 16; the old byte kept for after. */
static int iret_tf(struct trace_vcpu *t, const struct cpu_view *v)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    uint64_t at = v->regs->rsp + 17, fault;
    uint8_t b;
    if (gmem_read_linear(v->mem, &pg, at, &b, 1) != GMEM_OK)
        return 0;       /* IRETQ faults on its frame: no user mode follows */
    t->pvm.iret_at = at;
    t->pvm.iret_byte = b;
    t->pvm.iret_tf = true;
    b |= 1;
    gmem_write_linear(v->mem, &pg, at, &b, 1, &fault);
    return 0;
}

/* What the user step changed for TF's sake, back: R11 for SYSRET, IRETQ's frame, PUSHF's image. */
static void untf(struct trace_vcpu *t)
{
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    const struct kvm_sregs *s = &t->cpu->run->s.regs.sregs;
    struct gmem_paging pg;
    uint64_t fault;
    if (t->pvm.r11_tf) {
        r->r11 &= ~(uint64_t)RFLAGS_TF;
        t->pvm.r11_tf = false;
    }
    if (t->pvm.iret_tf) {
        cpu_paging(&t->before_sregs, &pg);
        gmem_write_linear(&t->cpu->vm->mem, &pg, t->pvm.iret_at, &t->pvm.iret_byte, 1, &fault);
        t->pvm.iret_tf = false;
    }
    unsigned m = t->pred.mnemonic;
    if (t->pred_valid && t->pred.cpl == 3 && (m == ZYDIS_MNEMONIC_PUSHF || m == ZYDIS_MNEMONIC_PUSHFQ) &&
        cpu_cpl(s) == 3) {
        uint8_t b;
        cpu_paging(s, &pg);
        if (gmem_read_linear(&t->cpu->vm->mem, &pg, r->rsp + 1, &b, 1) == GMEM_OK && (b & 1)) {
            b &= (uint8_t)~1;
            gmem_write_linear(&t->cpu->vm->mem, &pg, r->rsp + 1, &b, 1, &fault);
        }
    }
}

int ustep_before_run(struct trace_vcpu *t)
{
    if (syscalls(t) < 0)
        return -1;
    struct cpu_view v;
    trace_view(t, &v);
    struct debug_want w = { .step = t->stepping };
    int cpl = cpu_cpl(v.sregs);
    bool into = cpl != 3 && t->pred_valid && t->pred.to_user;
    uint64_t h;
    if (t->stepping && (cpl == 3 || into) && !t->pvm.ustep && cpu_idt_handler(&v, VEC_DB, &h) == 0) {
        struct kvm_regs *r = &t->cpu->run->s.regs.regs;
        if (cpl == 3) {
            r->rflags |= RFLAGS_TF;
            if (set_regs(t) < 0)
                return -1;
        } else if (t->pred.mnemonic == ZYDIS_MNEMONIC_SYSRET) {
            t->pvm.r11_tf = !(r->r11 & RFLAGS_TF);
            r->r11 |= RFLAGS_TF;
            if (set_regs(t) < 0)
                return -1;
        } else if (iret_tf(t, &v) < 0) {
            return -1;
        }
        t->pvm.ustep = true;
        t->pvm.db_handler = h;
    }
    if (t->pvm.ustep) {
        w.nbp = 1;
        w.bp[0] = t->pvm.db_handler;
    }
    t->leap.armed = false;
    return debug_set(t->cpu, DEBUG_TRACE, &w);
}

/* The vCPU at the #DB handler's first instruction, from the user step: back to the frame's state. */
static bool restore(struct trace_vcpu *t, const struct cpu_view *v)
{
    uint8_t f[40];
    const char *why;
    struct kvm_sregs *s = &t->cpu->run->s.regs.sregs;
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    if (cpu_read_linear(v, v->regs->rsp, f, sizeof(f)) < 0)
        return false;
    uint64_t rip = vbts_le64(f), cs = vbts_le64(f + 8), fl = vbts_le64(f + 16);
    uint64_t rsp = vbts_le64(f + 24), ss = vbts_le64(f + 32);
    struct kvm_segment ncs, nss;
    if ((cs & 3) != 3 || !(fl & RFLAGS_TF) ||
        deliver_segment(v->mem, s, (uint16_t)cs, &ncs, &why) < 0 ||
        deliver_segment(v->mem, s, (uint16_t)ss, &nss, &why) < 0)
        return false;
    r->rip = rip;
    r->rsp = rsp;
    r->rflags = fl & ~(uint64_t)(RFLAGS_TF | RFLAGS_RF);
    s->cs = ncs;
    s->ss = nss;
    untf(t);
    if (ioctl(t->cpu->fd, KVM_SET_SREGS, s) < 0 || ioctl(t->cpu->fd, KVM_SET_REGS, r) < 0) {
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "KVM_SET_SREGS/KVM_SET_REGS after a user-mode step: %s", strerror(errno));
        return true;
    }
    return true;
}

bool ustep_on_debug(struct trace_vcpu *t, unsigned hits)
{
    struct cpu_view v;
    trace_view(t, &v);
    t->pvm.ustep = false;
    if (hits && cpu_linear_ip(v.regs, v.sregs) == t->pvm.db_handler && restore(t, &v)) {
        t->steps++;
        step_complete(t);
        return true;
    }
    /*
     * An event left user mode first (a fault, an interrupt, INT n): its
     * frame has the monitor's TF, which the handler's IRET must not bring
     * back.  The step engine reads the step as usual.
     */
    struct deliver_before b = { .regs = &t->before_regs, .sregs = &t->before_sregs, .guest_frame = t->gd.frame,
                               .next_rip = t->pred.from + t->pred.len };
    if (cpu_cpl(&t->before_sregs) == 3)
        deliver_untrap(v.mem, &b);
    bool r11 = t->pvm.r11_tf;
    untf(t);
    if (r11)
        set_regs(t);
    return false;
}

void ustep_cancel(struct trace_vcpu *t)
{
    if (!t->pvm.ustep)
        return;
    t->pvm.ustep = false;
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    if (cpu_cpl(&t->cpu->run->s.regs.sregs) == 3)
        r->rflags &= ~(uint64_t)RFLAGS_TF;
    untf(t);
    if (set_regs(t) < 0)
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
}
