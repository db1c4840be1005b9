/* SPDX-License-Identifier: MIT */
/*
 * The single-step engine.  KVM stops the vCPU after every instruction;
 * before each step we predict, from the instruction and the registers,
 * what it does to control flow (trace/branch.c), and after it we compare
 * the prediction with where the vCPU actually is.  Agreement yields the
 * BTS record exactly; disagreement is an exception or interrupt, which we
 * attribute to an IDT vector, or the trace stops with an error rather
 * than guess.
 *
 * Hosts swallow some step exits: the first instruction of an exception
 * handler, the instruction after IRET (measured on kvm_pvm) and, on every
 * host, the instruction after MOV SS/POP SS.  For those we decode the
 * skipped instruction and accept the observed RIP only if that one
 * instruction explains it.
 */
#include "trace/engine.h"
#include "trace/step.h"
#include "trace/window.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "export/sink.h"
#include "trace/attrib.h"
#include "trace/catch.h"
#include "trace/leap.h"
#include "trace/ustep.h"
#include "trace/tf.h"
#include "guest_bts/guest_bts.h"
#include "x86/arch.h"
#include "x86/debug.h"
#include "x86/host.h"

/* KVM's debug state follows from what this vCPU needs: steps, or the start trigger. */
int step_update(struct trace_vcpu *t)
{
    bool step = t->tracing || t->passing || t->recording || guest_bts_on(t->tr->gbts, t->cpu);
    if (step && !t->stepping && t->tr->tf && !t->tr->block_irq && arch_vm(t->cpu->vm)->irqchip)
        return error_fail("this host's KVM cannot hold interrupts back while it single-steps "
                          "(KVM_GUESTDBG_BLOCKIRQ, Linux 5.16 and later): their handlers would "
                          "run unseen, so vbts does not trace this guest here");
    leap_flush(t);
    if (!step)
        ustep_cancel(t);
    struct debug_want w = { .step = step, .block_irq = step && t->tr->tf };
    if (t->bp_armed) {
        w.nbp = 1;
        w.bp[0] = t->tr->cfg->start;
    }
    t->kvm_leap = false;
    if (debug_set(t->cpu, DEBUG_TRACE, &w) < 0)
        return -1;
    if (step != t->stepping && t->tr->tf && tf_stepping(t, step) < 0)
        return -1;
    if (step && !t->stepping)
        t->pred_valid = false;
    t->stepping = step;
    return 0;
}

/* Registers of a vCPU that has not exited since they last changed. */
int step_sync_regs(struct trace_vcpu *t)
{
    if (ioctl(t->cpu->fd, KVM_GET_REGS, &t->cpu->run->s.regs.regs) < 0)
        return error_fail_errno("KVM_GET_REGS");
    if (ioctl(t->cpu->fd, KVM_GET_SREGS, &t->cpu->run->s.regs.sregs) < 0)
        return error_fail_errno("KVM_GET_SREGS");
    return 0;
}

/* Guest BTS changed at a WRMSR exit: step exactly while it or the window needs it. */
int step_bts_changed(struct trace_vcpu *t)
{
    bool was = t->stepping;
    if (step_update(t) < 0)
        return -1;
    if (!t->stepping || was)
        return 0;
    /*
     * Called at an exit whose instruction (WRMSR) has not completed yet:
     * predict it, and accept that its own step exit may be swallowed.
     */
    if (step_sync_regs(t) < 0)
        return -1;
    return step_predict(t, true);
}

void step_note_completion(struct trace_vcpu *t)
{
    /*
     * An instruction finished by the monitor (port I/O, MMIO) may complete
     * together with the next one before KVM reports a step (seen on
     * kvm_pvm: `mov [apic], eax; sti` gave one step exit).  A stretch
     * goes on after MMIO as before it.
     */
    if (!t->leaping && t->pred_valid && t->pred.kind == VBTS_KIND_UNKNOWN)
        t->pred.shadow = true;
}

