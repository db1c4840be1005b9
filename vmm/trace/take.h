/* SPDX-License-Identifier: MIT */
/*
 * The near branch the vCPU stands at, taken in software at a stop of the
 * branch engine (trace/leap.c), as the CPU takes it.
 * prefix: take
 */
#ifndef VBTS_TRACE_TAKE_H
#define VBTS_TRACE_TAKE_H

#include <stdbool.h>

#include "trace/branch.h"
#include "x86/cpu.h"

/*
 * The instruction at RIP is the near branch p (jcc, jmp, call, ret, direct
 * or indirect) and cannot fault: take it in software on r, pushing or
 * popping the return address in guest memory with the accessed and dirty
 * bits the CPU sets.  v sees the registers before it (r may be v->regs).
 * False, with nothing changed, for anything else: it runs on the vCPU.
 */
bool take_branch(const struct cpu_view *v, const struct branch_pred *p, struct kvm_regs *r);

#endif
