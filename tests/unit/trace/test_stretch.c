/* SPDX-License-Identifier: MIT */
/* Stretches of the branch engine: how far they go and what they watch. */
#include <criterion/criterion.h>
#include <string.h>

#include "plan.h"
#include "trace/stretch.h"
#include "vbts/format.h"

TestSuite(stretch, .init = machine_setup, .fini = machine_teardown);

Test(stretch, follows_direct_calls_and_jumps_to_the_first_unknown_branch)
{
    /* 0x10000: nop; call 0x10010 ... 0x10010: add eax,1; jmp 0x10020 ... 0x10020: ret */
    static const uint8_t a[] = { 0x90, 0xe8, 0x0a, 0x00, 0x00, 0x00 };
    static const uint8_t b[] = { 0x83, 0xc0, 0x01, 0xeb, 0x0b };
    code(a, sizeof(a));
    memcpy(gmem_ptr(&mem, 0x10010, sizeof(b)), b, sizeof(b));
    *(uint8_t *)gmem_ptr(&mem, 0x10020, 1) = 0xc3;
    gates();
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.nins, 4);
    cr_assert_eq(s.end, 0x10020, "ends at the ret");
    cr_assert_eq(s.nrec, 2);
    cr_assert_eq(s.rec[0].from, 0x10001);
    cr_assert_eq(s.rec[0].to, 0x10010);
    cr_assert_eq(s.rec[0].kind, VBTS_KIND_CALL);
    cr_assert_eq(s.rec[1].from, 0x10013);
    cr_assert_eq(s.rec[1].to, 0x10020);
    cr_assert_eq(s.rec[1].kind, VBTS_KIND_JMP);
    cr_assert_eq(s.recs_before[3], 1, "the jmp comes after one record");
    /* The call's push may raise #PF or #SS: their handlers are watched. */
    cr_assert_eq(s.nh, 2);
    cr_assert_eq(s.handler[0], 0x31000);
    cr_assert_eq(s.vectors[0], 1u << 12);
    cr_assert_eq(s.handler[1], 0x33000);
}

/* From RIP, a stretch of one instruction that ends at `end`; from `next`, none. */
static void one_then_none(uint64_t end, uint64_t next, const char *why)
{
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.nins, 1);
    cr_assert_eq(s.end, end);
    regs.rip = next;
    cr_assert_not(plan(3, NULL, false), "%s", why);
}

Test(stretch, a_conditional_branch_or_a_mode_change_ends_it)
{
    static const uint8_t a[] = { 0x31, 0xc0, 0x75, 0x00, 0xf4 };  /* xor eax,eax; jnz; hlt */
    code(a, sizeof(a));
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.nh, 0, "no memory access, nothing to watch");
    one_then_none(0x10002, 0x10004, "hlt is stepped");
}

Test(stretch, too_many_handlers_end_it_earlier)
{
    /* mov eax,[rbx]; div ecx; nop: #PF/#GP, then #DE, with room for two handlers. */
    static const uint8_t a[] = { 0x8b, 0x03, 0xf7, 0xf1, 0x90, 0x75, 0x00 };
    code(a, sizeof(a));
    gates();
    cr_assert(plan(2, NULL, false));
    cr_assert_eq(s.nins, 1);
    cr_assert_eq(s.end, 0x10002, "the div needs a third handler");
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10005);
    cr_assert_eq(s.nh, 3);
}

Test(stretch, a_vector_without_a_gate_is_not_run_unwatched)
{
    static const uint8_t a[] = { 0x90, 0x8b, 0x03, 0x75, 0x00 };   /* nop; mov eax,[rbx]; jnz */
    code(a, sizeof(a));
    /* No IDT gates at all: it ends before the load, which is stepped. */
    one_then_none(0x10001, 0x10001, "the load is stepped");
}

Test(stretch, a_loop_of_direct_jumps_ends_before_it_comes_back)
{
    static const uint8_t a[] = { 0x90, 0xeb, 0xfd };               /* L: nop; jmp L */
    code(a, sizeof(a));
    /* Not at L: a breakpoint at RIP would fire before it runs.  The jmp is taken, not run. */
    one_then_none(0x10001, 0x10001, "the jmp is taken, not run");
}

