/* SPDX-License-Identifier: MIT */
/*
 * A 64-bit multiboot kernel in C that starts in 32-bit mode (longmode.h:
 * paging and long mode from the multiboot entry), with its own ELF64 and
 * DWARF: calls, recursion, calls through a table, and main's value as the
 * exit status.  For gdb (tests/e2e/gdb.t): the target description must be
 * x86-64 from the first instruction, though the vCPU is in 32-bit mode
 * then, or gdb rejects it for this ELF64.
 *
 * gdb: stopped at main by a breakpoint, `record btrace bts`, then `next`
 * 5 times (to main's closing brace); `record function-call-history /c` then
 * numbers these lines from 1:
 * @gdb-break main
 * @gdb-next 5
 * @gdb-history main
 * @gdb-history   square
 * @gdb-history main
 * @gdb-history   fact
 * @gdb-history     fact
 * @gdb-history       fact
 * @gdb-history         fact
 * @gdb-history       fact
 * @gdb-history     fact
 * @gdb-history   fact
 * @gdb-history main
 * @gdb-history   square
 * @gdb-history main
 * @gdb-history   twice
 * @gdb-history     square
 * @gdb-history   twice
 * @gdb-history     square
 * @gdb-history   twice
 * @gdb-history main
 */
#include "longmode.h"

__attribute__((noinline)) static uint64_t square(uint64_t x)
{
    return x * x;
}

__attribute__((noinline)) static uint64_t fact(uint64_t n)
{
    if (n <= 1)
        return 1;
    return n * fact(n - 1);
}

__attribute__((noinline)) static uint64_t twice(uint64_t x)
{
    return square(square(x));
}

/* volatile: the calls through it stay indirect. */
static uint64_t (*volatile table[2])(uint64_t) = { square, twice };

int main(void)
{
    uint64_t s = square(3);
    s += fact(4);
    s += table[0](2);
    s += table[1](2);
    return (int)(s & 0x3f);
}
