/* SPDX-License-Identifier: MIT */
/*
 * vCPUs that wait for an event the engine must not step past: an AP for
 * its INIT and SIPI, a halted vCPU for what wakes it (docs/engine.md,
 * "vCPUs that wait").  Each keeps the vCPU out of KVM_RUN until it may
 * run, and leaves the prediction at the instruction it will run.
 */
#ifndef VBTS_TRACE_WAIT_H
#define VBTS_TRACE_WAIT_H

#include "trace/engine.h"

/* Sleeps *ns nanoseconds, then doubles *ns while it is below max_ns: a poll's growing pause. */
void wait_backoff(long *ns, long max_ns);

/* Before a vCPU not yet seen started runs: waits out INIT_RECEIVED, predicts from the SIPI's entry. */
int wait_start(struct trace_vcpu *t);

/*
 * After a HLT: the vCPU halted until an NMI, SMI or INIT, or with
 * interrupts on an interrupt KVM would deliver; or the window closes.
 */
int wait_halted(struct trace_vcpu *t);

/*
 * The monitor runs the HLT at the prediction (RIP past it, an STI's shadow
 * ended), ends its step, then wait_halted() and, after an INIT,
 * wait_start().  For hosts that do not halt a single-stepped HLT.
 */
int wait_hlt(struct trace_vcpu *t);

#endif