Test(stretch, the_stop_trigger_and_handlers_on_the_way_end_it)
{
    static const uint8_t a[] = { 0x90, 0x90, 0x90, 0x8b, 0x03, 0x75, 0x00 };
    code(a, sizeof(a));
    uint64_t stop = 0x10002;
    cr_assert(plan(3, &stop, false));
    cr_assert_eq(s.end, 0x10002);
    gates();
    gate64(14, 0x10001, 0x08, 0xe, 0, 0);
    gate64(13, 0x10001, 0x08, 0xe, 0, 0);
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10001, "the #PF handler starts on the way");
}

Test(stretch, user_mode_and_the_guests_own_tf_are_stepped)
{
    static const uint8_t a[] = { 0x90, 0x75, 0x00 };
    code(a, sizeof(a));
    regs.rflags |= RFLAGS_TF;
    cr_assert_not(plan(3, NULL, false));
    regs.rflags &= ~(uint64_t)RFLAGS_TF;
    to_user();
    cr_assert_not(plan(3, NULL, false));
}

/*
 * A store into the IDT ends the stretch before it (the gates watched were
 * read before it), where the stretch's later instructions compute its
 * address: RIP-relative from their own RIP, and not at all from a register
 * an earlier one wrote (found by a generated program: `mov [rel idt], ax`
 * after a few instructions, then a #DE through the new gate).
 */
Test(stretch, ends_before_a_store_that_may_reach_the_idt)
{
    gates();
    /* 0x10000: nop; nop; nop; mov [rip + (0x8000 - 0x10009)], ax; nop */
    static const uint8_t rel[] = { 0x90, 0x90, 0x90, 0x66, 0x89, 0x05, 0xf7, 0x7f, 0xff, 0xff, 0x90, 0x90 };
    code(rel, sizeof(rel));
    *(uint8_t *)gmem_ptr(&mem, 0x1000c, 1) = 0xc3;
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.nins, 3, "it ends at the store into the IDT, three instructions on");
    /* mov rbx, rcx; mov [rbx], eax: rbx is not known there, so neither is where it stores */
    static const uint8_t reg[] = { 0x48, 0x89, 0xcb, 0x89, 0x03, 0x90, 0xc3 };
    code(reg, sizeof(reg));
    regs.rbx = 0x20000;
    regs.rcx = 0x8000;
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.nins, 1, "it ends at the store through a register written before it");
    /* push rax; push rax; mov [rsp], eax: the stack, 16 bytes from where it was, far from the IDT */
    static const uint8_t sp[] = { 0x50, 0x50, 0x89, 0x04, 0x24, 0x90, 0xc3 };
    code(sp, sizeof(sp));
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.nins, 4, "pushes keep the stack within reach");
    /* Where RSP is known, a push stores its slot below it, exactly. */
    regs.rsp = 0x8000 + 16 * 256 + 16;          /* 16 bytes past the IDT */
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.nins, 4, "two pushes stay clear of it");
    regs.rsp = 0x8000 + 16 * 256 + 8;
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.nins, 1, "the second push stores into the IDT");
    regs.rsp = 0x8000 + 16 * 256;
    cr_assert_eq(plan(4, NULL, false), false, "the first does");
}