void step_note_event(struct trace_vcpu *t, int vector)
{
    /* Only a stepping vCPU has a prediction for the event to settle. */
    if (t->stepping) {
        leap_abandon(t);
        t->event_vector = vector;
    }
}

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
 * the search to it.
 */
static int attribute_event(struct trace_vcpu *t, const struct cpu_view *v, uint64_t from,
                           int cpl, int hint, bool only, unsigned kind, uint64_t rip)
{
    struct attrib_event a;
    attrib_event(v, rip, hint, only, ATTRIB_SKIP_MAX, &a);
    if (a.status != ATTRIB_OK) {
        char many[64];
        snprintf(many, sizeof(many), "several IDT handlers explain (vectors %d and %d)", a.vector, a.other);
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "trace lost step synchronisation: the instruction at 0x%llx was "
                       "followed by 0x%llx, which %s", (unsigned long long)from,
                       (unsigned long long)rip, a.status == ATTRIB_NONE ? "no IDT handler explains" : many);
        return -1;
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
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "trace lost step synchronisation: the return at 0x%llx ran without a step "
                       "exit, and its target cannot be read from its stack", (unsigned long long)next);
        return -1;
    }
    if (rip != r.target && !explain_skip(v, r.target, rip, false, &s, &has_skip)) {
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "trace lost step synchronisation: the return at 0x%llx goes to 0x%llx, "
                       "and the vCPU is at 0x%llx, which that cannot reach",
                       (unsigned long long)next, (unsigned long long)r.target, (unsigned long long)rip);
        return -1;
    }
    window_emit_branch(t, next, r.target, r.kind, r.cpl);
    if (rip != r.target && has_skip)
        emit_skipped(t, &s);
    return 0;
}

