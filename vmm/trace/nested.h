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
#include "x86/deliver.h"

/* Whether the instruction at rip raises, for sure, an exception whose delivery faults: then *d is it. */
bool nested_due(const struct cpu_view *v, uint64_t rip, struct delivery *d);

/*
 * The instruction in t->pred raises an exception for sure whose delivery
 * faults on its stack or selector: the monitor delivers it in software as
 * the CPU does and records it, and the vCPU stands at the handler it ends
 * at (0); where the CPU shuts down the guest ends so (-1, a triple fault);
 * where that is not modelled the trace stops (-1, status 125 and one
 * line).  0 when there is nothing to do.
 */
int nested_ahead(struct trace_vcpu *t);

#endif
