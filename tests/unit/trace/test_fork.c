/* SPDX-License-Identifier: MIT */
/* Forks at conditional branches: both ways planned, each to a leaf of its own, two levels deep. */
#include <criterion/criterion.h>
#include <string.h>

#include "plan.h"
#include "trace/fork.h"
#include "vbts/format.h"

TestSuite(fork, .init = machine_setup, .fini = machine_teardown);

/* Forks at a conditional branch: both ways planned, each to a leaf of its own. */

Test(fork, forks_at_a_conditional_branch_into_two_leaves)
{
    /* nop; jz L; nop; jnz (B's leaf); L: nop; jnz (A's leaf) */
    static const uint8_t a[] = { 0x90, 0x74, 0x03, 0x90, 0x75, 0x00, 0x90, 0x75, 0x00 };
    code(a, sizeof(a));
    cr_assert(plan_fork(3));
    cr_assert_eq(s.nleaf, 2);
    cr_assert_eq(s.nprefix, 2, "the nop and the jz run on both ways");
    cr_assert_eq(s.nprefix_rec, 0);
    cr_assert_eq(s.leaf[0].end, 0x10007, "taken");
    cr_assert_eq(s.leaf[0].nseg, 1);
    cr_assert_eq(s.leaf[0].seg[0].first, 2);
    cr_assert_eq(s.leaf[0].seg[0].last, 3);
    cr_assert_eq(s.leaf[0].seg[0].rec_first, 0);
    cr_assert_eq(s.leaf[0].seg[0].rec_last, 1, "the jz's record");
    cr_assert_eq(s.rec[0].from, 0x10001);
    cr_assert_eq(s.rec[0].to, 0x10006);
    cr_assert_eq(s.rec[0].kind, VBTS_KIND_JCC);
    cr_assert_eq(s.leaf[1].end, 0x10004, "not taken");
    cr_assert_eq(s.leaf[1].seg[0].first, 3);
    cr_assert_eq(s.leaf[1].seg[0].last, 4);
    cr_assert_eq(s.leaf[1].seg[0].rec_first, s.leaf[1].seg[0].rec_last, "no record");
    cr_assert_eq(stretch_leaf_at(&s, 0x10004), 1);
    cr_assert_eq(stretch_path_of(&s, 1), -1);
    cr_assert_eq(stretch_path_of(&s, 2), 0);
    cr_assert_eq(stretch_path_of(&s, 3), 1);
    cr_assert_eq(stretch_index(&s, 0x10006), 2);
    /* Not asked to: it ends at the jz. */
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.nleaf, 1);
    cr_assert_eq(s.end, 0x10001);
}

Test(fork, a_way_that_runs_into_the_other_ends_before_it)
{
    /* nop; jz L; inc eax; L: nop; jnz: not taken runs into L, which the taken way runs */
    static const uint8_t a[] = { 0x90, 0x74, 0x02, 0xff, 0xc0, 0x90, 0x75, 0x00 };
    code(a, sizeof(a));
    cr_assert(plan_fork(3));
    cr_assert_eq(s.nleaf, 2);
    cr_assert_eq(s.leaf[0].end, 0x10006);
    cr_assert_eq(s.leaf[1].end, 0x10003, "its leaf is its own first instruction: the breakpoint names the way");
    cr_assert_eq(s.leaf[1].seg[0].first, s.leaf[1].seg[0].last);
}

Test(fork, leaves_that_coincide_or_lie_on_the_way_make_no_fork)
{
    /* L: nop; dec ecx; jnz L: the taken way's leaf would be on the common part */
    static const uint8_t a[] = { 0x90, 0xff, 0xc9, 0x75, 0xfb };
    code(a, sizeof(a));
    cr_assert(plan_fork(3));
    cr_assert_eq(s.nleaf, 1);
    cr_assert_eq(s.end, 0x10003);
    cr_assert_eq(s.why, STRETCH_END_JCC);
    /* nop; jz L; L: jnz: both ways reach the jnz first */
    static const uint8_t b[] = { 0x90, 0x74, 0x00, 0x75, 0x00 };
    code(b, sizeof(b));
    cr_assert(plan_fork(3));
    cr_assert_eq(s.nleaf, 1);
    cr_assert_eq(s.end, 0x10001);
}

