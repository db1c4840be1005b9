/* SPDX-License-Identifier: MIT */
/*
 * REP STOS and REP MOVS run by the monitor (rep.c).  A CPU that single-
 * steps with RFLAGS.TF traps after every iteration of a REP string
 * instruction: Linux clearing its 5 MiB BSS with REP STOSB would cost five
 * million step exits.
 */
#ifndef VBTS_X86_REP_H
#define VBTS_X86_REP_H

#include <stdint.h>

#include "x86/cpu.h"

/*
 * Run the iterations of the REP STOS/MOVS `in` at the vCPU's RIP that the
 * CPU would run next, for as long as each touches only RAM that its access
 * rights allow, setting accessed and dirty bits as the CPU does; stop
 * before one that would fault or reach MMIO (the CPU runs that one).  *r
 * gets the new RCX, RDI, RSI and, when the count reaches 0, RIP.  Returns
 * the iterations run: 0 when it is not such an instruction or the first
 * iteration is not plain.
 */
uint64_t rep_run(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                 const ZydisDecodedOperand *ops, struct kvm_regs *r);

#endif
