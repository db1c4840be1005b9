/* SPDX-License-Identifier: MIT */
/*
 * The seam between the engines and the host (docs/architecture.md).  An
 * engine knows its strategy: the step engine (step.c) runs one instruction
 * per exit, the branch engine (leap.c) runs stretches under breakpoints
 * and steps what they cannot run.  How a single step is armed, what KVM
 * shows after it, how an event the guest took shows itself, whether
 * interrupts are held back while it runs (KVM_GUESTDBG_BLOCKIRQ) and how
 * user mode is stepped differ per host; they live behind this interface,
 * one file per kind of host:
 *
 *   pvm.c  kvm_pvm: the host emulates CPL0 code and steps it natively,
 *          handlers included, but swallows some step exits; user mode
 *          through the guest's own #DB handler (ustep.c)
 *   tf.c   stock KVM (VMX, SVM): steps with RFLAGS.TF, which event
 *          delivery clears, so events are delivered by the monitor or
 *          caught at their handlers by breakpoints
 *
 * Neither engine relies on RFLAGS.RF: no breakpoint is ever placed at the
 * RIP the vCPU resumes at (kvm_pvm ignores RF, measured).
 */
#ifndef VBTS_TRACE_BACKEND_H
#define VBTS_TRACE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/engine.h"
#include "x86/debug.h"
#include "x86/event.h"

struct backend {
    const char *name;
    /* Every single step lets pending interrupts in (no BLOCKIRQ while the host steps). */
    bool steps_let_in;
    /* User mode is stepped through the guest's own RFLAGS.TF (trace/ustep.c). */
    bool user_by_tf;
    /*
     * The host delivers nested events otherwise than the CPU, and may shut
     * the guest down where the CPU does not: a shutdown the monitor did not
     * foresee (trace/nested.c) stops the trace, not ends the guest.
     */
    bool own_shutdowns;
    /*
     * Whether the vCPU is stepped (on: the window, a recording, guest BTS),
     * asked whenever that is decided again (t->stepping is the old
     * answer); w is the debug state about to be set, which the host may
     * add to (BLOCKIRQ).
     */
    int (*stepping)(struct trace_vcpu *t, bool on, struct debug_want *w);
    /*
     * Before KVM_RUN: one single step of the instruction in t->pred, and
     * whatever must come before it (an exception foreseen, an interrupt
     * taken, an instruction the host cannot run), its records written.
     * let_in: interrupts pending for the vCPU are let in now (the branch
     * engine asks at least every millisecond; the step engine leaves it
     * to the host).
     */
    int (*arm_step)(struct trace_vcpu *t, bool let_in);
    /* The step ended with the vCPU at rip: the records of what ran.  -1 ends the trace. */
    int (*settle)(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip);
    /*
     * A debug exit the engine did not take: hits of breakpoints the host
     * set for itself (a user-mode step's #DB handler, exception handlers).
     * True if it was one, settled.
     */
    bool (*debug_exit)(struct trace_vcpu *t, unsigned hits);
    /* The monitor raised an event on the vCPU (x86/event.c). */
    void (*event)(struct trace_vcpu *t, const struct event *ev);
    /* The monitor completes the instruction at RIP (port I/O, MMIO). */
    void (*completion)(struct trace_vcpu *t);
    /* Can p, at CPL3 or into it, be stepped here?  If not, the trace stops before it. */
    bool (*user_ok)(const struct trace_vcpu *t, const struct cpu_view *v, const struct branch_pred *p);
    /* May a stretch run from here (the vCPU is not halted, no event is due first)? */
    bool (*may_leap)(struct trace_vcpu *t, const struct cpu_view *v);
};

extern const struct backend backend_pvm, backend_tf;

#endif