/* Code a store of the stretch may change is not run on bytes decoded before it. */
Test(stretch, ends_before_code_its_own_stores_may_have_changed)
{
    gates();
    /* 0x10000: mov byte [rip + 1], 0x90 (into 0x10008); nop; nop; nop; jnz */
    static const uint8_t rel[] = { 0xc6, 0x05, 0x01, 0x00, 0x00, 0x00, 0x90, 0x90, 0x90, 0x90, 0x75, 0x00 };
    code(rel, sizeof(rel));
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x10008, "it ends at the byte the store wrote");
    /* The same page mapped again at 0x1c0000: mov byte [rbx], 0x90 through it */
    vbts_put64(gmem_ptr(&mem, 0x4000 + (0x1c0000 >> 12) * 8, 8), 0x10000 | 3);
    static const uint8_t alias[] = { 0xc6, 0x03, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x75, 0x00 };
    code(alias, sizeof(alias));
    regs.rbx = 0x1c0008;
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x10008, "through another mapping of the page");
    regs.rbx = 0x1c0100;
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x1000a, "elsewhere on the page: to the jnz");
    /* rep stosb at 0x10000 over 0x10040..0x10043, nops up to there */
    uint8_t rep[0x50];
    memset(rep, 0x90, sizeof(rep));
    rep[0] = 0xf3;
    rep[1] = 0xaa;
    rep[0x48] = 0x75;
    rep[0x49] = 0x00;
    code(rep, sizeof(rep));
    regs.rdi = 0x10040;
    regs.rcx = 4;
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x1003c, "a REP STOS's bytes: RCX of them, either way (DF)");
    regs.rcx = 1 << 20;
    cr_assert(plan(4, NULL, false) == false || s.nins == 0, "too many to note: stepped");
}

/* A store into the page tables that map the stretch's next page: that code is fetched afresh. */
Test(stretch, ends_before_code_whose_mapping_its_stores_may_have_changed)
{
    gates();
    regs.rip = 0x10ff0;
    /* mov [rbx], rax; then nops across into the page at 0x11000; jnz there */
    uint8_t a[0x20];
    memset(a, 0x90, sizeof(a));
    a[0] = 0x48;
    a[1] = 0x89;
    a[2] = 0x03;
    a[0x18] = 0x75;
    a[0x19] = 0x00;
    code(a, sizeof(a));
    regs.rbx = 0x4000 + 8 * (0x11000 >> 12);    /* the PTE of 0x11000 */
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x11000, "it ends where the rewritten entry maps");
    regs.rbx = 0x4000 + 8 * (0x12000 >> 12);
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x11008, "another entry: on to the jnz");
}

/* Where RSP is at the stretch's end, when its instructions say: an event nobody watched moves it. */
Test(stretch, knows_where_it_leaves_the_stack_pointer)
{
    gates();
    /* push rax; sub rsp, 0x20; lea rsp, [rsp + 0x30]; add rsp, -8; jnz */
    static const uint8_t a[] = { 0x50, 0x48, 0x83, 0xec, 0x20, 0x48, 0x8d, 0x64, 0x24, 0x30,
                                 0x48, 0x83, 0xc4, 0xf8, 0x75, 0x00 };
    code(a, sizeof(a));
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x1000e);
    cr_assert(s.sp_exact);
    cr_assert_eq(s.sp_delta, -8 - 0x20 + 0x30 - 8);
    /* push rax; call next; next: jnz */
    static const uint8_t call[] = { 0x50, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x75, 0x00 };
    code(call, sizeof(call));
    cr_assert(plan(4, NULL, false));
    cr_assert_eq(s.end, 0x10006);
    cr_assert_eq(s.sp_delta, -16);
    /* pop rsp: from memory */
    static const uint8_t b[] = { 0x5c, 0x75, 0x00 };
    code(b, sizeof(b));
    cr_assert(plan(4, NULL, false));
    cr_assert_not(s.sp_exact);
    /* mov rsp, rbx; and rsp, -16; jnz: rbx as it is */
    static const uint8_t c[] = { 0x48, 0x89, 0xdc, 0x48, 0x83, 0xe4, 0xf0, 0x75, 0x00 };
    code(c, sizeof(c));
    regs.rbx = 0x40018;
    cr_assert(plan(4, NULL, false));
    cr_assert(s.sp_exact);
    cr_assert_eq(regs.rsp + (uint64_t)s.sp_delta, 0x40010);
    /* mov rbx, rcx; mov rsp, rbx: rbx written on the way */
    static const uint8_t d[] = { 0x48, 0x89, 0xcb, 0x48, 0x89, 0xdc, 0x75, 0x00 };
    code(d, sizeof(d));
    cr_assert(plan(4, NULL, false));
    cr_assert_not(s.sp_exact);
    /* leave */
    static const uint8_t e[] = { 0xc9, 0x75, 0x00 };
    code(e, sizeof(e));
    regs.rbp = 0x40100;
    cr_assert(plan(4, NULL, false));
    cr_assert(s.sp_exact);
    cr_assert_eq(regs.rsp + (uint64_t)s.sp_delta, 0x40108);
}

