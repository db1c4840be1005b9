/* SPDX-License-Identifier: MIT */
/*
 * What a stretch being planned (trace/stretch.h) knows of the vCPU at each
 * of its instructions: the registers and flags it computed (x86/eval.h),
 * where RSP is, what its stores may have written and what its calls
 * pushed.  From that: the targets of returns and indirect branches, and
 * the conditional branches, that are known before they run, and stores
 * it cannot bound.
 * prefix: known
 */
#ifndef VBTS_TRACE_KNOWN_H
#define VBTS_TRACE_KNOWN_H

#include "trace/stretch.h"

/*
 * The instruction at lin is the next the stretch may add: the registers
 * its operands use, as the stretch knows them, for the calls below on it
 * until known_note.
 */
void known_begin(const struct cpu_view *v, uint64_t lin, struct stretch *s);

/*
 * The instruction at lin may store into the IDT (the handlers watched were
 * read from it), into an APIC's page, or where the stretch cannot bound:
 * it ends the stretch.  Else its stores are noted in s->st.
 */
bool known_store_cuts(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                      const ZydisDecodedOperand *ops, struct stretch *s);

/*
 * Why the branch p at lin ends the stretch (enum stretch_end), or -1: its
 * target is known, in p->target (a return's slot or an indirect operand
 * the stretch cannot have changed, and a target the CPU accepts).
 */
int known_branch_ends(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                      const ZydisDecodedOperand *ops, struct branch_pred *p, struct stretch *s);

/*
 * The memory operands of the instruction at lin (a bit per index) that
 * cannot fault where the stretch runs it: 64-bit mode, an address the
 * stretch knows, canonical and mapped for the access by paging entries
 * no store of the stretch, nor another vCPU, may have changed.  No
 * handler need watch them.
 */
uint32_t known_safe_accesses(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                             const ZydisDecodedOperand *ops, const struct stretch *s);

/*
 * The instruction at lin is now in the stretch (its stores noted from the
 * nst-th on): what it computes, writes, moves or pushes.
 */
void known_note(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                const ZydisDecodedOperand *ops, unsigned nst, struct stretch *s);

#endif
