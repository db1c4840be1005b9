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
 *
 * Records go to two independent consumers: vbts's own trace (--trace, every
 * branch, with the kind in the flags) and the guest's DS buffer (only while
 * the guest's DEBUGCTL enables BTS, filtered by CPL, architectural flags).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kvm.h"
#include "trace.h"

static int predict_next(struct trace_vcpu *t, bool tolerate_skip);
static void close_window(struct trace_vcpu *t);

#define CR3_ADDR_MASK  0x000ffffffffff000ull
/* Straight-line code longer than this between two records is a violation. */
#define FLOW_MAX_INSNS (1u << 20)

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void view_of(struct trace_vcpu *t, struct cpu_view *v)
{
    struct kvm_run *run = t->cpu->run;
    v->mem = &t->cpu->vm->mem;
    v->regs = &run->s.regs.regs;
    v->sregs = &run->s.regs.sregs;
}

/*
 * --verify-flow: from the previous record's `to`, straight-line execution
 * (non-branches and conditional branches not taken) must reach `from`.
 * An independent check of the engine, by re-decoding guest memory.
 */
static void check_flow(struct trace_vcpu *t, uint64_t from)
{
    struct trace_config *c = t->cpu->vm->tcfg;
    if (!t->flow_valid)
        return;
    struct cpu_view v;
    view_of(t, &v);
    v.sregs = &t->flow_sregs;   /* the mode the straight-line code ran in */
    atomic_fetch_add(&c->flow_checked, 1);
    if (!branch_straight_line(&v, t->flow_to, from, FLOW_MAX_INSNS))
        atomic_fetch_add(&c->flow_violations, 1);
}

static void flow_resume(struct trace_vcpu *t, uint64_t at)
{
    if (!t->cpu->vm->tcfg->verify_flow)
        return;
    t->flow_to = at;
    t->flow_sregs = t->cpu->run->s.regs.sregs;
    t->flow_valid = true;
}

static bool passes_filters(struct trace_vcpu *t, int cpl)
{
    const struct trace_config *c = t->cpu->vm->tcfg;
    if ((c->cpl == TRACE_CPL_KERNEL && cpl != 0) || (c->cpl == TRACE_CPL_USER && cpl == 0))
        return false;
    if (c->have_cr3 && (t->cr3 & CR3_ADDR_MASK) != (c->cr3 & CR3_ADDR_MASK))
        return false;
    return true;
}

static void emit_branch(struct trace_vcpu *t, uint64_t from, uint64_t to, unsigned kind, int cpl)
{
    struct vbts_record r = { from, to, (uint64_t)kind << VBTS_KIND_SHIFT };
    if (t->tracing && passes_filters(t, cpl)) {
        struct trace_config *c = t->cpu->vm->tcfg;
        /* The limit is over all vCPUs: exactly max_branches records get out. */
        uint64_t n = atomic_fetch_add(&c->emitted, 1);
        if (c->max_branches && n >= c->max_branches) {
            close_window(t);
        } else {
            if (c->verify_flow)
                check_flow(t, from);
            trace_emit(t, r);
            flow_resume(t, to);
            if (c->max_branches && n + 1 == c->max_branches)
                close_window(t);
        }
    }
    if (guest_bts_on(&t->cpu->gbts))
        guest_bts_store(t->cpu, &r, cpl);
}

/* Context-switch separation: a CR3 change is a departure and an arrival. */
static void follow_context(struct trace_vcpu *t, uint64_t cr3)
{
    if (cr3 == t->cr3 || !t->tracing)
        return;
    uint64_t dt = monotonic_ns() - t->start_ns;
    trace_emit(t, vbts_marker(VBTS_MARK_CTX_DEPART, t->cr3, dt));
    trace_emit(t, vbts_marker(VBTS_MARK_CTX_ARRIVE, cr3, dt));
    t->cr3 = cr3;
}

