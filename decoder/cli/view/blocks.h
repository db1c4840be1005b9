/* SPDX-License-Identifier: MIT */
/*
 * The code a trace ran, as straight runs: from a branch's target to the
 * next branch of that vCPU, the branch's first byte included (instruction
 * lengths are not in a trace; tools that map runs to instructions or lines
 * need only where those start).  An interrupt's `from` had not run yet:
 * its run stops before it.  For the coverage views (drcov, lcov).
 */
#ifndef VBTS_DECODER_VIEW_BLOCKS_H
#define VBTS_DECODER_VIEW_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>
#include <vbts/decode.h>

/* A straight run longer than this is not one: records were lost. */
#define BLOCKS_RUN_MAX (1u << 20)

struct blocks {
    uint64_t next[UINT16_MAX + 1];  /* where the vCPU's run starts, + 1; 0: unknown */
    uint8_t kind[UINT16_MAX + 1];   /* the kind of the branch into it */
};

struct blocks_run {
    uint64_t start, len;    /* [start, start + len) */
    bool entered;           /* a branch led to start (else: a vCPU's first branch) */
    uint8_t kind;           /* that branch's kind */
};

/*
 * Feed the next record; true if it ends a run.  Before a vCPU's first
 * branch (and after lost records) where it ran is unknown: that branch's
 * own first byte is the run, not entered.
 */
bool blocks_next(struct blocks *b, const struct vbts_event *ev, struct blocks_run *run);

#endif