Test(fork, a_fork_needs_a_slot_for_its_second_leaf)
{
    /* mov eax,[rbx]; jz L; nop; jnz; L: jnz: the load's #PF and #GP take two handlers (rbx is not mapped: they may) */
    static const uint8_t a[] = { 0x8b, 0x03, 0x74, 0x03, 0x90, 0x75, 0x00, 0x75, 0x00 };
    code(a, sizeof(a));
    gates();
    regs.rbx = 0x7fff0000;
    cr_assert(plan_fork(2));
    cr_assert_eq(s.nh, 2);
    cr_assert_eq(s.nleaf, 1, "two handlers and two leaves do not fit in four slots less one");
    cr_assert(plan_fork(3));
    cr_assert_eq(s.nleaf, 2);
    /* Where the load cannot fault (mapped, its address known), no handler watches it. */
    regs.rbx = 0x20000;
    cr_assert(plan_fork(2));
    cr_assert_eq(s.nh, 0);
    cr_assert_eq(s.nleaf, 2);
}


Test(fork, each_way_forks_again_where_slots_are_left)
{
    static const uint8_t code_[] = {
        0x90, 0x74, 0x0d,               /* 0x10000: nop; jz A (0x10010) */
        0x90, 0x74, 0x06,               /* 0x10003: nop; jz B1 (0x1000c) */
        0x90, 0x75, 0x00, 0x90, 0x90, 0x90,     /* 0x10006: nop; jnz (B2's leaf) */
        0x90, 0x75, 0x00, 0x90,         /* 0x1000c: nop; jnz (B1's leaf) */
        0x90, 0x74, 0x05,               /* 0x10010: nop; jz A1 (0x10018) */
        0x90, 0x75, 0x00, 0x90, 0x90,   /* 0x10013: nop; jnz (A2's leaf) */
        0x90, 0x75, 0x00,               /* 0x10018: nop; jnz (A1's leaf) */
    };
    code(code_, sizeof(code_));
    cr_assert(plan_fork(3));
    cr_assert_eq(s.nleaf, 4);
    cr_assert_eq(s.leaf[0].end, 0x10019);
    cr_assert_eq(s.leaf[1].end, 0x10014);
    cr_assert_eq(s.leaf[2].end, 0x1000d);
    cr_assert_eq(s.leaf[3].end, 0x10007);
    cr_assert_eq(s.nprefix, 2);
    /* A1: the first jz's record, then A's own (nop, jz), then the second jz's record and A1's nop. */
    const struct stretch_leaf *a1 = &s.leaf[0];
    cr_assert_eq(a1->nseg, 2);
    cr_assert_eq(a1->seg[0].rec_last - a1->seg[0].rec_first, 1);
    cr_assert_eq(s.rec[a1->seg[0].rec_first].to, 0x10010);
    cr_assert_eq(a1->seg[1].rec_last - a1->seg[1].rec_first, 1);
    cr_assert_eq(s.rec[a1->seg[1].rec_first].from, 0x10011);
    cr_assert_eq(s.rec[a1->seg[1].rec_first].to, 0x10018);
    cr_assert_eq(s.ins[a1->seg[1].first], 0x10018);
    /* B2: no record at all, two segments of instructions. */
    const struct stretch_leaf *b2 = &s.leaf[3];
    cr_assert_eq(b2->seg[0].rec_first, b2->seg[0].rec_last);
    cr_assert_eq(b2->seg[1].rec_first, b2->seg[1].rec_last);
    cr_assert_eq(s.ins[b2->seg[1].first], 0x10006);
    /* Instructions on two ways share the leaf that reads them: A's own, for both A1 and A2. */
    cr_assert_eq(stretch_path_of(&s, (unsigned)stretch_index(&s, 0x10010)), 0);
    cr_assert_eq(stretch_path_of(&s, (unsigned)stretch_index(&s, 0x10013)), 1);
    /* One slot fewer: three leaves, the second way not forked. */
    cr_assert(plan_fork(2));
    cr_assert_eq(s.nleaf, 3);
    cr_assert_eq(s.leaf[2].end, 0x10004);
}
