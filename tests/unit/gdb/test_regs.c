/* SPDX-License-Identifier: MIT */
/* Registers in gdb's order and widths, both layouts, and what gdb may write. */
#include <criterion/criterion.h>
#include <string.h>

#include "gdb/regs.h"

static struct regs_state s;

static void setup(void)
{
    memset(&s, 0, sizeof(s));
    s.regs.rax = 0x1111111111111111ull;
    s.regs.rbx = 0x2222222222222222ull;
    s.regs.rcx = 0x3333333333333333ull;
    s.regs.rip = 0xffffffff81000000ull;
    s.regs.rflags = 0x246;
    s.sregs.cs.selector = 0x10;
    s.sregs.cs.l = 1;
    s.sregs.cr3 = 0x1000;
    s.sregs.efer = 0xd01;
    s.sregs.fs.base = 0x7f0000001000ull;
}

TestSuite(regs, .init = setup);

static uint64_t val(enum regs_arch a, int n)
{
    uint8_t b[REGS_MAX_BYTES] = { 0 };
    size_t len = regs_read(a, &s, n, b);
    uint64_t v = 0;
    for (size_t i = 0; i < len && i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

Test(regs, x86_64_in_gdbs_order)
{
    cr_assert_eq(regs_count(REGS_X86_64), 65);
    cr_assert_eq(val(REGS_X86_64, 0), 0x1111111111111111ull, "rax");
    cr_assert_eq(val(REGS_X86_64, 1), 0x2222222222222222ull, "rbx");
    cr_assert_eq(val(REGS_X86_64, 2), 0x3333333333333333ull, "rcx");
    cr_assert_eq(regs_size(REGS_X86_64, 16), 8);
    cr_assert_eq(val(REGS_X86_64, 16), 0xffffffff81000000ull, "rip");
    cr_assert_eq(regs_size(REGS_X86_64, 17), 4, "eflags");
    cr_assert_eq(val(REGS_X86_64, 17), 0x246);
    cr_assert_eq(val(REGS_X86_64, 18), 0x10, "cs");
    cr_assert_eq(regs_size(REGS_X86_64, 24), 10, "st0");
    cr_assert_eq(regs_size(REGS_X86_64, 40), 16, "xmm0");
    cr_assert_eq(val(REGS_X86_64, 57), 0x7f0000001000ull, "fs_base");
    cr_assert_eq(val(REGS_X86_64, 61), 0x1000, "cr3");
    cr_assert_eq(val(REGS_X86_64, 64), 0xd01, "efer");
    cr_assert_eq(regs_size(REGS_X86_64, 65), 0, "no register 65");
    cr_assert_eq(regs_size(REGS_X86_64, -1), 0);
}

Test(regs, i386_in_its_own_order_and_widths)
{
    cr_assert_eq(regs_count(REGS_I386), 46);
    cr_assert_eq(regs_size(REGS_I386, 0), 4);
    cr_assert_eq(val(REGS_I386, 0), 0x11111111, "eax");
    cr_assert_eq(val(REGS_I386, 1), 0x33333333, "ecx comes second");
    cr_assert_eq(val(REGS_I386, 3), 0x22222222, "ebx fourth");
    cr_assert_eq(val(REGS_I386, 8), 0x81000000, "eip");
}

Test(regs, the_full_tag_word_from_the_abridged_one)
{
    /* TOP = 7: ST(0) is physical register 7; it holds 1.0 (valid), the rest are empty. */
    s.fpu.fsw = 7 << 11;
    s.fpu.ftwx = 0x80;
    s.fpu.fpr[0][7] = 0x80;
    s.fpu.fpr[0][8] = 0xff;
    s.fpu.fpr[0][9] = 0x3f;
    cr_assert_eq(val(REGS_X86_64, 34), 0x3fff, "ftag: physical 7 valid, 0-6 empty");
    s.fpu.ftwx = 0;
    cr_assert_eq(val(REGS_X86_64, 34), 0xffff);
    uint8_t full[4] = { 0xff, 0x3f, 0, 0 };
    unsigned changed = 0;
    cr_assert_eq(regs_write(REGS_X86_64, &s, 34, full, 4, &changed), 0);
    cr_assert_eq(s.fpu.ftwx, 0x80);
    cr_assert_eq(changed, REGS_CHANGED_FPU);
}

Test(regs, writes_gdb_may_make)
{
    unsigned changed = 0;
    uint8_t b[8] = { 0x78, 0x56, 0x34, 0x12 };
    cr_assert_eq(regs_write(REGS_I386, &s, 1, b, 4, &changed), 0);
    cr_assert_eq(s.regs.rcx, 0x3333333312345678ull, "a 32-bit write keeps the upper half");
    cr_assert_eq(changed, REGS_CHANGED_REGS);
    uint8_t fl[4] = { 0, 0, 0, 0 };
    cr_assert_eq(regs_write(REGS_X86_64, &s, 17, fl, 4, &changed), 0);
    cr_assert_eq(s.regs.rflags, 2, "bit 1 of EFLAGS stays set");
    uint8_t base[8] = { 0, 0x20, 0, 0, 0, 0, 0, 0 };
    changed = 0;
    cr_assert_eq(regs_write(REGS_X86_64, &s, 58, base, 8, &changed), 0);
    cr_assert_eq(s.sregs.gs.base, 0x2000);
    cr_assert_eq(changed, REGS_CHANGED_SREGS);
}

Test(regs, selectors_and_control_registers_only_as_they_are)
{
    unsigned changed = 0;
    uint8_t cs[4] = { 0x10, 0, 0, 0 };
    cr_assert_eq(regs_write(REGS_X86_64, &s, 18, cs, 4, &changed), 0, "the same value: fine");
    cs[0] = 0x08;
    cr_assert_eq(regs_write(REGS_X86_64, &s, 18, cs, 4, &changed), -1);
    uint8_t cr3[8] = { 0, 0x20 };
    cr_assert_eq(regs_write(REGS_X86_64, &s, 61, cr3, 8, &changed), -1);
    cr_assert_eq(s.sregs.cr3, 0x1000);
    cr_assert_eq(changed, 0);
    cr_assert_eq(regs_write(REGS_X86_64, &s, 0, cr3, 4, &changed), -1, "wrong length");
    cr_assert_eq(regs_write(REGS_X86_64, &s, 99, cr3, 8, &changed), -1);
}

Test(regs, target_descriptions)
{
    size_t len;
    const char *x = regs_target_xml(REGS_X86_64, &len);
    cr_assert_eq(strlen(x), len);
    cr_assert(strstr(x, "<architecture>i386:x86-64</architecture>"));
    cr_assert(strstr(x, "<feature name=\"org.gnu.gdb.i386.core\">"));
    cr_assert(strstr(x, "<reg name=\"rip\" bitsize=\"64\" type=\"code_ptr\" regnum=\"16\"/>"));
    cr_assert(strstr(x, "<reg name=\"efer\" bitsize=\"64\" type=\"int64\" regnum=\"64\"/>"));
    cr_assert(strstr(x, "</target>\n"));
    x = regs_target_xml(REGS_I386, &len);
    cr_assert(strstr(x, "<architecture>i386</architecture>"));
    cr_assert(strstr(x, "<reg name=\"eip\" bitsize=\"32\" type=\"code_ptr\" regnum=\"8\"/>"));
    cr_assert_null(strstr(x, "org.gnu.gdb.i386.segments"), "no fs_base outside long mode");
}

Test(regs, the_x86_64_layout_outside_64_bit_code_has_32_bit_values)
{
    s.sregs.cs.l = 0;
    cr_assert_eq(val(REGS_X86_64, 0), 0x11111111, "rax as 32-bit code has it");
    cr_assert_eq(val(REGS_X86_64, 16), 0x81000000, "rip");
    unsigned changed = 0;
    uint8_t b[8] = { 0x78, 0x56, 0x34, 0x12, 0xff, 0xff, 0xff, 0xff };
    cr_assert_eq(regs_write(REGS_X86_64, &s, 2, b, 8, &changed), 0);
    cr_assert_eq(s.regs.rcx, 0x3333333312345678ull, "only the low half is written");
    s.sregs.cs.l = 1;
    cr_assert_eq(val(REGS_X86_64, 0), 0x1111111111111111ull, "64-bit code: all of it");
}
