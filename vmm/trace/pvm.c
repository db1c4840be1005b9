/* SPDX-License-Identifier: MIT */
/*
 * kvm_pvm behind the engines' seam (backend.h).  That host emulates CPL0
 * code and single-steps it with an exit per instruction, handlers
 * included, delivering interrupts and exceptions itself during the step;
 * so a step that did not end where its instruction goes had an event, and
 * its vector is the IDT handler that explains the new RIP (attrib.c).  It
 * swallows some step exits, each read here only when nothing contradicts
 * the reading (docs/engine.md):
 *
 *  - the first instruction of an exception handler, and the instruction
 *    after IRET, have no step exit of their own;
 *  - after MOV SS/POP SS (architectural) and after an instruction the
 *    monitor completed (port I/O, MMIO), the next may run in the same step.
 *
 * User mode runs natively there and is stepped through the guest's own
 * #DB handler (ustep.c).  Steps let interrupts in: the host delivers them
 * during the step, and they are read like any other event.
 */
#include "trace/backend.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "export/sink.h"
#include "trace/attrib.h"
#include "trace/leap.h"
#include "trace/nested.h"
#include "trace/step.h"
#include "trace/ustep.h"
#include "trace/wait.h"
#include "trace/window.h"
#include "x86/deliver.h"
#include "x86/arch.h"
#include "x86/debug.h"
#include "x86/fault.h"
#include "x86/hostcompat.h"

static bool explain_skip(const struct cpu_view *v, uint64_t lin, uint64_t rip,
                         bool allow_indirect, struct branch_pred *rec, bool *has_rec)
{
    return attrib_skip(v, lin, rip, ATTRIB_SKIP_MAX, allow_indirect, rec, has_rec);
}

static void emit_skipped(struct trace_vcpu *t, const struct branch_pred *s)
{
    window_emit_branch(t, s->from, s->target, s->kind, s->cpl);
}

/*
 * The step ended somewhere the instruction at `from` cannot go: an event
 * was delivered there, and the handler's first instruction may have run
 * without a step exit of its own.  `hint` is the vector the monitor
 * injected or the instruction is known to raise, or -1; `only` restricts
 * the search to it.  `at`: the state the instruction ran in, where known,
 * to judge whether it could raise what came.
 */
static int attribute_event(struct trace_vcpu *t, const struct cpu_view *v, const struct cpu_view *at,
                           uint64_t from, int cpl, int hint, bool only, unsigned kind, uint64_t rip)
{
    struct attrib_event a;
    attrib_event(v, rip, hint, only, ATTRIB_SKIP_MAX, &a);
    if (a.status != ATTRIB_OK) {
        char many[64];
        snprintf(many, sizeof(many), "several IDT handlers explain (vectors %d and %d)", a.vector, a.other);
        return trace_desync(t, "trace lost step synchronisation: the instruction at 0x%llx was "
                            "followed by 0x%llx, which %s", (unsigned long long)from,
                            (unsigned long long)rip, a.status == ATTRIB_NONE ? "no IDT handler explains" : many);
    }
    if (hint < 0 && at && !attrib_may_raise(at, from, a.vector))
        return trace_desync(t, "trace stopped at 0x%llx: the host delivered vector %d there, which "
                            "that instruction cannot raise (the vCPU is at 0x%llx)",
                            (unsigned long long)from, a.vector, (unsigned long long)rip);
    /*
     * KVM sets TF in RFLAGS where it arms a single-step, and this host's
     * delivery pushed it into the frame (seen under the branch engine,
     * whose steps are armed afresh after each stretch): cleared there, or
     * the handler reads it and its IRET brings the monitor's TF back into
     * the guest (a #DB it has no handler for, once the window is closed).
     */
    if (at && !(at->regs->rflags & RFLAGS_TF)) {
        struct deliver_before b = { .regs = at->regs, .sregs = at->sregs, .guest_frame = t->gd.frame,
                                    .next_rip = at->regs->rip + t->pred.len };
        deliver_untrap(v->mem, &b);
    }
    window_emit_branch(t, from, a.handler, attrib_kind(kind, a.vector), cpl);
    if (a.has_skip)
        emit_skipped(t, &a.skip);
    return 0;
}
/*
 * The stack pointer is not where the instructions from the predicted one
 * to `rip` leave it: an event pushed its frame.  (In the widths the mode
 * keeps: a 32-bit stack wraps in ESP.)
 */