/* KVM's debug state follows from what this vCPU needs: steps, breakpoints. */
int trace_update_debug(struct trace_vcpu *t)
{
    bool step = t->tracing || guest_bts_on(&t->cpu->gbts);
    const struct hostcompat_vcpu *hc = &t->cpu->hc;
    bool hc_step = !step && hc->pf_bp && hc->stepping_over;
    bool hc_bp = !step && hc->pf_bp && !hc->stepping_over;
    struct kvm_guest_debug dbg = { 0 };
    if (step || hc_step || t->bp_armed || hc_bp)
        dbg.control = KVM_GUESTDBG_ENABLE;
    if (step || hc_step)
        dbg.control |= KVM_GUESTDBG_SINGLESTEP;
    if (t->bp_armed || hc_bp)
        dbg.control |= KVM_GUESTDBG_USE_HW_BP;
    /* Execution breakpoints: R/W and LEN 0; L0 enables DR0, L1 DR1. */
    if (t->bp_armed) {
        dbg.arch.debugreg[0] = t->cpu->vm->tcfg->start;
        dbg.arch.debugreg[7] |= 0x1;
    }
    if (hc_bp) {
        dbg.arch.debugreg[1] = hc->pf_bp;
        dbg.arch.debugreg[7] |= 0x4;
    }
    if (ioctl(t->cpu->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0)
        return vbts_fail_errno("KVM_SET_GUEST_DEBUG (%s%s%s)", step || hc_step ? "single-step" : "no step",
                               t->bp_armed ? ", start trigger" : "",
                               hc_bp ? ", host-compat breakpoint" : "");
    if (step && !t->stepping)
        t->pred_valid = false;
    if (!step && t->stepping)
        hostcompat_after_stepping(t->cpu);
    t->stepping = step;
    return 0;
}

bool trace_is_stepping(const struct trace_vcpu *t)
{
    return t->stepping;
}

/* Registers of a vCPU that has not exited since they last changed. */
static int sync_regs_now(struct trace_vcpu *t)
{
    if (ioctl(t->cpu->fd, KVM_GET_REGS, &t->cpu->run->s.regs.regs) < 0)
        return vbts_fail_errno("KVM_GET_REGS");
    if (ioctl(t->cpu->fd, KVM_GET_SREGS, &t->cpu->run->s.regs.sregs) < 0)
        return vbts_fail_errno("KVM_GET_SREGS");
    return 0;
}

/* Enter the window: START, the context we arrive in, and stepping. */
static int start_tracing(struct trace_vcpu *t, bool regs_synced)
{
    t->tracing = true;
    t->bp_armed = false;
    if (trace_update_debug(t) < 0 || (!regs_synced && sync_regs_now(t) < 0))
        return -1;
    t->start_ns = monotonic_ns();
    t->event_vector = -1;
    trace_emit_start(t);
    t->cr3 = t->cpu->run->s.regs.sregs.cr3;
    trace_emit(t, vbts_marker(VBTS_MARK_CTX_ARRIVE, t->cr3, 0));
    struct cpu_view v;
    view_of(t, &v);
    flow_resume(t, cpu_linear_ip(v.regs, v.sregs));
    t->pred_valid = false;
    return predict_next(t, false);
}

static void stop_tracing(struct trace_vcpu *t, enum vbts_stop_reason why)
{
    if (!t->tracing)
        return;
    t->tracing = false;
    t->flow_valid = false;
    trace_vcpu_stop(t, why);
    if (trace_update_debug(t) < 0)
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", vbts_last_error());
}

void trace_finish(struct trace_vcpu *t, enum vbts_stop_reason why)
{
    if (!t->tracing)
        return;     /* never entered the window, or already left it */
    t->tracing = false;
    trace_vcpu_stop(t, why);
}

/* The window ends for every vCPU: a limit or the stop trigger was reached. */
static void close_window(struct trace_vcpu *t)
{
    struct trace_config *c = t->cpu->vm->tcfg;
    int open = WINDOW_OPEN;
    if (atomic_compare_exchange_strong(&c->window, &open, WINDOW_CLOSED)) {
        if (c->stop_after)
            vm_request_end(t->cpu->vm, VM_END_TRACE_DONE, VBTS_EXIT_OK, "trace window closed");
        else
            vm_kick_others(t->cpu->vm);
    }
    stop_tracing(t, VBTS_STOP_LIMIT);
}

int trace_vcpu_start(struct trace_vcpu *t)
{
    struct trace_config *c = t->cpu->vm->tcfg;
    /* Registers arrive with every exit, so a step costs no extra ioctl. */
    t->cpu->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
    t->event_vector = -1;
    if (!t->sink)
        return 0;
    if (atomic_load(&c->window) == WINDOW_WAITING) {
        /* Untraced at full speed until a vCPU reaches the start trigger. */
        t->bp_armed = true;
        return trace_update_debug(t);
    }
    return start_tracing(t, false);
}

int trace_poll(struct trace_vcpu *t)
{
    if (!t->sink || t->stopped)
        return 0;
    int w = atomic_load_explicit(&t->cpu->vm->tcfg->window, memory_order_relaxed);
    if (w == WINDOW_OPEN && !t->tracing)
        return start_tracing(t, false);
    if (w == WINDOW_CLOSED && t->tracing)
        stop_tracing(t, VBTS_STOP_LIMIT);
    return 0;
}

int trace_update_stepping(struct trace_vcpu *t)
{
    bool was = t->stepping;
    if (trace_update_debug(t) < 0)
        return -1;
    if (!t->stepping || was)
        return 0;
    /*
     * Called at an exit whose instruction (WRMSR) has not completed yet:
     * predict it, and accept that its own step exit may be swallowed.
     */
    if (sync_regs_now(t) < 0)
        return -1;
    return predict_next(t, true);
}

void trace_note_completion(struct trace_vcpu *t)
{
    /*
     * An instruction finished by the monitor (port I/O, MMIO) may complete
     * together with the next one before KVM reports a step (seen on
     * kvm_pvm: `mov [apic], eax; sti` gave one step exit).
     */
    if (t->pred_valid && t->pred.kind == VBTS_KIND_UNKNOWN)
        t->pred.shadow = true;
}

void trace_note_event(struct vcpu *cpu, int vector)
{
    /* Only a stepping vCPU has a prediction for the event to settle. */
    if (cpu->trace && cpu->trace->stepping)
        cpu->trace->event_vector = vector;
}

/*
 * Instructions from `lin` on whose step exits were swallowed must lead to
 * `rip`: up to SKIP_MAX of them, straight-line, the last of which may be a
 * branch.  On success the record that branch makes, if any, is in *rec.
 * (kvm_pvm has been seen to swallow more than one step in a row.)
 */
#define SKIP_MAX 4

static bool explain_skip(const struct cpu_view *v, uint64_t lin, uint64_t rip,
                         bool allow_indirect, struct branch_pred *rec, bool *has_rec)
{
    struct branch_pred p;
    const char *why;
    *has_rec = false;
    for (int n = 0; n < SKIP_MAX; n++) {
        if (branch_predict_at(v, lin, &p, &why))
            return false;
        if (p.kind == VBTS_KIND_UNKNOWN) {
            lin += p.len;
            if (rip == lin)
                return true;
            continue;
        }
        if (p.kind == VBTS_KIND_JCC && rip == lin + p.len)
            return true;        /* a conditional branch not taken */
        if (p.target_known ? rip != p.target : !(allow_indirect && n == 0))
            return false;       /* an indirect target is taken on trust only right away */
        *rec = p;
        rec->target = rip;
        *has_rec = true;
        return true;
    }
    return false;
}

static void emit_skipped(struct trace_vcpu *t, const struct branch_pred *s)
{
    emit_branch(t, s->from, s->target, s->kind, s->cpl);
}

/* An unexplained event on a vector from 32 up is an external interrupt. */
static unsigned event_kind(unsigned kind, int vector)
{
    return kind == VBTS_KIND_EXCEPTION && vector >= 32 ? VBTS_KIND_INTERRUPT : kind;
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
    int found = -1, exact = -1, hinted = -1, matches = 0;
    uint64_t handler = 0, h;
    struct branch_pred skip;
    bool has_skip, hs;

    for (unsigned vec = only ? (unsigned)hint : 0; vec < (only ? (unsigned)hint + 1 : 256u); vec++) {
        if (idt_handler(v, vec, &h))
            continue;
        if (h == rip) {
            if (exact < 0 || (int)vec == hint)
                exact = vec;
            continue;
        }
        if (!explain_skip(v, h, rip, true, &skip, &hs))
            continue;
        matches++;
        if (found < 0 || (int)vec == hint) {
            found = vec;
            if ((int)vec == hint)
                hinted = vec;
        }
    }
    /* Vectors from 32 up are external interrupts (in-kernel APIC, PIT). */
    if (exact >= 0) {
        idt_handler(v, exact, &handler);
        emit_branch(t, from, handler, event_kind(kind, exact), cpl);
        return 0;
    }
    if (found < 0 || (matches > 1 && hinted < 0)) {
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "trace lost step synchronisation: the instruction at 0x%llx was "
                       "followed by 0x%llx, which %s", (unsigned long long)from,
                       (unsigned long long)rip,
                       found < 0 ? "no IDT handler explains" : "several IDT handlers explain");
        return -1;
    }
    idt_handler(v, found, &handler);
    explain_skip(v, handler, rip, true, &skip, &has_skip);
    emit_branch(t, from, handler, event_kind(kind, found), cpl);
    if (has_skip)
        emit_skipped(t, &skip);
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
            emit_branch(t, p->from, target, p->kind, p->cpl);
            return 0;
        }
        /* Otherwise a branch faulted itself (bad stack, bad selector, ...). */
        if (!p->target_known || p->kind != VBTS_KIND_IRET)
            return attribute_event(t, v, p->from, p->cpl, p->vector_hint, false,
                                   VBTS_KIND_EXCEPTION, rip);
        /*
         * After IRET the target's own step exit is swallowed: it either ran
         * normally or raised an event itself.
         */
        emit_branch(t, p->from, target, p->kind, p->cpl);
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
    if (rip == next || rip == p->from)
        return 0;
    if (explain_skip(v, next, rip, p->shadow, &skip, &has_skip)) {
        if (has_skip)
            emit_skipped(t, &skip);
        return 0;
    }
    return attribute_event(t, v, p->from, p->cpl, p->vector_hint, false, VBTS_KIND_EXCEPTION, rip);
}

