/* SPDX-License-Identifier: MIT */
/* The guest's own breakpoints as DR7 arms them: which an access or an instruction hits. */
#include <criterion/criterion.h>

#include "trace/engine.h"
#include "trace/gdbg.h"

static const uint64_t dr[4] = { 0x1000, 0x2003, 0x3008, 0x4000 };

Test(gdbg, instruction_breakpoints)
{
    cr_assert_eq(gdbg_exec_hits(dr, 0, 0x1000), 0, "nothing enabled");
    cr_assert_eq(gdbg_exec_hits(dr, 0x1, 0x1000), 0x1, "L0");
    cr_assert_eq(gdbg_exec_hits(dr, 0x2, 0x1000), 0x1, "G0");
    cr_assert_eq(gdbg_exec_hits(dr, 0x1, 0x1001), 0, "another address");
    cr_assert_eq(gdbg_exec_hits(dr, 0x1 | 1u << 16, 0x1000), 0, "a data breakpoint does not fire on execution");
}

Test(gdbg, data_breakpoints_by_length_and_kind)
{
    uint64_t w1 = 0x4 | 1u << 20;                       /* DR1: writes, 1 byte */
    cr_assert_eq(gdbg_data_hits(dr, w1, 0x2003, 1, true), 0x2);
    cr_assert_eq(gdbg_data_hits(dr, w1, 0x2003, 1, false), 0, "a read of a write watchpoint");
    cr_assert_eq(gdbg_data_hits(dr, w1, 0x2000, 4, true), 0x2, "a dword over it");
    cr_assert_eq(gdbg_data_hits(dr, w1, 0x2004, 4, true), 0, "just past it");
    uint64_t rw2 = 0x10 | 3u << 24 | 2u << 26;          /* DR2: reads and writes, 8 bytes */
    cr_assert_eq(gdbg_data_hits(dr, rw2, 0x300f, 1, false), 0x4, "the last byte of the qword");
    cr_assert_eq(gdbg_data_hits(dr, rw2, 0x3010, 8, false), 0);
    cr_assert_eq(gdbg_data_hits(dr, rw2, 0x2ffc, 4, false), 0, "the dword below");
    uint64_t w3 = 0x40 | 1u << 28 | 3u << 30;           /* DR3: writes, 4 bytes */
    cr_assert_eq(gdbg_data_hits(dr, w3, 0x3ff8, 8, true), 0, "a qword just below");
    cr_assert_eq(gdbg_data_hits(dr, w3, 0x3ffc, 8, true), 0x8, "a qword across it");
    cr_assert_eq(gdbg_data_hits(dr, w1 | w3, 0x2003, 0x2000, true), 0xa, "one access, two breakpoints");
    cr_assert_eq(gdbg_data_hits(dr, 2u << 20 | 0x4, 0x2003, 1, true), 0, "I/O breakpoints: not memory");
}

Test(gdbg, engaged_by_tf_or_an_enabled_breakpoint)
{
    struct trace_vcpu t = { 0 };
    cr_assert_not(gdbg_engaged(&t));
    t.gd.dr7 = 0x400;
    cr_assert_not(gdbg_engaged(&t), "DR7's fixed bit");
    t.gd.dr7 = 0x2400;
    cr_assert(gdbg_engaged(&t), "GD");
    t.gd.dr7 = 0x80;
    cr_assert(gdbg_engaged(&t), "G3");
    t.gd.dr7 = 0;
    t.gd.tf = true;
    cr_assert(gdbg_engaged(&t));
}
