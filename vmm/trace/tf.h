/* SPDX-License-Identifier: MIT */
/* The step engine on hosts that single-step with RFLAGS.TF (tf.c). */
#ifndef VBTS_TRACE_TF_H
#define VBTS_TRACE_TF_H

#include "trace/engine.h"
#include "x86/event.h"

/* Stepping starts or stops on the vCPU. */
int tf_stepping(struct trace_vcpu *t, bool on);
/* Before KVM_RUN while stepping: exceptions and events, then TF and BLOCKIRQ re-armed. */
int tf_before_run(struct trace_vcpu *t);
/* A step exit: the instruction settled strictly, what it leaked of TF cleared. */
int tf_settle(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip);
/* The monitor raised an event and x86/event.c delivered it in software. */
void tf_event(struct trace_vcpu *t, const struct event *ev);

#endif