static bool event_moved_sp(const struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    int64_t d;
    /* Most steps leave RSP alone: no decoding for them. */
    if (v->regs->rsp == t->before_regs.rsp ||
        !attrib_run_sp(v, t->pred.from, rip, ATTRIB_SKIP_MAX + 1, &d))
        return false;
    uint64_t want = t->before_regs.rsp + (uint64_t)d, got = v->regs->rsp;
    if (cpu_mode(v->sregs) != MODE_LONG64) {
        want = (uint32_t)want;
        got = (uint32_t)got;
    }
    return want != got;
}

/*
 * The instruction after the predicted one ran unseen (its step went with a
 * port write's completion, or a MOV SS shadow), and it is a return: IRET,
 * RET or RETF.  Its target is on the stack as the predicted instruction
 * left it, which did not move the stack pointer: read it there, not from
 * where the step ended, since the target's own first instruction may have
 * run in the same step (after IRET, on kvm_pvm).  0: recorded; -1: the
 * trace ends; 1: not such a return.
 */
static int skipped_return(struct trace_vcpu *t, const struct cpu_view *v, uint64_t next, uint64_t rip)
{
    struct branch_pred r, s;
    const char *why;
    int64_t d;
    if (branch_predict_at(v, next, &r, &why) < 0 ||
        (r.kind != VBTS_KIND_IRET && r.kind != VBTS_KIND_RET &&
         !(r.kind == VBTS_KIND_FAR && r.mnemonic == ZYDIS_MNEMONIC_RET)))
        return 1;
    if (!attrib_run_sp(v, t->pred.from, next, 1, &d) || d != 0)
        return 1;
    struct kvm_regs regs = t->before_regs;
    regs.rip += t->pred.len;
    struct cpu_view before = { v->mem, &regs, &t->before_sregs };
    bool has_skip;
    if (branch_predict(&before, &r, &why) < 0 || !r.target_known) {
        return trace_desync(t, "trace lost step synchronisation: the return at 0x%llx ran without a "
                            "step exit, and its target cannot be read from its stack",
                            (unsigned long long)next);
    }
    if (rip != r.target && !explain_skip(v, r.target, rip, false, &s, &has_skip)) {
        return trace_desync(t, "trace lost step synchronisation: the return at 0x%llx goes to 0x%llx, "
                            "and the vCPU is at 0x%llx, which that cannot reach",
                            (unsigned long long)next, (unsigned long long)r.target, (unsigned long long)rip);
    }
    window_emit_branch(t, next, r.target, r.kind, r.cpl);
    if (rip != r.target && has_skip)
        emit_skipped(t, &s);
    return 0;
}

/*
 * The state IRETQ leaves (RIP, CS, RFLAGS, RSP, SS from the frame at RSP),
 * on r and s; the general registers stay.  -1 if the frame cannot be
 * read or a selector not resolved.
 */
static int after_iretq(const struct cpu_view *v, const uint64_t *frame, struct kvm_regs *r,
                       struct kvm_sregs *s)
{
    uint64_t f[5];
    const char *why;
    struct kvm_segment cs, ss;
    if (frame)
        memcpy(f, frame, sizeof(f));
    else if (cpu_read_linear(v, cpu_stack_base(s) + r->rsp, f, sizeof(f)) < 0)
        return -1;
    if (deliver_segment(v->mem, s, (uint16_t)f[1], &cs, &why) < 0)
        return -1;
    if ((uint16_t)f[4] & ~3u) {
        if (deliver_segment(v->mem, s, (uint16_t)f[4], &ss, &why) < 0)
            return -1;
        s->ss = ss;
    }
    s->cs = cs;
    r->rip = f[0];
    r->rflags = f[2] | 2;
    r->rsp = f[3];
    return 0;
}

/* The same for IRETD in 32-bit protected mode, to the same privilege (EIP, CS, EFLAGS). */
static int after_iretd(const struct cpu_view *v, const uint64_t *frame, struct kvm_regs *r,
                       struct kvm_sregs *s)
{
    uint32_t f[3];
    const char *why;
    struct kvm_segment cs;
    if (frame)
        memcpy(f, frame, sizeof(f));
    else if (cpu_read_linear(v, cpu_stack_base(s) + (uint32_t)r->rsp, f, sizeof(f)) < 0)
        return -1;
    if ((f[1] & 3) != (unsigned)cpu_cpl(s) || deliver_segment(v->mem, s, (uint16_t)f[1], &cs, &why) < 0)
        return -1;
    s->cs = cs;
    r->rip = f[0];
    r->rflags = f[2] | 2;
    r->rsp = (uint32_t)(r->rsp + 12);
    return 0;
}

