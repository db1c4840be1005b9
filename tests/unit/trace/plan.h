/* SPDX-License-Identifier: MIT */
/*
 * For the planner's tests (test_stretch.c, test_known.c, test_fork.c,
 * test_rounds.c): the stretch planned from the test machine's vCPU, and
 * gates for the exceptions a stretch of theirs may raise.
 */
#ifndef VBTS_TEST_TRACE_PLAN_H
#define VBTS_TEST_TRACE_PLAN_H

#include "../x86/machine.h"
#include "trace/stretch.h"

static struct stretch s;
static uint64_t s_mem[STRETCH_MEM(STRETCH_MAX_PATH) / 8 + 1];

/* One 64-bit gate per exception a stretch of ours may raise: #DE, #SS, #GP, #PF. */
static inline void gates(void)
{
    gate64(0, 0x30000, 0x08, 0xe, 0, 0);
    gate64(12, 0x31000, 0x08, 0xe, 0, 0);
    gate64(13, 0x32000, 0x08, 0xe, 0, 0);
    gate64(14, 0x33000, 0x08, 0xe, 0, 0);
}

/* No fork; alone: targets may be read from memory. */
static inline bool plan(int max_handlers, const uint64_t *stop, bool alone)
{
    const struct stretch_opts o = { max_handlers, stop, alone, NULL, false, false, false };
    stretch_attach(&s, s_mem, STRETCH_MAX_PATH);
    return stretch_plan(&view, &o, &s);
}

/* Forks and loops run whole, nothing computed: every conditional branch is the CPU's to decide. */
static inline bool plan_fork(int max_handlers)
{
    const struct stretch_opts o = { max_handlers, NULL, true, NULL, true, false, false };
    stretch_attach(&s, s_mem, STRETCH_MAX_PATH);
    return stretch_plan(&view, &o, &s);
}

/* As the branch engine plans in a VM of one vCPU: registers and flags computed, forks, loops run whole. */
static inline bool plan_engine(int max_handlers)
{
    const struct stretch_opts o = { max_handlers, NULL, true, NULL, true, true, false };
    stretch_attach(&s, s_mem, STRETCH_MAX_PATH);
    return stretch_plan(&view, &o, &s);
}

#endif
