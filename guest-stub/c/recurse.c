/* SPDX-License-Identifier: MIT */
/*
 * A multiboot ELF guest in C: recursion three deep, then calls through a
 * table of function pointers, and main's value as the exit status.  For
 * gdb's branch trace (tests/e2e/gdb.t), whose history nests the recursion
 * and returns from each level.
 *
 * gdb: stopped at main by a breakpoint, `record btrace bts`, then `next`
 * 6 times (to the return line); `record function-call-history /c` then
 * numbers these lines from 1:
 * @gdb-break main
 * @gdb-next 6
 * @gdb-history main
 * @gdb-history   depth
 * @gdb-history     depth
 * @gdb-history       depth
 * @gdb-history     depth
 * @gdb-history   depth
 * @gdb-history main
 * @gdb-history   add1
 * @gdb-history main
 * @gdb-history   dbl
 * @gdb-history main
 */
#define STUB_EXIT_MAIN
#include "multiboot.h"

__attribute__((noinline)) static unsigned depth(unsigned n)
{
    if (n == 0)
        return 0;
    return 1 + depth(n - 1);
}

__attribute__((noinline)) static unsigned add1(unsigned x)
{
    return x + 1;
}

__attribute__((noinline)) static unsigned dbl(unsigned x)
{
    return x * 2;
}

/* volatile: the calls through it stay indirect. */
static unsigned (*volatile table[2])(unsigned) = { add1, dbl };

int main(void)
{
    unsigned v = depth(2);
    for (unsigned i = 0; i < 2; i++)
        v = table[i](v);
    return (int)v;
}
