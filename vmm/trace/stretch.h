/* SPDX-License-Identifier: MIT */
/*
 * Stretches for the branch engine (trace/leap.c): from the vCPU's RIP,
 * the straight-line code, direct jumps and calls, and the returns and
 * indirect branches whose targets are known before they run, up to the
 * first instruction whose outcome is not (a conditional branch, a target
 * the stretch itself may change, an instruction that changes mode or
 * privilege).  A stretch runs under hardware breakpoints:
 * one on its end, one on the IDT handler of each exception its
 * instructions can raise.  Pure functions of a register snapshot and
 * guest memory (trace/known.h: what the planner knows on the way).
 */
#ifndef VBTS_TRACE_STRETCH_H
#define VBTS_TRACE_STRETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/branch.h"
#include "trace/stores.h"
#include "x86/cpu.h"

/* Instructions on one stretch: the bound that keeps `jmp $` from spinning the planner. */
#define STRETCH_MAX_INSNS 128
/* Handler breakpoints beside the end's: DR0-3 less one. */
#define STRETCH_MAX_HANDLERS 3
/* Return addresses its calls pushed, known to its returns. */
#define STRETCH_MAX_CALLS 8
/* How a stretch is planned. */
struct stretch_opts {
    int max_handlers;           /* handler breakpoints it may have */
    const uint64_t *stop;       /* it ends there at the latest (the window's stop trigger), or NULL */
    /*
     * Only this vCPU, and the host at its entries, write guest memory while
     * it runs (no other vCPU): targets may be read from memory.  Where
     * another may write them, a path that went elsewhere could reach its
     * end unseen.
     */
    bool alone;
    const struct stores *host; /* ...what the host writes at entries (kvmclock, steal time), or NULL */
    bool fork;                  /* it may fork at a conditional branch (STRETCH_MAX_LEAVES) */
};

/* What ended a stretch: the exit it costs, by cause (`vbts --stats`). */
enum stretch_end {
    STRETCH_END_JCC,            /* a conditional branch */
    STRETCH_END_RET,            /* a return whose slot it may write, or memory another may */
    STRETCH_END_INDIRECT,       /* an indirect jmp or call, the same */
    STRETCH_END_CUT,            /* an instruction it does not run (mode, I/O, INT n, ...) */
    STRETCH_END_STORE,          /* a store it cannot bound, or into the IDT or an APIC */
    STRETCH_END_HANDLERS,       /* an exception with no breakpoint slot left, or a delivery that faults */
    STRETCH_END_LOOP,           /* code it ran already: a breakpoint there would fire early */
    STRETCH_END_LIMIT,          /* its length, the window's stop, code it may have written */
    STRETCH_END_ROUNDS,         /* the exit of a loop it ran whole */
    STRETCH_END_KINDS
};

struct stretch_rec {
    uint64_t from, to;
    uint8_t kind;
};

/*
 * Paths a stretch may fork into at conditional branches, two levels deep:
 * one leaf each, under its own breakpoint.
 */
#define STRETCH_MAX_LEAVES 4

/*
 * One path's end.  Its instructions are the common ones (ins[0, nprefix))
 * and then each of its segments' ins[first, last), its records likewise
 * (a taken branch's first in the segment after it).
 */
struct stretch_leaf {
    uint64_t end;                           /* its breakpoint */
    unsigned nseg;
    struct { unsigned first, last, rec_first, rec_last; } seg[2];
    bool sp_exact;                          /* RSP there: RSP at the start plus sp_delta */
    int64_t sp_delta;
    enum stretch_end why;                   /* what ends it */
};

struct stretch {
    unsigned nins;                          /* ins[] and recs_before[] used */
    unsigned nrec;                          /* rec[] used */
    uint64_t end;                           /* the instruction after the last: its breakpoint */
    unsigned nleaf;                         /* its paths' ends (1: no fork; end, sp_*, why are leaf[0]'s) */
    struct stretch_leaf leaf[STRETCH_MAX_LEAVES];
    unsigned nprefix, nprefix_rec;          /* instructions and records common to every path */
    uint64_t fork_at;                       /* planning: the conditional branch it forks at (0: none), */
    bool fork_taken;                        /* ...taken there (a loop's way back) */
    /*
     * A loop run whole: ins[] and rec[] are one round (back to ins[0] by the
     * conditional branch at ins[nprefix]), run `rounds` times but the last,
     * which ends at that branch, not taken: the leaf.  The round counts
     * `counter` (a ZydisRegister, `counter_bits` wide) down from
     * `rounds` to 0, once each round, at ins[counted].
     */
    uint64_t rounds;
    uint16_t counter;
    uint8_t counter_bits;
    unsigned counted;
    unsigned navoid;                        /* planning: paths this one must not run into */
    const struct stretch *avoid[STRETCH_MAX_LEAVES];
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
    struct stores st;                       /* what its stores may write: no code of its own */
    unsigned ncall;                         /* its calls' pushes: the slot (at sp_delta), what went */
    struct { int64_t sp_delta; uint64_t ret; unsigned nst; } call[STRETCH_MAX_CALLS];  /* there, st.n then */
    bool alone;                             /* stretch_opts.alone */
    bool ac_changed;                        /* a STAC or CLAC: SMAP's verdicts from RFLAGS.AC no longer hold */
    bool mem_targets;                       /* a target was read from memory (not a call's own push) */
    unsigned nseed;                         /* st's first ranges: what the host writes */
    enum stretch_end why;                   /* what it ends at */
    /* Last, so that a copy takes the part in use (stretch_copy). */
    uint64_t ins[STRETCH_MAX_INSNS];        /* linear addresses, in the order they run */
    uint8_t recs_before[STRETCH_MAX_INSNS]; /* records made by the instructions before each */
    struct stretch_rec rec[STRETCH_MAX_INSNS];
};

/* *dst = *src, the arrays as far as they are used. */
void stretch_copy(struct stretch *dst, const struct stretch *src);

/*
 * Plan the stretch that starts at the vCPU's RIP.  False: the instruction
 * at RIP cannot start one (it changes mode, cannot be decoded, needs an
 * exception no breakpoint can watch, or the stretch would come back to
 * it) and is single-stepped instead.
 */
bool stretch_plan(const struct cpu_view *v, const struct stretch_opts *o, struct stretch *out);

/*
 * The planner's steps, for its forks (trace/fork.h) and loops
 * (trace/rounds.h).  stretch_extend: add the instruction at lin if it
 * fits (at most max handlers), else false and s->why says why.
 * stretch_run: extend from `from` as far as it goes, to `limit`
 * instructions at most, and set s->end.  stretch_path: one way on from a
 * fork at s (its common part ins[0, base)), cut short while its leaf
 * lies on the way of another; false if it cannot be.
 */
bool stretch_extend(const struct cpu_view *v, uint64_t lin, int max, const uint64_t *stop,
                    struct stretch *s, uint64_t *next);
void stretch_run(const struct cpu_view *v, int max, const uint64_t *stop, unsigned limit, uint64_t from,
                 struct stretch *s);
bool stretch_path(const struct cpu_view *v, int max, const uint64_t *stop, unsigned base, unsigned limit,
                  uint64_t from, const struct stretch *s, struct stretch *out);

/* Where `lin` lies on the stretch: its index, or -1. */
int stretch_index(const struct stretch *s, uint64_t lin);

/* The leaf whose end is `lin`, or -1. */
int stretch_leaf_at(const struct stretch *s, uint64_t lin);

/* A path instruction i lies on: a leaf of it (ways that share it agree to there), or -1 for the common ones. */
int stretch_path_of(const struct stretch *s, unsigned i);

#endif
