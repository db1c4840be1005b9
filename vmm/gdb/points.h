/* SPDX-License-Identifier: MIT */
/*
 * Inside gdb/: gdb's breakpoints and watchpoints on x86.  Each is a debug
 * register (DR0-3); where the host does not fire one, the vCPU steps and
 * every step is checked (or hide.c hides the page of execution points).
 */
#ifndef VBTS_GDB_POINTS_H
#define VBTS_GDB_POINTS_H

#include <stdbool.h>
#include <stdint.h>

#include "gdb/target.h"

/* Z/z: 0 done, 1 not supported, -1 refused with *why (ctx: the gdb). */
int points_set(void *ctx, bool insert, enum stub_point type, uint64_t addr, uint64_t kind,
               const char **why);
/* A point the host cannot fire: checked at each step. */
bool points_by_step(const struct gdb *g, const struct point *p);
bool points_any_by_step(const struct gdb *g);
/* KVM's debug state for what gdb wants of vCPU v now (under the lock). */
void points_want(const struct gdb *g, struct gdb_vcpu *v, struct debug_want *w);
/* After a step: the point the vCPU reached (at an execution point, a watched write), or -1. */
int points_reached(struct gdb *g, struct vcpu *cpu);

#endif
