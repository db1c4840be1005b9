/* SPDX-License-Identifier: MIT */
/* Loops run whole: a register counts the rounds down, under one breakpoint at the loop's exit. */
#include <criterion/criterion.h>
#include <string.h>

#include "plan.h"
#include "trace/rounds.h"
#include "vbts/format.h"

TestSuite(rounds, .init = machine_setup, .fini = machine_teardown);

Test(rounds, a_counted_loop_runs_whole_to_its_exit)
{
    /* L: nop; dec ecx; jnz L; (exit) */
    static const uint8_t a[] = { 0x90, 0xff, 0xc9, 0x75, 0xfb, 0x90 };
    code(a, sizeof(a));
    regs.rcx = 5;
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 5);
    cr_assert_eq(s.end, 0x10005, "the exit");
    cr_assert_eq(s.why, STRETCH_END_ROUNDS);
    cr_assert_eq(s.nins, 3, "one round: nop, dec, jnz");
    cr_assert_eq(s.nrec, 1);
    cr_assert_eq(s.rec[0].from, 0x10003);
    cr_assert_eq(s.rec[0].to, 0x10000);
    cr_assert_eq(s.nprefix_rec, 0, "the last round ends at the jnz, not taken");
    cr_assert_eq(s.counter, ZYDIS_REGISTER_RCX);
    cr_assert_eq(s.counter_bits, 32);
    cr_assert_eq(s.counted, 1);
    cr_assert_eq(s.leaf[0].sp_delta, 0);
    /* One round to go is the plain stretch; 0 would be 2^32 rounds. */
    regs.rcx = 1;
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 0);
    regs.rcx = 0x100000000ull;
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 0);
}

Test(rounds, the_loop_instruction_counts_rcx)
{
    /* L: nop; loop L */
    static const uint8_t a[] = { 0x90, 0xe2, 0xfd, 0x90 };
    code(a, sizeof(a));
    regs.rcx = 3;
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 3);
    cr_assert_eq(s.counter_bits, 64);
    cr_assert_eq(s.counted, 1, "the loop instruction itself");
    cr_assert_eq(s.end, 0x10003);
}

Test(rounds, a_loop_is_not_run_whole_where_a_round_differs)
{
    /* L: inc ecx; dec ecx; jnz L: the counter written twice a round */
    static const uint8_t a[] = { 0xff, 0xc1, 0xff, 0xc9, 0x75, 0xfa, 0x90 };
    code(a, sizeof(a));
    regs.rcx = 5;
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 0);
    /* L: mov [rel L], al; dec ecx; jnz L: each round stores into the next one's code */
    static const uint8_t b[] = { 0x88, 0x05, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xc9, 0x75, 0xf5, 0x90 };
    code(b, sizeof(b));
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 0);
    /* Another vCPU could change what a round reads: not alone, not run whole. */
    static const uint8_t c[] = { 0x90, 0xff, 0xc9, 0x75, 0xfb, 0x90 };
    code(c, sizeof(c));
    const struct stretch_opts o = { 3, NULL, false, NULL, true, false, false };
    stretch_attach(&s, s_mem, STRETCH_MAX_PATH);
    cr_assert(stretch_plan(&view, &o, &s));
    cr_assert_eq(s.rounds, 0);
}

Test(rounds, interrupts_bound_a_loop_run_whole)
{
    static const uint8_t a[] = { 0x90, 0xff, 0xc9, 0x75, 0xfb, 0x90 };
    code(a, sizeof(a));
    regs.rcx = 5000;                /* 15,000 instructions: longer than IF lets interrupts wait */
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 0);
    regs.rflags &= ~(uint64_t)RFLAGS_IF;
    cr_assert(plan_fork(3));
    cr_assert_eq(s.rounds, 5000);
}
