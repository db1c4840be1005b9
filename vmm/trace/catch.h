/* SPDX-License-Identifier: MIT */
/* The start trigger caught by hiding its page, where breakpoints do not fire (catch.c). */
#ifndef VBTS_TRACE_CATCH_H
#define VBTS_TRACE_CATCH_H

#include "core/vcpu.h"
#include "trace/engine.h"

/* Hide the start trigger's page: 0, or -1 with the error set.  Before any vCPU runs. */
int catch_arm(struct trace *tr);
/* An emulation-failure exit: a fetch from the hidden page begins a passage. */
enum vcpu_verdict catch_on_fetch(struct trace_vcpu *t);
/*
 * A step boundary during a passage, the vCPU at `rip`: 1 the trigger is
 * reached and the window open, 0 stepping on or the page left behind,
 * -1 with the error set.
 */
int catch_step(struct trace_vcpu *t, uint64_t rip);
/* The window is open: this vCPU's passage ends and the page is the guest's again. */
int catch_window_open(struct trace_vcpu *t);

#endif
