/* SPDX-License-Identifier: MIT */
/*
 * Stretches for the branch engine (trace/leap.c): from the vCPU's RIP,
 * the straight-line code and direct jumps and calls whose records are
 * known before they run, up to the first instruction whose outcome is
 * not (a conditional or indirect branch, a return, an instruction that
 * changes mode or privilege).  A stretch runs under hardware breakpoints:
 * one on its end, one on the IDT handler of each exception its
 * instructions can raise.  And the near branch the vCPU stands at, taken
 * in software.  Pure functions of a register snapshot and guest memory.
 */
#ifndef VBTS_TRACE_STRETCH_H
#define VBTS_TRACE_STRETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/branch.h"
#include "x86/cpu.h"

/* Instructions on one stretch: the bound that keeps `jmp $` from spinning the planner. */
#define STRETCH_MAX_INSNS 128
/* Handler breakpoints beside the end's: DR0-3 less one. */
#define STRETCH_MAX_HANDLERS 3
/* Guest-physical ranges its stores may write: a stretch with more ends before the next store. */
#define STRETCH_MAX_STORES 16

struct stretch_rec {
    uint64_t from, to;
    uint8_t kind;
};

struct stretch {
    unsigned nins;
    uint64_t ins[STRETCH_MAX_INSNS];        /* linear addresses, in the order they run */
    uint8_t recs_before[STRETCH_MAX_INSNS]; /* records made by the instructions before each */
    unsigned nrec;
    struct stretch_rec rec[STRETCH_MAX_INSNS];
    uint64_t end;                           /* the instruction after the last: its breakpoint */
    int cpl;
    uint64_t cs_base;                       /* an exception frame's return address is CS-relative */
    int nh;
    uint64_t handler[STRETCH_MAX_HANDLERS]; /* distinct handler entries, their breakpoints */
    uint32_t vectors[STRETCH_MAX_HANDLERS]; /* the vectors (bits 0..31) each serves */
    uint32_t written;                       /* general registers (bit per id) its instructions write */
    uint64_t sp_span;                       /* how far pushes, pops, calls may have moved RSP (~0: unknown) */
    bool sp_exact;                          /* RSP at the end is RSP at the start plus sp_delta: */
    int64_t sp_delta;                       /* an event nobody watched moves it (leap.c checks) */
    uint32_t dry;                           /* vectors whose delivery was checked, and at which sp_delta: */
    int64_t dry_delta[32];                  /* the frame goes where RSP is when one is raised */
    unsigned nst;
    struct { uint64_t gpa, len; } st[STRETCH_MAX_STORES];  /* what its stores may write: no code of its own */
};

/*
 * Plan the stretch that starts at the vCPU's RIP, with at most
 * max_handlers handler breakpoints and ending at *stop at the latest
 * (the window's stop trigger; NULL: none).  False: the instruction at RIP
 * cannot start one (it changes mode, cannot be decoded, needs an
 * exception no breakpoint can watch, or the stretch would come back to
 * it) and is single-stepped instead.
 */
bool stretch_plan(const struct cpu_view *v, int max_handlers, const uint64_t *stop, struct stretch *out);

/*
 * The instruction at RIP is the near branch p (jcc, jmp, call, ret, direct
 * or indirect) and cannot fault: take it in software on r, pushing or
 * popping the return address in guest memory with the accessed and dirty
 * bits the CPU sets.  v sees the registers before it (r may be v->regs).
 * False, with nothing changed, for anything else: it runs on the vCPU.
 */
bool stretch_take(const struct cpu_view *v, const struct branch_pred *p, struct kvm_regs *r);

/* Where `lin` lies on the stretch: its index, or -1. */
int stretch_index(const struct stretch *s, uint64_t lin);

#endif
