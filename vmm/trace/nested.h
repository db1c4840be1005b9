/* SPDX-License-Identifier: MIT */
/*
 * kvm_pvm and nested events (an exception whose delivery faults): what
 * the trace does before an instruction that raises one.
 * prefix: nested
 */
#ifndef VBTS_TRACE_NESTED_H
#define VBTS_TRACE_NESTED_H

#include "trace/engine.h"
#include "x86/cpu.h"

/*
 * The instruction in t->pred raises an exception for sure whose delivery
 * faults on its stack or selector: the trace stops before it (-1, status
 * 125 and one line); else 0.
 */
int nested_ahead(struct trace_vcpu *t, const struct cpu_view *v);

#endif
