/* SPDX-License-Identifier: MIT */
/*
 * Every exit of a vCPU the engine follows is checked against what it
 * predicted (exitcheck.c): KVM stops a vCPU at an instruction it must
 * complete (port I/O, MMIO, an MSR, an emulation failure), past a HLT it
 * ran, or on a stretch in flight.  A vCPU found anywhere else ran on
 * without a step exit: the host reads that as a step, which either
 * explains it (steps the host swallowed) or ends the trace with a line
 * naming both addresses.  Without this check an event the engine did not
 * see could run the guest on untraced to its end, and the guest's own
 * status would hide a short trace.
 */
#ifndef VBTS_TRACE_EXITCHECK_H
#define VBTS_TRACE_EXITCHECK_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

enum exitcheck_verdict {
    EXITCHECK_NONE,     /* not an exit to check: the engine's own (debug), a kick, a failed entry */
    EXITCHECK_AT,       /* at the predicted instruction, which has not run */
    EXITCHECK_OWED,     /* ...and which KVM completes at the next run (I/O, MMIO, MSR) */
    EXITCHECK_RAN,      /* elsewhere: what ran since the step began is read as a step */
    EXITCHECK_GONE,     /* the vCPU's state was reset with the exit (SVM's shutdown): nothing to check */
};

/*
 * A single step of the instruction at `predicted` was armed, and the vCPU
 * exited for `reason` at `rip`; `reset` says its registers are the reset
 * state (CS:IP f000:fff0) rather than where it stopped.
 */
enum exitcheck_verdict exitcheck_step(uint32_t reason, uint64_t predicted, uint64_t rip, bool reset);

/* The registers KVM reports are the reset state: a shutdown that reset the vCPU. */
bool exitcheck_reset(const struct kvm_regs *r, const struct kvm_sregs *s);

#endif
