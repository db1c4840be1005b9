/* SPDX-License-Identifier: MIT */
/*
 * The branch engine: the vCPU runs from branch to branch under hardware
 * breakpoints (trace/stretch.h), and the step engine (trace/step.c) takes
 * the instructions a stretch cannot run.  docs/engine.md argues why the
 * records are the step engine's, events included.
 */
#ifndef VBTS_TRACE_LEAP_H
#define VBTS_TRACE_LEAP_H

#include <stdint.h>

#include "core/vcpu.h"

struct trace_vcpu;

/* Before a KVM_RUN of a vCPU the engine follows: a stretch armed, or a step. */
int leap_before_run(struct trace_vcpu *t);
/* A breakpoint of the stretch in flight fired (hits: bit 0 its end, bit 1+i handler i). */
enum vcpu_verdict leap_on_debug(struct trace_vcpu *t, unsigned hits);
/* The run ends or leaves the window mid-stretch: the records of what ran, up to RIP. */
void leap_flush(struct trace_vcpu *t);
/*
 * A debugger stops the vCPU between runs: the stretch in flight ends at
 * RIP, its records so far written.  -1 (the trace ended, said) if RIP is
 * not on it.
 */
int leap_pause(struct trace_vcpu *t);
/* The same, up to the instruction at `at` (an event the monitor raised came there). */
void leap_flush_at(struct trace_vcpu *t, uint64_t at);

#endif
