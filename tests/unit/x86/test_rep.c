/* SPDX-License-Identifier: MIT */
/* REP STOS and REP MOVS run by the monitor, as far as the CPU would run them without a fault. */
#include "machine.h"
#include "x86/rep.h"

TestSuite(rep, .init = machine_setup, .fini = machine_teardown);

static uint64_t run(void)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    cr_assert_eq(cpu_decode(&view, cpu_linear_ip(&regs, &sregs), &in, ops, &why), 0);
    return rep_run(&view, &in, ops, &regs);
}

static uint64_t pte(uint64_t a)
{
    return vbts_le64(gmem_ptr(&mem, 0x4000 + 8 * (a >> 12), 8));
}

Test(rep, stosb_across_pages_to_the_end)
{
    code((uint8_t[]){ 0xf3, 0xaa }, 2);                 /* rep stosb */
    regs.rdi = 0x20800;
    regs.rcx = 0x2000;
    regs.rax = 0x5a;
    cr_assert_eq(run(), 0x2000);
    cr_assert_eq(regs.rcx, 0);
    cr_assert_eq(regs.rdi, 0x22800);
    cr_assert_eq(regs.rip, 0x10002, "the count ran out: RIP moves on");
    const uint8_t *p = gmem_ptr(&mem, 0x20800, 0x2000);
    for (int i = 0; i < 0x2000; i++)
        cr_assert_eq(p[i], 0x5a);
    cr_assert_eq(*(uint8_t *)gmem_ptr(&mem, 0x22800, 1), 0, "not one byte more");
    cr_assert_eq(pte(0x21000) & 0x60, 0x60, "accessed and dirty, as the CPU leaves them");
}

Test(rep, stops_before_the_iteration_that_faults)
{
    code((uint8_t[]){ 0xf3, 0x48, 0xab }, 3);           /* rep stosq */
    PTE(0x31000, 0);                                    /* not present */
    regs.rdi = 0x30ff0;
    regs.rcx = 100;
    regs.rax = 0x1122334455667788ull;
    cr_assert_eq(run(), 2, "two quadwords fit before the page that faults");
    cr_assert_eq(regs.rcx, 98);
    cr_assert_eq(regs.rdi, 0x31000);
    cr_assert_eq(regs.rip, 0x10000, "the CPU runs the faulting iteration");
    cr_assert_eq(vbts_le64(gmem_ptr(&mem, 0x30ff8, 8)), 0x1122334455667788ull);
    cr_assert_eq(run(), 0, "nothing it can do now");
}

Test(rep, movsb_backwards_and_overlapping)
{
    code((uint8_t[]){ 0xfd, 0xf3, 0xa4 }, 3);           /* std; rep movsb */
    regs.rip = 0x10001;
    regs.rflags |= 1u << 10;                            /* DF */
    uint8_t *b = gmem_ptr(&mem, 0x40000, 16);
    for (int i = 0; i < 16; i++)
        b[i] = (uint8_t)i;
    regs.rsi = 0x40007;                                 /* bytes 0..7 to 2..9, from the top */
    regs.rdi = 0x40009;
    regs.rcx = 8;
    cr_assert_eq(run(), 8);
    static const uint8_t want[16] = { 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15 };
    cr_assert_arr_eq(b, want, 16, "a backward copy into an overlap, as memmove does");
    cr_assert_eq(regs.rsi, 0x3ffff);
    cr_assert_eq(regs.rdi, 0x40001);
}

Test(rep, address_size_and_what_it_leaves_alone)
{
    code((uint8_t[]){ 0x67, 0xf3, 0xaa }, 3);           /* rep stosb with 32-bit addresses */
    regs.rdi = 0xdead000000020000ull;                   /* EDI is what counts */
    regs.rcx = 0xffffffff00000010ull;
    cr_assert_eq(run(), 16);
    cr_assert_eq(regs.rdi, 0x20010, "a 32-bit result clears the upper half");
    cr_assert_eq(regs.rcx, 0);
    code((uint8_t[]){ 0xaa }, 1);                       /* stosb without rep */
    regs.rcx = 5;
    cr_assert_eq(run(), 0);
    code((uint8_t[]){ 0xf3, 0xa6 }, 2);                 /* repe cmpsb: not ours */
    cr_assert_eq(run(), 0);
    to_user();
    code((uint8_t[]){ 0xf3, 0xaa }, 2);
    regs.rdi = 0x100000;                                /* a supervisor page */
    regs.rcx = 4;
    cr_assert_eq(run(), 0, "user mode may not write it: the CPU faults");
}
