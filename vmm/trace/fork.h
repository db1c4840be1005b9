/* SPDX-License-Identifier: MIT */
/*
 * Forks of a stretch (trace/stretch.h) at conditional branches: both
 * ways planned, two levels deep, each to a leaf under its own breakpoint.
 * prefix: fork
 */
#ifndef VBTS_TRACE_FORK_H
#define VBTS_TRACE_FORK_H

#include "trace/stretch.h"

/*
 * out ends at a conditional branch: where the ways on can be told apart
 * by their leaves (docs/engine.md, "Forks"), out becomes the tree, with
 * at most max handler breakpoints beside its first leaf; else unchanged.
 */
void fork_plan(const struct cpu_view *v, int max, const uint64_t *stop, struct stretch *out);

#endif