/* The double fault's handler gets a slot where one is left. */
Test(stretch, watches_the_double_fault_where_a_slot_is_left)
{
    gates();
    gate64(8, 0x34000, 0x08, 0xe, 0, 1);
    /* mov eax, [rbx]; jnz: #PF, #GP (#SS) */
    static const uint8_t a[] = { 0x8b, 0x03, 0x75, 0x00 };
    code(a, sizeof(a));
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.nh, 3);
    cr_assert_eq(s.handler[2], 0x34000);
    cr_assert_eq(s.vectors[2], 1u << 8);
    cr_assert(plan(2, NULL, false));
    cr_assert_eq(s.nh, 2, "no slot left: the RSP check stands for it");
    /* nop; jnz: nothing raised, nothing to watch */
    static const uint8_t b[] = { 0x90, 0x75, 0x00 };
    code(b, sizeof(b));
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.nh, 0);
}

/* An exception whose delivery would fault (here #DE's gate names a data segment) is not run unwatched. */
Test(stretch, an_exception_whose_delivery_faults_is_stepped)
{
    gates();
    gate64(0, 0x30000, 0x10, 0xe, 0, 0);
    /* nop; div ecx; jnz */
    static const uint8_t a[] = { 0x90, 0xf7, 0xf1, 0x75, 0x00 };
    code(a, sizeof(a));
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10001, "it ends before the div");
    gate64(0, 0x30000, 0x08, 0xe, 0, 0);
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10003, "a good gate: on to the jnz");
}

/* The frame goes where RSP is at the instruction, not where it was when the stretch was planned. */
Test(stretch, a_delivery_checked_where_the_stretch_leaves_rsp)
{
    gates();
    PTE(0x3f000, 0);                    /* a page below the stack, not present */
    /* sub rsp, 0x10000; div ecx; jnz */
    static const uint8_t a[] = { 0x48, 0x81, 0xec, 0x00, 0x00, 0x01, 0x00, 0xf7, 0xf1, 0x75, 0x00 };
    code(a, sizeof(a));
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10007, "#DE's frame would go to 0x3fff8: it ends before the div");
    PTE(0x3f000, 3);
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10009, "mapped: on to the jnz");
    /* mov rsp, [rip]: RSP lost; then div */
    static const uint8_t b[] = { 0x48, 0x8b, 0x25, 0x00, 0x00, 0x00, 0x00, 0xf7, 0xf1, 0x75, 0x00 };
    code(b, sizeof(b));
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10007, "RSP not known: the div is stepped");
    gate64(0, 0x30000, 0x08, 0xe, 0, 2);
    gate64(14, 0x33000, 0x08, 0xe, 0, 2);
    vbts_put64(gmem_ptr(&mem, 0x7000 + 44, 8), 0xb0000);   /* IST2 */
    cr_assert(plan(3, NULL, false));
    cr_assert_gt(s.end, 0x10007, "an IST's stack is known: on past the div (0x%llx)", (unsigned long long)s.end);
}

/* Loops whose rounds the stretch computes: it runs through them, to their exit. */

/* strlen: xor ecx,ecx; L: cmp byte [rsi+rcx],0; je E; inc ecx; jmp L; E: hlt */
static const uint8_t strlen_code[] = { 0x31, 0xc9, 0x80, 0x3c, 0x0e, 0x00, 0x74, 0x04, 0xff, 0xc1, 0xeb, 0xf6, 0xf4 };

