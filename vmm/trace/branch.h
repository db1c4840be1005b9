/* SPDX-License-Identifier: MIT */
/*
 * What one x86 instruction does to control flow, decided by Zydis: is it a
 * branch, of which BTS kind, is a conditional one taken, and where does it
 * go.  Evaluated on the register state *before* the instruction runs, so the
 * engine can check what single-stepping then shows.
 */
#ifndef VBTS_TRACE_BRANCH_H
#define VBTS_TRACE_BRANCH_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

#include "x86/cpu.h"

struct branch_pred {
    uint64_t from;          /* linear address of the instruction */
    uint8_t len;
    uint8_t kind;           /* enum vbts_kind; VBTS_KIND_UNKNOWN: not a branch */
    bool taken;             /* branches: taken (unconditional ones always are) */
    bool target_known;      /* target could be computed before execution */
    bool shadow;            /* MOV/POP SS: the next instruction gets no step exit */
    bool to_user;           /* far return or sysret to CPL3 */
    uint8_t cpl;            /* privilege level the instruction runs at */
    int16_t vector_hint;    /* exception it raises for sure (ud2: #UD), or -1 */
    uint8_t vector;         /* INT n, INT3: the vector */
    uint16_t mnemonic;      /* ZydisMnemonic, for what follows it (PUSHF, SYSCALL, HLT) */
    bool loads_flags;       /* POPF, IRET: it loads RFLAGS from flags_image (trace/gdbg.c) */
    int8_t dr;              /* MOV to or from DR0-7: which, else -1 */
    bool dr_write;          /* ...to it */
    uint8_t irq_change;     /* it may make an interrupt deliverable at once: enum cpu_irq */
    uint64_t target;        /* linear target when taken && target_known */
    uint64_t flags_image;
};

/*
 * Decode the instruction at the current RIP and predict its control flow.
 * Returns 0, or -1 with *why set when the bytes cannot be read or decoded.
 */
int branch_predict(const struct cpu_view *v, struct branch_pred *p, const char **why);

/*
 * Same, for an instruction at linear address `lin` whose step exit was
 * swallowed (handler entry, after IRET, after MOV SS).  Register values are
 * those seen after it ran, so only control flow that does not depend on them
 * is predicted: targets of direct branches and non-branches (a POPF's
 * image is the one it popped).  Conditional
 * branches report taken=true with their target (taken or not is unknown);
 * a near RET the target it popped (the slot below RSP); other indirect
 * ones target_known=false.
 */
int branch_predict_at(const struct cpu_view *v, uint64_t lin, struct branch_pred *p,
                      const char **why);
/* The same, for the instruction decoded there (cpu_decode_ref). */
void branch_predict_decoded(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction *in,
                            const ZydisDecodedOperand *ops, struct branch_pred *p);

/*
 * What a frame the CPU pushes while p runs holds of RFLAGS (struct
 * deliver_before): *fault_exact, one returning to p has them as before p
 * but RF and TF (not so after a CMPS or SCAS round, or a branch that may
 * go to p itself); *trap_kept, one returning after it has the system
 * flags as before (p is no POPF, IRET, CLI, STI, STAC, CLAC, system call,
 * INT, RSM, hypercall or task switch).
 */
void branch_frame_flags(const struct branch_pred *p, bool *fault_exact, bool *trap_kept);

/*
 * True if execution from `start` reaches `end` through at most `max`
 * instructions that are not branches or are conditional branches (which
 * BTS records only when taken): the --verify-flow check.
 */
bool branch_straight_line(const struct cpu_view *v, uint64_t start, uint64_t end, unsigned max);

#endif