/* Account for the instruction predicted in t->pred, now that the vCPU is at `rip`. */
static int settle(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    const struct branch_pred *p = &t->pred;
    struct branch_pred skip;
    bool has_skip;

    if (t->event_vector >= 0) {
        /* The monitor injected an event: it was delivered before p ran. */
        int vec = t->event_vector;
        t->event_vector = -1;
        unsigned kind = p->kind == VBTS_KIND_INT ? VBTS_KIND_INT     /* int3 completed for the host */
                        : vec < 32 ? VBTS_KIND_EXCEPTION : VBTS_KIND_INTERRUPT;
        return attribute_event(t, v, p->from, p->cpl, vec, true, kind, rip);
    }
    if (p->kind != VBTS_KIND_UNKNOWN && p->taken) {
        uint64_t target = p->target_known ? p->target : rip;
        if (rip == target) {
            window_emit_branch(t, p->from, target, p->kind, p->cpl);
            return 0;
        }
        /* INT n: its handler's first instruction may have run unseen (kvm_pvm). */
        if (p->kind == VBTS_KIND_INT && p->target_known) {
            if (explain_skip(v, p->target, rip, true, &skip, &has_skip)) {
                window_emit_branch(t, p->from, p->target, p->kind, p->cpl);
                if (has_skip)
                    emit_skipped(t, &skip);
                return 0;
            }
            return attribute_event(t, v, p->from, p->cpl, -1, false, VBTS_KIND_EXCEPTION, rip);
        }
        /* Otherwise a branch faulted itself (bad stack, bad selector, ...). */
        if (!p->target_known || (p->kind != VBTS_KIND_IRET && p->mnemonic != ZYDIS_MNEMONIC_SYSRET))
            return attribute_event(t, v, p->from, p->cpl, p->vector_hint, false,
                                   VBTS_KIND_EXCEPTION, rip);
        /*
         * After IRET the target's own step exit is swallowed: it either ran
         * normally or raised an event itself.  So into user mode after
         * SYSRET, where that trap comes through the guest's #DB handler
         * (trace/ustep.c).
         */
        window_emit_branch(t, p->from, target, p->kind, p->cpl);
        if (explain_skip(v, target, rip, true, &skip, &has_skip)) {
            if (has_skip)
                emit_skipped(t, &skip);
            return 0;
        }
        return attribute_event(t, v, target, cpu_cpl(v->sregs), -1, false,
                               VBTS_KIND_EXCEPTION, rip);
    }
    uint64_t next = p->from + p->len;
    /* A REP string instruction steps once per iteration, in place. */
    if (rip == p->from)
        return 0;
    /*
     * Straight-line code may explain `rip`, also where an exception's
     * handler starts right after the faulting instruction.  That reading
     * holds only if nothing contradicts it: the instruction cannot fault
     * for sure (ud2), and the stack pointer moved only if the code did.
     */
    if (p->vector_hint < 0 && !event_moved_sp(t, v, rip)) {
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
    return attribute_event(t, v, p->from, p->cpl, p->vector_hint, false, VBTS_KIND_EXCEPTION, rip);
}

int step_complete(struct trace_vcpu *t)
{
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    if (t->pred_valid && (t->tr->tf ? tf_settle(t, &v, rip) : settle(t, &v, rip)) < 0)
        return -1;
    window_follow_context(t, v.sregs->cr3);
    if (t->passing && !t->tracing) {
        int c = catch_step(t, rip);
        if (c != 0)
            return c < 0 ? -1 : 0;
    }
    if (!t->stepping)
        return 0;       /* the step closed the window, or left the trigger's page */
    return step_predict(t, false);
}

/* A debug exit of ours: the start trigger's breakpoint (hits), or a step. */
enum vcpu_verdict step_on_debug(struct trace_vcpu *t, unsigned hits)
{
    if (t->leaping)
        return leap_on_debug(t, hits);
    if (t->ustep && ustep_on_debug(t, hits))
        return VCPU_EXIT_DONE;
    if (hits) {
        if (!t->bp_armed)
            return VCPU_EXIT_PASS;
        /* Stopped before the trigger instruction ran: trace from it on. */
        if (window_open_here(t) < 0)
            vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
        return VCPU_EXIT_DONE;
    }
    if (!t->stepping)
        return VCPU_EXIT_PASS;
    t->steps++;
    step_complete(t);
    return VCPU_EXIT_DONE;
}

/* Predict the instruction at the vCPU's RIP, the one the next step runs. */
int step_predict(struct trace_vcpu *t, bool tolerate_skip)
{
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    const char *why;
    if (branch_predict(&v, &t->pred, &why) < 0) {
        /* The guest will fault on this fetch; the next step shows the handler. */
        memset(&t->pred, 0, sizeof(t->pred));
        t->pred.from = rip;
        t->pred.cpl = cpu_cpl(v.sregs);
        t->pred.vector_hint = 14;
    }
    if (tolerate_skip && t->pred.kind == VBTS_KIND_UNKNOWN)
        t->pred.shadow = true;
    t->pred_valid = true;
    if (!t->tr->tf) {
        /* What settle() compares the step's end with. */
        t->before_regs = *v.regs;
        t->before_sregs = *v.sregs;
    }
    const struct trace_config *c = t->tr->cfg;
    if (t->tracing && c->have_stop && rip == c->stop) {
        window_close(t);    /* the stop trigger is not executed inside the window */
        if (!t->stepping)
            return 0;
    }
    if (t->stepping && (t->pred.to_user || cpu_cpl(v.sregs) == 3) && !host_steps_user() &&
        !ustep_can(t, &v, &t->pred)) {
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "cannot trace CPL3 code on this host (kvm_pvm steps user mode only through "
                       "a 64-bit guest's #DB handler, entered by IRETQ or SYSRET); trace ends "
                       "before 0x%llx", (unsigned long long)rip);
        if (t->tr->sink)
            sink_stop(t->tr->sink, t->cpu->index, VBTS_STOP_UNSUPPORTED);
        return -1;
    }
    return 0;
}