/* The IRET p, IRETQ in 64-bit mode or IRETD in 32-bit, on r and s: 0, or -1 if it is neither or cannot be read. */
static int after_any_iret(const struct cpu_view *v, const struct branch_pred *p, const uint64_t *frame,
                          struct kvm_regs *r, struct kvm_sregs *s)
{
    if (cpu_mode(s) == MODE_LONG64 && p->len == 2)
        return after_iretq(v, frame, r, s);
    if (cpu_mode(s) == MODE_PROT32 && p->len == 1)
        return after_iretd(v, frame, r, s);
    return -1;
}

/*
 * After IRETQ the instruction at its target runs without a step exit of
 * its own, and after one more IRETQ the next as well (`iretq; iretq; jmp`
 * runs in one step).  Each is read with the registers it saw: those before
 * the step, as IRETQ leaves the general ones and its frame gives the rest,
 * so that indirect targets are exact, never taken on trust.  The frames
 * are the ones read before the step (iret_chain): the step's end may have
 * pushed a frame of its own over them (a user-mode step's #DB; the last
 * frame of a chain lies just below where the chain leaves the stack).
 */
static int after_iret(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    struct kvm_regs r = t->before_regs;
    struct kvm_sregs s = t->before_sregs;
    struct cpu_view sim = { v->mem, &r, &s };
    struct branch_pred p = t->pred;
    const char *why;
    for (int n = 0; n < ATTRIB_SKIP_MAX; n++) {
        const uint64_t *frame = (unsigned)n < t->pvm.frames ? t->pvm.frame[n] : NULL;
        if (after_any_iret(&sim, &p, frame, &r, &s) < 0)
            return trace_desync(t, "trace lost step synchronisation: the IRET at 0x%llx ran without a "
                                "step exit, and where it returns cannot be read from its frame",
                                (unsigned long long)p.from);
        uint64_t at = cpu_linear_ip(&r, &s);
        window_emit_branch(t, p.from, at, p.kind, p.cpl);
        if (at == rip)
            return 0;
        if (branch_predict(&sim, &p, &why) < 0)
            break;
        if (p.kind == VBTS_KIND_IRET)
            continue;
        bool branch = p.kind != VBTS_KIND_UNKNOWN && p.taken;
        if (branch ? p.target_known && p.target == rip : at + p.len == rip) {
            if (branch)
                window_emit_branch(t, p.from, p.target, p.kind, p.cpl);
            return 0;
        }
        break;
    }
    return attribute_event(t, v, &sim, cpu_linear_ip(&r, &s), cpu_cpl(&s), -1, false, VBTS_KIND_EXCEPTION, rip);
}

/*
 * What a branch whose target is not known does to the stack pointer: a
 * far jmp nothing, a far call pushes CS and the return address.  An event
 * always moves it (its frame), so a step that moved it otherwise was one.
 */
static bool sp_moved_unlike(const struct trace_vcpu *t, const struct cpu_view *v)
{
    const struct branch_pred *p = &t->pred;
    unsigned w = cpu_stack_width(&t->before_sregs) / 8;
    int64_t d;
    if (p->kind == VBTS_KIND_JMP || p->kind == VBTS_KIND_JMP_IND || p->kind == VBTS_KIND_JCC)
        d = 0;
    else if (p->kind == VBTS_KIND_CALL || p->kind == VBTS_KIND_CALL_IND)
        d = -(int64_t)w;
    else if (p->kind == VBTS_KIND_FAR && p->mnemonic == ZYDIS_MNEMONIC_JMP)
        d = 0;
    else if (p->kind == VBTS_KIND_FAR && p->mnemonic == ZYDIS_MNEMONIC_CALL)
        d = -2 * (int64_t)w;
    else
        return false;
    return v->regs->rsp != t->before_regs.rsp + (uint64_t)d;
}

