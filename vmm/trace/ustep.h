/* SPDX-License-Identifier: MIT */
/*
 * User-mode steps on kvm_pvm.  That host single-steps CPL0 code, which it
 * emulates, but not CPL3 code, which it runs natively, and no hardware
 * breakpoint fires there.  TF set in the guest's own RFLAGS does trap
 * there: the #DB goes to the guest's IDT vector 1, whose handler runs at
 * CPL0, where a breakpoint on its first instruction stops the vCPU before
 * it does anything.  The monitor then puts the vCPU back where the frame
 * says (RIP, RSP, RFLAGS, CS, SS): one user instruction ran, as a step.
 * docs/engine.md has the details and what the guest can notice.
 */
#ifndef VBTS_TRACE_USTEP_H
#define VBTS_TRACE_USTEP_H

#include <stdbool.h>

#include "core/vcpu.h"
#include "trace/branch.h"
#include "x86/cpu.h"

struct trace_vcpu;

/* Can the step about to run (p, at CPL v) be taken in user mode, or into it, here? */
bool ustep_can(const struct cpu_view *v, const struct branch_pred *p);
/* Before a step on kvm_pvm: a user SYSCALL run in software, TF where the step needs it. */
int ustep_before_run(struct trace_vcpu *t);
/* The engine stops following the vCPU with a user step armed: the monitor's TF goes. */
void ustep_cancel(struct trace_vcpu *t);
/* A debug exit while a user step is armed: true if it ended that step (and was settled). */
bool ustep_on_debug(struct trace_vcpu *t, unsigned hits);

#endif
