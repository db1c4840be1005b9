/* SPDX-License-Identifier: MIT */
/*
 * Single-step recorder.  KVM stops the vCPU after every instruction; before
 * each step we predict, from the instruction and the registers, what it does
 * to control flow (trace_branch.c), and after it we compare the prediction
 * with where the vCPU actually is.  Agreement yields the BTS record exactly;
 * disagreement is an exception or interrupt, which we attribute to an IDT
 * vector, or the trace stops with an error rather than guess.
 *
 * Hosts swallow some step exits: the first instruction of an exception
 * handler, the instruction after IRET (measured on kvm_pvm) and, on every
 * host, the instruction after MOV SS/POP SS.  For those we decode the
 * skipped instruction and accept the observed RIP only if that one
 * instruction explains it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "kvm.h"
#include "trace.h"

static int predict_next(struct trace_vcpu *t);

static struct vbts_record branch_record(uint64_t from, uint64_t to, unsigned kind)
{
    return (struct vbts_record){ from, to, (uint64_t)kind << VBTS_KIND_SHIFT };
}

static void view_of(struct trace_vcpu *t, struct cpu_view *v)
{
    struct kvm_run *run = t->cpu->run;
    v->mem = &t->cpu->vm->mem;
    v->regs = &run->s.regs.regs;
    v->sregs = &run->s.regs.sregs;
}

int trace_vcpu_start(struct trace_vcpu *t)
{
    struct kvm_guest_debug dbg = {
        .control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP,
    };
    if (ioctl(t->cpu->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0)
        return vbts_fail_errno("KVM_SET_GUEST_DEBUG (single-step)");
    /* Registers arrive with every exit, so a step costs no extra ioctl. */
    t->cpu->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
    /* The first instruction runs before any exit has synced registers. */
    if (ioctl(t->cpu->fd, KVM_GET_REGS, &t->cpu->run->s.regs.regs) < 0)
        return vbts_fail_errno("KVM_GET_REGS");
    if (ioctl(t->cpu->fd, KVM_GET_SREGS, &t->cpu->run->s.regs.sregs) < 0)
        return vbts_fail_errno("KVM_GET_SREGS");
    trace_emit_start(t);
    t->pred_valid = false;
    return predict_next(t);
}

/*
 * One swallowed instruction at `lin` must lead to `rip`.  On success the
 * record it makes, if any, is in *rec.
 */
static bool explain_skip(const struct cpu_view *v, uint64_t lin, uint64_t rip,
                         struct vbts_record *rec, bool *has_rec)
{
    struct branch_pred p;
    const char *why;
    *has_rec = false;
    if (branch_predict_at(v, lin, &p, &why))
        return false;
    if (p.kind == VBTS_KIND_UNKNOWN)
        return rip == lin + p.len;
    if (p.target_known && rip != p.target)
        return false;
    if (!p.target_known && rip == lin + p.len && p.kind == VBTS_KIND_JCC)
        return true;        /* a conditional branch not taken */
    *rec = branch_record(lin, rip, p.kind);
    *has_rec = true;
    return true;
}

/*
 * The step ended somewhere the instruction at `from` cannot go: an event
 * was delivered there, and the handler's first instruction may have run
 * without a step exit of its own.  `hint` is a vector the instruction is
 * known to raise, or -1.
 */
static int attribute_event(struct trace_vcpu *t, const struct cpu_view *v, uint64_t from,
                           int hint, uint64_t rip)
{
    int found = -1, exact = -1, hinted = -1, matches = 0;
    uint64_t handler = 0, h;
    struct vbts_record rec = { 0 }, r;
    bool has_rec = false, hr;

    for (unsigned vec = 0; vec < 256; vec++) {
        if (idt_handler(v, vec, &h))
            continue;
        if (h == rip) {
            if (exact < 0)
                exact = vec;
            continue;
        }
        if (!explain_skip(v, h, rip, &r, &hr))
            continue;
        matches++;
        if (found < 0 || (int)vec == hint) {
            found = vec;
            if ((int)vec == hint)
                hinted = vec;
        }
    }
    if (exact >= 0) {
        idt_handler(v, exact, &handler);
        trace_emit(t, branch_record(from, handler, VBTS_KIND_EXCEPTION));
        return 0;
    }
    if (found < 0 || (matches > 1 && hinted < 0)) {
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "trace lost step synchronisation: the instruction at 0x%llx was "
                       "followed by 0x%llx, which %s", (unsigned long long)from,
                       (unsigned long long)rip,
                       found < 0 ? "no IDT handler explains"
                                 : "several IDT handlers explain");
        return -1;
    }
    idt_handler(v, found, &handler);
    explain_skip(v, handler, rip, &rec, &has_rec);
    trace_emit(t, branch_record(from, handler, VBTS_KIND_EXCEPTION));
    if (has_rec)
        trace_emit(t, rec);
    return 0;
}

/* Account for the instruction predicted in t->pred, now that the vCPU is at `rip`. */
static int settle(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    const struct branch_pred *p = &t->pred;
    struct vbts_record rec;
    bool has_rec;

    if (p->kind != VBTS_KIND_UNKNOWN && p->taken) {
        uint64_t target = p->target_known ? p->target : rip;
        if (rip == target) {
            trace_emit(t, branch_record(p->from, target, p->kind));
            return 0;
        }
        /* Otherwise a branch faulted itself (bad stack, bad selector, ...). */
        if (!p->target_known || p->kind != VBTS_KIND_IRET)
            return attribute_event(t, v, p->from, p->vector_hint, rip);
        /*
         * After IRET the target's own step exit is swallowed: it either ran
         * normally or raised an event itself.
         */
        trace_emit(t, branch_record(p->from, target, p->kind));
        if (explain_skip(v, target, rip, &rec, &has_rec)) {
            if (has_rec)
                trace_emit(t, rec);
            return 0;
        }
        return attribute_event(t, v, target, -1, rip);
    }
    uint64_t next = p->from + p->len;
    if (rip == next)
        return 0;
    if (p->shadow && explain_skip(v, next, rip, &rec, &has_rec)) {
        if (has_rec)
            trace_emit(t, rec);
        return 0;
    }
    return attribute_event(t, v, p->from, p->vector_hint, rip);
}

int trace_on_step(struct trace_vcpu *t)
{
    struct cpu_view v;
    view_of(t, &v);
    t->steps++;
    if (t->pred_valid && settle(t, &v, cpu_linear_ip(v.regs, v.sregs)) < 0)
        return -1;
    return predict_next(t);
}

/* Predict the instruction at the vCPU's RIP, the one the next step runs. */
static int predict_next(struct trace_vcpu *t)
{
    struct cpu_view v;
    view_of(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    const char *why;
    if (branch_predict(&v, &t->pred, &why) < 0) {
        /* The guest will fault on this fetch; the next step shows the handler. */
        memset(&t->pred, 0, sizeof(t->pred));
        t->pred.from = rip;
        t->pred.vector_hint = 14;
    }
    t->pred_valid = true;
    if ((t->pred.to_user || cpu_cpl(v.sregs) == 3) && kvm_host_cannot_step_user()) {
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "cannot trace CPL3 code on this host (kvm_pvm does not single-step "
                       "user mode); trace ends before 0x%llx", (unsigned long long)rip);
        trace_vcpu_stop(t, VBTS_STOP_UNSUPPORTED);
        return -1;
    }
    return 0;
}