Test(stretch, runs_a_loop_over_data_to_its_exit)
{
    code(strlen_code, sizeof(strlen_code));
    memcpy(gmem_ptr(&mem, 0x20000, 4), "abc", 4);
    regs.rsi = 0x20000;
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x1000c, "the loop's exit");
    cr_assert_eq(s.nins, 1 + 3 * 4 + 2);
    cr_assert_eq(s.nrec, 4, "three jmps back, the je out");
    cr_assert_eq(s.rec[3].from, 0x10006);
    cr_assert_eq(s.rec[3].to, 0x1000c);
    cr_assert_eq(s.nh, 0);
    cr_assert(s.loops);
    cr_assert_eq(s.leaf[0].gpr[1], 3, "ECX at the exit, checked there");
    cr_assert(s.leaf[0].regs_known & 2);
    unsigned again = 0;
    for (unsigned i = 0; i < s.nins; i++)
        again += !s.first[i];
    cr_assert_eq(again, 10, "the second to fourth rounds are there again");
    /* Each time at the cmp, the registers say which. */
    cr_assert_eq(s.ins[1], 0x10002);
    cr_assert_eq(s.ins[5], 0x10002);
    cr_assert_neq(s.key[1], s.key[5]);
    cr_assert_eq(s.known[1] & 2, 2);
    uint64_t g[16] = { 0 };
    g[1] = 1;
    g[6] = 0x20000;
    cr_assert_eq(stretch_key(g, s.known[5], true) == s.key[5], regs.rax == 0 && regs.rdx == 0);
}

Test(stretch, a_loop_it_cannot_finish_ends_after_its_first_round)
{
    code(strlen_code, sizeof(strlen_code));
    memset(gmem_ptr(&mem, 0x20000, 0x10000), 'a', 0x10000);    /* longer than a stretch */
    regs.rsi = 0x20000;
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x1000a, "its last new instruction: a breakpoint elsewhere would fire early");
    for (unsigned i = 0; i < s.nins; i++)
        cr_assert(s.first[i]);
}

Test(stretch, an_instruction_that_may_raise_runs_once)
{
    /* L: bsf ebx,ebx; mov al,[rbx]; dec ecx; jnz L: the load's address is not known */
    static const uint8_t a[] = { 0x0f, 0xbc, 0xdb, 0x8a, 0x03, 0xff, 0xc9, 0x75, 0xf7 };
    code(a, sizeof(a));
    regs.rcx = 5;
    gates();
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x10007, "an exception's frame must name one time");
    cr_assert_eq(s.nins, 3);
}

Test(stretch, a_loop_that_calls_and_stores_each_round_runs_whole)
{
    /* xor ecx,ecx; L: mov [rsp+8],ecx; call F; inc ecx; cmp ecx,20; jne L; hlt; F: ret */
    static const uint8_t a[] = { 0x31, 0xc9, 0x89, 0x4c, 0x24, 0x08, 0xe8, 0x08, 0x00, 0x00, 0x00, 0xff, 0xc1,
                                 0x83, 0xf9, 0x14, 0x75, 0xf0, 0xf4, 0xc3 };
    code(a, sizeof(a));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x10012, "the hlt after 20 rounds");
    cr_assert_eq(s.nrec, 20 + 20 + 19);
    cr_assert_eq(s.st.n, 2, "each round's store and push widen the first round's");
    cr_assert_eq(s.ncall, 0, "every call returned");
}

Test(stretch, a_counted_loop_is_left_to_run_whole_from_its_head)
{
    /* mov ecx,5; L: nop; dec ecx; jnz L; hlt */
    static const uint8_t a[] = { 0xb9, 0x05, 0x00, 0x00, 0x00, 0x90, 0xff, 0xc9, 0x75, 0xfb, 0xf4 };
    code(a, sizeof(a));
    cr_assert(plan_engine(3));
    cr_assert(s.end == 0x10008 || s.ins[s.nprefix - 1] == 0x10008, "it stops at the way back, or forks there");
    for (unsigned i = 0; i < s.nins; i++)
        cr_assert(s.first[i]);
    /* From the head, the loop runs whole. */
    regs.rip = 0x10005;
    regs.rcx = 5;
    cr_assert(plan_engine(3));
    cr_assert_eq(s.rounds, 5);
    cr_assert_eq(s.end, 0x1000a);
}
