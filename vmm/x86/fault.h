/* SPDX-License-Identifier: MIT */
/*
 * Will this instruction raise an exception, and which?  Decided before it
 * runs, from its bytes (Zydis), the registers, and the guest's page
 * tables, for the exceptions that code commonly raises: #PF on its fetch
 * and its memory operands (presence, write, user, NX, SMEP, SMAP), #GP for
 * non-canonical addresses, privileged instructions and branch targets,
 * #UD (ud0/1/2), #DE (the divisor and the quotient), #NM (CR0.TS),
 * #AC, and the software interrupts (int3, int n, into, int1).
 *
 * FAULT_UNKNOWN is an honest answer: far transfers, segment loads, I/O
 * permission bitmaps, gathers and the like are not modelled; the engine
 * then runs the instruction with breakpoints on the handlers of what it
 * may raise (fault_may_raise), or checks what happened (docs/engine.md).
 */
#ifndef VBTS_X86_FAULT_H
#define VBTS_X86_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "x86/cpu.h"
#include "x86/deliver.h"

enum fault_verdict { FAULT_NONE, FAULT_YES, FAULT_UNKNOWN };

/*
 * in/ops: the instruction at the vCPU's RIP, or in == NULL when its bytes
 * could not be fetched (then a #PF on the fetch is worked out).  On
 * FAULT_YES, *d is the event to deliver.
 */
enum fault_verdict fault_predict(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                                 const ZydisDecodedOperand *ops, struct delivery *d);

/*
 * Every exception the instruction may raise, a bit per vector (0..31):
 * what a monitor that lets the CPU run it must watch for, whether
 * fault_predict can decide it or not.  #DB (the monitor's own steps and
 * breakpoints) and machine checks are left out; #DF is in wherever a
 * second exception could come on the way into a handler.  lin: where the
 * instruction is; in == NULL: its bytes do not decode (#PF, #GP or #UD).
 */
uint32_t fault_may_raise(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                         const ZydisDecodedOperand *ops);

/* The page-level checks of a data access of len bytes at lin (#PF, or none). */
/*
 * MOV to DS, ES, FS, GS or SS that faults for sure in protected or long
 * mode, from the descriptor its selector names: the vector (#GP, #NP,
 * #SS) and *error, its error code; -1 if it loads, or if that is not
 * known here (an LDT selector, tables that cannot be read).
 */
int fault_segment_load(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *ops, unsigned *error);

enum fault_verdict fault_page(const struct cpu_view *v, uint64_t lin, uint64_t len, bool write,
                              struct delivery *d);

#endif
