/* SPDX-License-Identifier: MIT */
/* kvm_pvm and nested events: which instructions the monitor delivers for, in software. */
#include <criterion/criterion.h>
#include <string.h>

#include "../x86/machine.h"
#include "trace/nested.h"

TestSuite(nested, .init = machine_setup, .fini = machine_teardown);

Test(nested, an_instruction_that_raises_nothing)
{
    static const uint8_t nop[] = { 0x90 };
    code(nop, sizeof(nop));
    struct delivery d;
    cr_assert_not(nested_due(&view, regs.rip, &d));
}

/* A #DE whose gate is fine is kvm_pvm's to deliver. */
Test(nested, a_fault_delivered_without_a_fault)
{
    gate64(0, 0x30000, 0x08, 0xe, 0, 0);
    static const uint8_t div[] = { 0xf7, 0xf1 };       /* div ecx, ecx = 0 */
    code(div, sizeof(div));
    struct delivery d;
    cr_assert_not(nested_due(&view, regs.rip, &d));
    PTE(0x4f000, 0);                                    /* its frame's page goes */
    cr_assert(nested_due(&view, regs.rip, &d));
    cr_assert_eq(d.vector, 0);
}

/* INT n from 32 up: its own gate is read (once, its vector ANDed with 31 read #DF's). */
Test(nested, int_n_above_31)
{
    gate64(0x80, 0x30000, 0x08, 0xe, 0, 0);
    static const uint8_t intn[] = { 0xcd, 0x80 };
    code(intn, sizeof(intn));
    struct delivery d;
    cr_assert_not(nested_due(&view, regs.rip, &d));
    gate64(0x80, 0x30000, 0x10, 0xe, 0, 0);            /* a data segment */
    cr_assert(nested_due(&view, regs.rip, &d));
    cr_assert_eq(d.vector, 0x80);
    cr_assert_eq(d.kind, DELIVER_SOFT);
}
