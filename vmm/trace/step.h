/* SPDX-License-Identifier: MIT */
/* The single-step engine (step.c). */
#ifndef VBTS_TRACE_STEP_H
#define VBTS_TRACE_STEP_H

#include "trace/engine.h"

int step_update(struct trace_vcpu *t);
int step_sync_regs(struct trace_vcpu *t);
int step_predict(struct trace_vcpu *t, bool tolerate_skip);
enum vcpu_verdict step_on_debug(struct trace_vcpu *t, unsigned hits);
/* The instruction stepped has completed (a step exit, or one KVM owes and never gives). */
int step_complete(struct trace_vcpu *t);
void step_note_completion(struct trace_vcpu *t);
void step_note_event(struct trace_vcpu *t, int vector);
int step_bts_changed(struct trace_vcpu *t);

#endif