/* INT n went elsewhere than its handler: the handler's first instruction ran, or another event came. */
static int settle_int(struct trace_vcpu *t, const struct cpu_view *v, const struct cpu_view *before,
                      uint64_t rip)
{
    const struct branch_pred *p = &t->pred;
    struct branch_pred skip;
    bool has_skip;
    if (explain_skip(v, p->target, rip, true, &skip, &has_skip)) {
        window_emit_branch(t, p->from, p->target, p->kind, p->cpl);
        if (has_skip)
            emit_skipped(t, &skip);
        return 0;
    }
    /*
     * From user mode through a gate it may use, this host delivers
     * another event (#GP) where the CPU enters the gate's handler.
     */
    if (p->cpl == 3 && cpu_idt_gate_dpl(v, p->vector) == 3)
        return trace_desync(t, "trace stopped at 0x%llx: int 0x%x from user mode went to 0x%llx, "
                            "not to its gate's handler 0x%llx: this host (kvm_pvm) does not "
                            "deliver software interrupts from user mode",
                            (unsigned long long)p->from, p->vector, (unsigned long long)rip,
                            (unsigned long long)p->target);
    return attribute_event(t, v, before, p->from, p->cpl, -1, false, VBTS_KIND_EXCEPTION, rip);
}

/* The exception the instruction at `from` raises for sure in state `at`, or -1. */
static int sure_fault(const struct cpu_view *at, uint64_t from)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    struct delivery d;
    const char *why;
    if (cpu_decode(at, from, &in, ops, &why) < 0)
        return -1;
    return fault_predict(at, &in, ops, &d) == FAULT_YES && d.kind == DELIVER_FAULT ? d.vector : -1;
}

/* A step that was no branch: straight-line code, or an exception (its handler's first instruction run). */
static int settle_straight(struct trace_vcpu *t, const struct cpu_view *v, const struct cpu_view *before,
                           uint64_t rip)
{
    const struct branch_pred *p = &t->pred;
    struct branch_pred skip;
    bool has_skip;
    uint64_t next = p->from + p->len;
    /* A REP string instruction steps once per iteration, in place. */
    if (rip == p->from)
        return 0;
    /*
     * Straight-line code may explain `rip`, also where an exception's
     * handler starts right after the faulting instruction (and its first
     * instruction may have put the stack back).  That reading holds only
     * if nothing contradicts it: the instruction cannot fault for sure
     * (ud2, a page not present, a bad selector), and the stack pointer
     * moved only if the code did.
     */
    int hint = p->vector_hint;
    if (hint < 0 && rip != next)
        hint = sure_fault(before, p->from);
    if (hint < 0 && !event_moved_sp(t, v, rip)) {
        if (rip == next)
            return 0;
        int r = skipped_return(t, v, next, rip);
        if (r != 1)
            return r;
        if (explain_skip(v, next, rip, p->shadow, &skip, &has_skip)) {
            if (has_skip)
                emit_skipped(t, &skip);
            return 0;
        }
    }
    return attribute_event(t, v, before, p->from, p->cpl, hint, false, VBTS_KIND_EXCEPTION, rip);
}

