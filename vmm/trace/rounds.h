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

#endif
