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
#include "x86/eval.h"

/*
 * Instructions on one stretch without loops (its forks' ways, a loop's
 * round): the bound that keeps `jmp $` from spinning the planner.
 */
#define STRETCH_MAX_INSNS 128
/* ...and through loops whose rounds it computes (the branch engine's stretch, one vCPU alone). */
#define STRETCH_MAX_PATH 32768
/* ...where interrupts wait for its end (IF=1, KVM_GUESTDBG_BLOCKIRQ), as a loop run whole's do. */
#define STRETCH_MAX_PATH_IF 4096
/* Handler breakpoints beside the end's: DR0-3 less one. */
#define STRETCH_MAX_HANDLERS 3
/* Return addresses its calls pushed, known to its returns. */
#define STRETCH_MAX_CALLS 8
/* Pages of paging entries its accesses walk: a load from one is not known (the CPU sets A and D there). */
#define STRETCH_MAX_PT 24
/* Stores whose value it knows, the last to write their bytes: a load of just those bytes reads it. */
#define STRETCH_MAX_FWD 8
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
    /*
     * Registers and flags are followed through the instructions it can
     * compute (x86/eval.h): a conditional branch they decide goes on, and
     * loads from memory only this vCPU writes (alone) are values.
     */
    bool eval;
    bool no_loops;              /* ...but it does not run through loops (instructions again) */
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
    uint32_t regs_known;                    /* general registers its path's evaluation knows there, */
    uint64_t gpr[16];                       /* ...their values (leap.c checks them) */
};

struct stretch {
    /* Where its instructions and records are kept (stretch_attach): planning neither clears nor copies these. */
    uint64_t *ins;                          /* linear addresses, in the order they run */
    struct stretch_rec *rec;
    uint32_t *key;                          /* a loop's: the known registers before each (stretch_key) */
    uint16_t *known;                        /* ...which they are */
    uint16_t *recs_before;                  /* records made by the instructions before each */
    uint8_t *first;                         /* 1 where the instruction is on the stretch for the first time */
    uint32_t *where;                        /* an address's first index: (gen << 16 | index + 1) by its hash */
    unsigned cap, nwhere;                   /* instructions they hold; where[]'s entries, a power of 2 */
    unsigned gen;                           /* where[]'s entries of this plan */
    /* The plan, from here on. */
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
    struct eval_regs now;                   /* registers and flags after its last instruction: unknown, the */
                                            /* ones its instructions write and it did not compute */
    uint32_t now_key;                       /* ...the known ones' key (stretch_key) */
    bool eval;                              /* stretch_opts.eval (and alone) */
    bool mmio_maybe;                        /* an access not known to be in RAM: loads are not known after it */
    unsigned npt;                           /* pages of the paging entries its accesses walked */
    uint64_t pt[STRETCH_MAX_PT];
    unsigned nfwd;
    struct { uint64_t gpa, val; unsigned len; } fwd[STRETCH_MAX_FWD];
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
    bool loops;                             /* it may run an instruction again (a loop whose rounds it computes), */
    unsigned max_path;                      /* ...to this many instructions */
    bool came_back;                         /* planning: it came back to its first instruction */
    bool ran_out;                           /* it ran out of room in a loop: cut back to before its second round */
    bool at_set;                            /* planning: the registers the instruction at at_lin computes */
    uint64_t at_lin;                        /* ...its operands from (known_begin) */
    struct kvm_regs at;
};

/* The bytes stretch_attach needs for `cap` instructions (at most 65535). */
#define STRETCH_MEM(cap) ((size_t)(cap) * (sizeof(uint64_t) + sizeof(struct stretch_rec) + sizeof(uint32_t) + \
                                           2 * sizeof(uint16_t) + sizeof(uint8_t) + 2 * sizeof(uint32_t)) + 8)

/* s keeps up to `cap` instructions in mem (STRETCH_MEM(cap) bytes, 8-aligned, zeroed), and has none. */
void stretch_attach(struct stretch *s, void *mem, unsigned cap);

/* s has no instructions, nothing planned. */
void stretch_reset(struct stretch *s);

/* *dst = *src, the arrays as far as they are used (dst holds as many: else the monitor aborts). */
void stretch_copy(struct stretch *dst, const struct stretch *src);

/* Add the instruction at lin to s, after its records so far (there is room). */
void stretch_append(struct stretch *s, uint64_t lin);

/*
 * The general registers `known` (bits, Zydis's order) as a key, their low
 * halves outside 64-bit mode: where a loop's instruction runs again, the
 * registers before it say which time.
 */
uint32_t stretch_key(const uint64_t gpr[16], uint16_t known, bool long64);
/* s->now_key after s->now changed from *was, in the general registers `written` (bits) at most. */
void stretch_key_update(struct stretch *s, const struct eval_regs *was, uint32_t written, bool long64);

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

/* The registers s's evaluation knows at its end, for its leaf l (RSP aside: sp_delta says). */
void stretch_leaf_regs(struct stretch_leaf *l, const struct stretch *s);

/* Where `lin` lies on the stretch: its index, or -1. */
int stretch_index(const struct stretch *s, uint64_t lin);

/* The leaf whose end is `lin`, or -1. */
int stretch_leaf_at(const struct stretch *s, uint64_t lin);

/* A path instruction i lies on: a leaf of it (ways that share it agree to there), or -1 for the common ones. */
int stretch_path_of(const struct stretch *s, unsigned i);

#endif