/* Account for the instruction predicted in t->pred, now that the vCPU is at `rip`. */
static int settle(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    const struct branch_pred *p = &t->pred;
    struct kvm_regs br = t->before_regs;
    struct kvm_sregs bs = t->before_sregs;
    const struct cpu_view before = { v->mem, &br, &bs };
    struct branch_pred skip;
    bool has_skip;

    if (t->pvm.event_vector >= 0) {
        /* The monitor injected an event: it was delivered before p ran. */
        int vec = t->pvm.event_vector;
        t->pvm.event_vector = -1;
        unsigned kind = p->kind == VBTS_KIND_INT ? VBTS_KIND_INT     /* int3 completed for the host */
                        : vec < 32 && vec != 2 ? VBTS_KIND_EXCEPTION : VBTS_KIND_INTERRUPT;
        return attribute_event(t, v, &before, p->from, p->cpl, vec, true, kind, rip);
    }
    if (p->kind != VBTS_KIND_UNKNOWN && p->taken) {
        uint64_t target = p->target_known ? p->target : rip;
        /* A far branch through a selector that faults for sure (bad, not present). */
        if (!p->target_known && p->vector_hint >= 0)
            return attribute_event(t, v, &before, p->from, p->cpl, p->vector_hint, true,
                                   VBTS_KIND_EXCEPTION, rip);
        if (!p->target_known && sp_moved_unlike(t, v))
            return attribute_event(t, v, &before, p->from, p->cpl, p->vector_hint, false,
                                   VBTS_KIND_EXCEPTION, rip);
        if (rip == target) {
            window_emit_branch(t, p->from, target, p->kind, p->cpl);
            return 0;
        }
        /* INT n: its handler's first instruction may have run unseen (kvm_pvm). */
        if (p->kind == VBTS_KIND_INT && p->target_known)
            return settle_int(t, v, &before, rip);
        /*
         * A far JMP or CALL the monitor completed for the host (through a
         * call gate, x86/hostcompat.c): its target's first instruction
         * ran in the same step.
         */
        if (p->kind == VBTS_KIND_FAR && p->target_known && p->mnemonic != ZYDIS_MNEMONIC_RET &&
            explain_skip(v, p->target, rip, true, &skip, &has_skip)) {
            window_emit_branch(t, p->from, p->target, p->kind, p->cpl);
            if (has_skip)
                emit_skipped(t, &skip);
            return 0;
        }
        /* Otherwise a branch faulted itself (bad stack, bad selector, ...). */
        if (!p->target_known || (p->kind != VBTS_KIND_IRET && p->mnemonic != ZYDIS_MNEMONIC_SYSRET))
            return attribute_event(t, v, &before, p->from, p->cpl, p->vector_hint, false,
                                   VBTS_KIND_EXCEPTION, rip);
        if (p->kind == VBTS_KIND_IRET)
            return after_iret(t, v, rip);
        /*
         * Into user mode after SYSRET the target's own step exit is
         * swallowed: that trap comes through the guest's #DB handler
         * (trace/ustep.c).
         */
        window_emit_branch(t, p->from, target, p->kind, p->cpl);
        /* Straight-line code stays in user mode: back in the kernel, an event came. */
        int cpl = p->to_user ? 3 : cpu_cpl(v->sregs);
        if (cpu_cpl(v->sregs) == cpl && explain_skip(v, target, rip, true, &skip, &has_skip)) {
            if (has_skip)
                emit_skipped(t, &skip);
            return 0;
        }
        return attribute_event(t, v, NULL, target, cpl, -1, false, VBTS_KIND_EXCEPTION, rip);
    }
    return settle_straight(t, v, &before, rip);
}

static int pvm_settle(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    int r = settle(t, v, rip);
    t->pvm.frames = 0;
    return r;
}

static int pvm_stepping(struct trace_vcpu *t, bool on, struct debug_want *w)
{
    (void)w;    /* steps let interrupts in: the host delivers them during the step */
    if (!on)
        ustep_cancel(t);
    return 0;
}

/*
 * The instruction after IRETQ runs in the IRETQ's step.  Into user mode,
 * where it is SYSCALL or INT n, the host runs it wrongly there (#GP, a
 * triple fault), where the monitor runs it when it has a step of its own
 * (ustep.c): so the monitor runs that IRETQ itself, from its frame.
 */
static int iret_to_syscall(struct trace_vcpu *t, const struct cpu_view *v)
{
    struct branch_pred next;
    const char *why;
    const struct branch_pred *p = &t->pred;
    if (!t->pred_valid || p->kind != VBTS_KIND_IRET || !p->to_user || !p->target_known ||
        cpu_mode(v->sregs) != MODE_LONG64 || p->len != 2 ||
        branch_predict_at(v, p->target, &next, &why) < 0 ||
        (next.kind != VBTS_KIND_INT && next.mnemonic != ZYDIS_MNEMONIC_SYSCALL))
        return 0;
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    struct kvm_sregs *s = &t->cpu->run->s.regs.sregs;
    struct kvm_regs r0 = *r;
    struct kvm_sregs s0 = *s;
    if (after_iretq(v, NULL, r, s) < 0 || ioctl(t->cpu->fd, KVM_SET_SREGS, s) < 0 ||
        ioctl(t->cpu->fd, KVM_SET_REGS, r) < 0 || event_iret_done(t->cpu) < 0) {
        *r = r0;
        *s = s0;
        return trace_desync(t, "trace stopped at 0x%llx: the IRET returns to a system call or software "
                            "interrupt at 0x%llx, which this host (kvm_pvm) would run in the same step, "
                            "and the monitor could not run the IRET itself", (unsigned long long)p->from,
                            (unsigned long long)p->target);
    }
    window_emit_branch(t, p->from, cpu_linear_ip(r, s), p->kind, p->cpl);
    return step_predict(t, false);
}

/*
 * The frames of the IRET about to be stepped and of the IRETs it returns
 * to, up to ATTRIB_SKIP_MAX, as memory holds them before the step.
 */
