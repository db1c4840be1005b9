/* SPDX-License-Identifier: MIT */
/*
 * Loops a stretch (trace/stretch.h) runs whole: rounds counted down in a
 * register, under one breakpoint at the loop's exit.
 * prefix: rounds
 */
#ifndef VBTS_TRACE_ROUNDS_H
#define VBTS_TRACE_ROUNDS_H

#include "trace/stretch.h"

/*
 * out ends at a conditional branch back to its own start: where that is
 * a counted loop whose every round is the first (docs/engine.md, "Loops
 * run whole"), out becomes the loop (stretch.rounds) and true; else false,
 * out unchanged.
 */
bool rounds_plan(const struct cpu_view *v, int max, const uint64_t *stop, struct stretch *out);

/*
 * The conditional branch at j, after s's last instruction, is a loop's
 * back edge counted down in a register (`dec r`/`sub r, 1` then `jnz`,
 * or `loop`): a stretch from the loop's head may run it whole.
 */
bool rounds_counted(const struct cpu_view *v, const struct stretch *s, uint64_t j);

#endif
