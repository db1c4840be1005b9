/* SPDX-License-Identifier: MIT */
/*
 * The single-step engine.  Before each step we predict, from the
 * instruction and the registers, what it does to control flow
 * (trace/branch.c); the host arms the step and, after it, reads where the
 * vCPU went against the prediction (backend.h): agreement yields the BTS
 * record exactly; an event the guest took is attributed to its vector, or
 * the trace stops with a line rather than guess.
 */
#include "trace/engine.h"
#include "trace/step.h"
#include "trace/window.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "export/sink.h"
#include "guest_bts/guest_bts.h"
#include "trace/backend.h"
#include "trace/catch.h"
#include "trace/leap.h"
#include "x86/arch.h"
#include "x86/debug.h"

/* KVM's debug state follows from what this vCPU needs: steps, or the start trigger. */
int step_update(struct trace_vcpu *t)
{
    bool step = t->tracing || t->passing || t->recording || guest_bts_on(t->tr->gbts, t->cpu);
    leap_flush(t);
    struct debug_want w = { .step = step };
    if (t->bp_armed) {
        w.nbp = 1;
        w.bp[0] = t->tr->cfg->start;
    }
    if (step && !t->stepping && gdbg_start(t) < 0)
        return -1;
    if (t->tr->be->stepping(t, step, &w) < 0)
        return -1;
    t->leap.armed = false;
    if (debug_set(t->cpu, DEBUG_TRACE, &w) < 0)
        return -1;
    if (!step && t->stepping && gdbg_end(t) < 0)
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

int step_complete(struct trace_vcpu *t)
{
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    /* Only an NMI, SMI or INIT ends such a halt (trace.c, before the next run). */
    t->halted_off = t->pred_valid && arch_vm(t->cpu->vm)->irqchip && t->pred.mnemonic == ZYDIS_MNEMONIC_HLT &&
                    rip == t->pred.from + t->pred.len && !(v.regs->rflags & RFLAGS_IF);
    if (t->pred_valid && (t->tr->be->settle(t, &v, rip) < 0 || gdbg_after(t, &v, rip) < 0))
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

/* A debug exit of ours: a stretch's, the host's own, the start trigger's breakpoint (hits), or a step. */
enum vcpu_verdict step_on_debug(struct trace_vcpu *t, unsigned hits)
{
    if (t->leap.flight)
        return leap_on_debug(t, hits);
    if (t->stepping && t->tr->be->debug_exit(t, hits))
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
        /*
         * The bytes cannot be fetched (a #PF on the fetch) or decoded (an
         * encoding that is not an instruction: #UD); the next step shows
         * which.
         */
        memset(&t->pred, 0, sizeof(t->pred));
        t->pred.from = rip;
        t->pred.cpl = cpu_cpl(v.sregs);
        t->pred.vector_hint = (int16_t)cpu_undecodable_vector(&v, rip);
        if (t->pred.vector_hint < 0)
            t->pred.vector_hint = 14;
    }
    if (tolerate_skip && t->pred.kind == VBTS_KIND_UNKNOWN)
        t->pred.shadow = true;
    t->pred_valid = true;
    /* What the step's reading compares its end with. */
    t->before_regs = *v.regs;
    t->before_sregs = *v.sregs;
    const struct trace_config *c = t->tr->cfg;
    if (t->tracing && c->have_stop && rip == c->stop) {
        window_close(t);    /* the stop trigger is not executed inside the window */
        if (!t->stepping)
            return 0;
    }
    if (t->stepping && (t->pred.to_user || cpu_cpl(v.sregs) == 3) &&
        !t->tr->be->user_ok(t, &v, &t->pred)) {
        if (t->tr->sink)
            sink_stop(t->tr->sink, t->cpu->index, VBTS_STOP_UNSUPPORTED);
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "cannot trace CPL3 code on this host (kvm_pvm steps user mode only through "
                       "a 64-bit guest's #DB handler, entered by IRETQ or SYSRET); trace ends "
                       "before 0x%llx", (unsigned long long)rip);
        return -1;
    }
    if (t->stepping) {
        int g = gdbg_before(t, &v);
        if (g != 0)
            return g < 0 ? -1 : step_predict(t, false);    /* at the guest's #DB handler now */
    }
    return 0;
}