static unsigned iret_chain(const struct cpu_view *v, struct branch_pred p, uint64_t (*frame)[5])
{
    struct kvm_regs r = *v->regs;
    struct kvm_sregs s = *v->sregs;
    struct cpu_view sim = { v->mem, &r, &s };
    const char *why;
    unsigned n = 0;
    while (n < ATTRIB_SKIP_MAX && p.kind == VBTS_KIND_IRET) {
        bool q = cpu_mode(&s) == MODE_LONG64;
        uint64_t at = cpu_stack_base(&s) + (q ? r.rsp : (uint32_t)r.rsp);
        if (cpu_read_linear(&sim, at, frame[n], q ? 40 : 12) < 0)
            break;
        /* Kept even if it does not convert: after_iret then fails on these bytes, not on what the step left. */
        n++;
        if (after_any_iret(&sim, &p, frame[n - 1], &r, &s) < 0 || branch_predict(&sim, &p, &why) < 0)
            break;
    }
    return n;
}

static int pvm_arm_step(struct trace_vcpu *t, bool let_in)
{
    (void)let_in;
    struct cpu_view v;
    /* HLT is the monitor's here (wait.c, wait_hlt). */
    if (t->pred_valid && t->pred.mnemonic == ZYDIS_MNEMONIC_HLT && t->pred.cpl == 0 &&
        arch_vm(t->cpu->vm)->irqchip) {
        if (wait_hlt(t) < 0)
            return -1;
        if (!t->stepping)
            return 0;       /* the window closed while it waited */
    }
    if (nested_ahead(t) < 0)
        return -1;
    trace_view(t, &v);
    if (t->stepping && iret_to_syscall(t, &v) < 0)
        return -1;
    if (!t->stepping)
        return 0;       /* its record closed the window: nothing to arm (tf_arm_step) */
    trace_view(t, &v);
    if (ustep_before_run(t) < 0)
        return -1;
    t->pvm.frames = t->pred_valid && t->pred.kind == VBTS_KIND_IRET ? iret_chain(&v, t->pred, t->pvm.frame) : 0;
    return 0;
}

static bool pvm_debug_exit(struct trace_vcpu *t, unsigned hits)
{
    return t->pvm.ustep && ustep_on_debug(t, hits);
}

/* The next step shows the event's delivery: attributed to exactly this vector. */
static void pvm_event(struct trace_vcpu *t, const struct event *ev)
{
    if (t->stepping)
        t->pvm.event_vector = ev->vector;
}

/*
 * An instruction finished by the monitor (port I/O, MMIO) may complete
 * together with the next one before KVM reports a step (seen on kvm_pvm:
 * `mov [apic], eax; sti` gave one step exit).  A stretch goes on after
 * MMIO as before it.
 */
static void pvm_completion(struct trace_vcpu *t)
{
    if (!t->leap.flight && t->pred_valid && t->pred.kind == VBTS_KIND_UNKNOWN)
        t->pred.shadow = true;
}

static bool pvm_user_ok(const struct trace_vcpu *t, const struct cpu_view *v, const struct branch_pred *p)
{
    (void)t;
    return ustep_can(v, p);
}

/*
 * After a step the vCPU may be halted: at a HLT, waiting for an interrupt,
 * which a stretch would hold back; or left so by the host though it runs
 * on (hostcompat_halted, x86/hostcompat.c), which KVM would honour under a
 * stretch's breakpoints as under no debugging at all.  The first is
 * stepped until the interrupt comes; the second made runnable.  An event
 * the monitor raised shows itself at the next step.
 */
static bool pvm_may_leap(struct trace_vcpu *t, const struct cpu_view *v)
{
    if (t->pvm.event_vector >= 0)
        return false;
    if (t->leap.armed || !arch_vm(t->cpu->vm)->irqchip)
        return true;
    return !hostcompat_halted(t->cpu, v);
}

const struct backend backend_pvm = {
    .name = "kvm_pvm",
    .user_by_tf = true,
    .own_shutdowns = true,
    .steps_let_in = true,
    .stepping = pvm_stepping,
    .arm_step = pvm_arm_step,
    .settle = pvm_settle,
    .debug_exit = pvm_debug_exit,
    .event = pvm_event,
    .completion = pvm_completion,
    .user_ok = pvm_user_ok,
    .may_leap = pvm_may_leap,
};
