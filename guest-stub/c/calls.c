/* SPDX-License-Identifier: MIT */
/*
 * A multiboot ELF guest in C, with its DWARF: direct and indirect calls
 * and a loop, in 32-bit protected mode as multiboot leaves it.  For what
 * needs debug information: vbts-decode --format lcov, and gdb.  Built -O0
 * so that the code, and so the expected histories in tests/e2e/views.t,
 * does not move with the compiler's choices.  (No exception: kvm_pvm
 * cannot run a 32-bit iret at CPL0; the asm stubs nest handlers.)
 *
 * The functions called, in order: main; leaf (i = 0); twice through `op`
 * (i = 1), which calls leaf twice; leaf (i = 2); never_called is not.
 * "@ran N": the times execution enters the line, as --format lcov counts
 * them (the for line: its start, then each of its 4 tests, from the start
 * and after each of the 3 turns); every line with code has one.
 * "@called N": the times a branch leads to the function's entry.
 *
 * gdb (tests/e2e/gdb.t): stopped at main by a breakpoint, `record btrace
 * bts`, then `next` 7 times (to the for line of the last turn); `record
 * function-call-history /c` then numbers these lines from 1:
 * @gdb-break main
 * @gdb-next 7
 * @gdb-history main
 * @gdb-history   leaf
 * @gdb-history main
 * @gdb-history   twice
 * @gdb-history     leaf
 * @gdb-history   twice
 * @gdb-history     leaf
 * @gdb-history   twice
 * @gdb-history main
 */
#include "multiboot.h"

__attribute__((noinline)) static unsigned leaf(unsigned x)  /* @called 4 */
{                                           /* @ran 4 */
    return x * 3 + 1;                       /* @ran 4 */
}                                           /* @ran 4 */

__attribute__((noinline)) static unsigned twice(unsigned x) /* @called 1 */
{                                           /* @ran 1 */
    return leaf(leaf(x));                   /* @ran 1 */
}                                           /* @ran 1 */

__attribute__((noinline)) unsigned never_called(unsigned x) /* @called 0 */
{                                           /* @ran 0 */
    return x + 1;                           /* @ran 0 */
}                                           /* @ran 0 */

/* volatile: the call through it stays indirect. */
static unsigned (*volatile op)(unsigned) = twice;

int main(void)                                              /* @called 1 */
{                                           /* @ran 1 */
    unsigned s = 0;                         /* @ran 1 */
    for (unsigned i = 0; i < 3; i++) {      /* @ran 5 */
        if (i & 1)                          /* @ran 3 */
            s += op(i);                     /* @ran 1 */
        else
            s += leaf(i);                   /* @ran 2 */
    }
    if (s == 0)                             /* @ran 1 */
        s = never_called(s);                /* @ran 0 */
    return (int)s;                          /* @ran 1 */
}                                           /* @ran 1 */