static int on_step(struct trace_vcpu *t)
{
    struct cpu_view v;
    view_of(t, &v);
    t->steps++;
    if (t->pred_valid && settle(t, &v, cpu_linear_ip(v.regs, v.sregs)) < 0)
        return -1;
    follow_context(t, v.sregs->cr3);
    if (!t->stepping)
        return 0;       /* the step closed the window */
    return predict_next(t, false);
}

int trace_on_debug(struct trace_vcpu *t)
{
    struct kvm_debug_exit_arch *d = &t->cpu->run->debug.arch;
    if (t->bp_armed && (d->dr6 & 0x1)) {
        int waiting = WINDOW_WAITING;
        if (atomic_compare_exchange_strong(&t->cpu->vm->tcfg->window, &waiting, WINDOW_OPEN))
            vm_kick_others(t->cpu->vm);
        /* Stopped before the trigger instruction ran: trace from it on. */
        return start_tracing(t, true);
    }
    if (!t->stepping)
        return 0;
    return on_step(t);
}

/* Predict the instruction at the vCPU's RIP, the one the next step runs. */
static int predict_next(struct trace_vcpu *t, bool tolerate_skip)
{
    struct cpu_view v;
    view_of(t, &v);
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
    const struct trace_config *c = t->cpu->vm->tcfg;
    if (t->tracing && c->have_stop && rip == c->stop) {
        close_window(t);    /* the stop trigger is not executed inside the window */
        if (!t->stepping)
            return 0;
    }
    if (t->stepping && (t->pred.to_user || cpu_cpl(v.sregs) == 3) && kvm_host_cannot_step_user()) {
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "cannot trace CPL3 code on this host (kvm_pvm does not single-step "
                       "user mode); trace ends before 0x%llx", (unsigned long long)rip);
        trace_vcpu_stop(t, VBTS_STOP_UNSUPPORTED);
        return -1;
    }
    return 0;
}
